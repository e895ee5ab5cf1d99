package web_test

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"viewer/web/heappeak"
	"viewer/web/webtest"
)

// TestSourceArchiveIndexBounded: an archive of empty files with 1 MiB
// names, or with very many long ones, is refused with the limit it broke,
// within a small heap, and the build ID's uploaded sources are served as
// before; a good archive is still accepted after.
func TestSourceArchiveIndexBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds archives of the limits' sizes: make test runs it")
	}
	_, debugFile, bid := webtest.PrivFiles(t)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{})
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, ""); code != 201 {
		t.Fatalf("upload: %d %s", code, body)
	}
	if code, body := put(t, ds.URL+"/buildid/"+bid+"/sources?name=good.tar.gz", bytes.NewReader(sourceTarball(t, nil)), ""); code != 201 {
		t.Fatalf("good sources: %d %s", code, body)
	}
	served := func(when string) {
		t.Helper()
		resp, err := http.Get(ds.URL + "/buildid/" + bid + "/source" + privSource)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(got, mustRead(t, filepath.Join(webtest.PrivDir(), "prog.c"))) {
			t.Errorf("%s: the uploaded source is answered %s, %d bytes", when, resp.Status, len(got))
		}
	}
	for _, tc := range []struct {
		name       string
		tarball    []byte
		wantReason string
	}{
		// 80 names of 1 MiB: an 80 MB index (over the 64 MiB a read took).
		{"1 MiB names", longNamesTarball(t, 80, 1<<20-1024), "over the 4096 bytes a path may have"},
		// 9,000 names of 4,000 bytes: within PATH_MAX, a 36 MB index.
		{"many long names", longNamesTarball(t, 9000, 4000), "source index would be over"},
	} {
		stop := heappeak.Watch()
		code, body := put(t, ds.URL+"/buildid/"+bid+"/sources?name=attack.tar.gz", bytes.NewReader(tc.tarball), "")
		peak := stop()
		t.Logf("%s: %d-byte tarball: %d, heap peak %.1f MiB", tc.name, len(tc.tarball), code, float64(peak)/(1<<20))
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, tc.wantReason) {
			t.Errorf("%s: %d %q, want 422 saying %q", tc.name, code, body, tc.wantReason)
		}
		if peak > 80<<20 { // the index is bounded at 32 MiB; its map and JSON take about twice that
			t.Errorf("%s: heap peak %d MiB, want under 80 MiB", tc.name, peak>>20)
		}
		served("after " + tc.name)
	}
	extra := map[string]string{"viewer-testdata/debuginfo/extra.h": "#define EXTRA 1\n"}
	if code, body := put(t, ds.URL+"/buildid/"+bid+"/sources?name=good2.tar.gz", bytes.NewReader(sourceTarball(t, extra)), ""); code != 201 {
		t.Errorf("a good archive after the attacks: %d %s", code, body)
	}
	served("after a good archive")
}
