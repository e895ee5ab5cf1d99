package web

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"viewer/web/profiles"
)

// TestUploadParsedOnceAcrossRestart: a perf script upload is parsed at
// upload only. A restarted server, with the original bytes destroyed,
// serves every page of it as before, from the converted copy, and parses
// nothing.
func TestUploadParsedOnceAcrossRestart(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "perf", "fp.script"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, ts := newTestServer(t, Config{DataDir: dir})
	id := upload(t, ts.URL, data)
	if n := s.Profiles().Conversions(); n != 1 {
		t.Errorf("the upload was parsed %d times, want 1", n)
	}
	paths := []string{"/p/" + id, "/p/" + id + "/flame.json", "/p/" + id + "/top", "/p/" + id + "/top.json", "/p/" + id + "/profile.pb.gz"}
	before := map[string][]byte{}
	for _, p := range paths {
		r := get(t, ts.URL+p)
		if r.status != 200 {
			t.Fatalf("%s: status %d", p, r.status)
		}
		before[p] = r.body
	}
	ts.Close()
	if err := os.WriteFile(filepath.Join(dir, id, profiles.KeyOriginal), []byte("destroyed"), 0o644); err != nil {
		t.Fatal(err)
	}

	s2, ts2 := newTestServer(t, Config{DataDir: dir})
	for _, p := range paths {
		r := get(t, ts2.URL+p)
		if r.status != 200 || !bytes.Equal(r.body, before[p]) {
			t.Errorf("after restart without the original, %s: status %d, body changed: %v", p, r.status, !bytes.Equal(r.body, before[p]))
		}
	}
	if n := s2.Profiles().Conversions(); n != 0 {
		t.Errorf("after the restart the original was parsed %d times, want 0", n)
	}
}
