package web_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/profiles"
	"viewer/web/store"
	"viewer/web/webtest"
)

// conditionalGet fetches url with If-None-Match etag (none when empty).
func conditionalGet(t *testing.T, url, etag string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), b.String()
}

// TestSymbolizedRewriteChangesETag: each write of a symbolized copy (a
// first pass, then a second one that names more) gives flame.json, the
// sandwich and the top page new content under a new ETag, on the replica
// that wrote it and on one that only shares the store; a browser
// revalidating with the ETag of the previous pass gets the new body, not a
// 304.
func TestSymbolizedRewriteChangesETag(t *testing.T) {
	dir := t.TempDir()
	open := func() store.Store {
		st, err := store.NewDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	writer, a := replicaServer(t, open(), nil, "a")
	_, b := replicaServer(t, open(), nil, "b", func(c *web.ReplicaConfig) { c.Recheck = 50 * time.Millisecond })
	id := webtest.UploadAPI(t, a, "", namedProfile(t, "0x401234"))

	urls := func(base string) []string {
		return []string{base + "/p/" + id + "/flame.json", base + "/p/" + id + "/sandwich.json?fn=main.main"}
	}
	etags := map[string]string{}
	for _, base := range []string{a, b} {
		for _, u := range urls(base) {
			code, etag, body := conditionalGet(t, u, "")
			if code != 200 || etag == "" || !strings.Contains(body, "0x401234") {
				t.Fatalf("%s before symbolization: %d, ETag %q, %.200s", u, code, etag, body)
			}
			etags[u] = etag
		}
	}
	for pass, name := range []string{"main.firstPass", "main.secondPass"} {
		// What the symbolization job does: write the copy, then invalidate
		// this replica's caches (ondemand.Manager.OnStored).
		if err := writer.Store().Put(context.Background(), id+"/"+profiles.KeySymbolized, bytes.NewReader(namedProfile(t, name))); err != nil {
			t.Fatal(err)
		}
		writer.Invalidate(id)
		for _, base := range []string{a, b} {
			for _, u := range urls(base) {
				old := etags[u]
				var code int
				var etag, body string
				poll.Wait(5*time.Second, func() bool {
					code, etag, body = conditionalGet(t, u, old)
					return code == 200 && strings.Contains(body, name)
				})
				if code != 200 || !strings.Contains(body, name) {
					t.Fatalf("pass %d: %s revalidated with the previous ETag %s: %d %.200s; want 200 with %s", pass+1, u, old, code, body, name)
				}
				if etag == old || etag == "" {
					t.Errorf("pass %d: %s has ETag %q, the same as before the write", pass+1, u, etag)
				}
				if code, _, _ := conditionalGet(t, u, etag); code != http.StatusNotModified {
					t.Errorf("pass %d: %s revalidated with its current ETag: %d, want 304", pass+1, u, code)
				}
				etags[u] = etag
			}
		}
	}
}
