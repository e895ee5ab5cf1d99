package web_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
	"viewer/web/webtest"
)

// normalizingUpstream is a debuginfod upstream behind a proxy that
// normalizes paths as some do (decodes repeatedly, reads "\" as "/",
// resolves ".."): /admin/keys answers a secret. A real debuginfod cannot be
// made to do this, hence the fake. It records every request URI it gets.
type normalizingUpstream struct {
	mu   sync.Mutex
	uris []string
}

const adminSecret = "ADMIN-KEYS-SECRET-9e2b"

func (u *normalizingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.uris = append(u.uris, r.RequestURI)
	u.mu.Unlock()
	p := r.RequestURI
	for i := 0; i < 3; i++ {
		if d, err := url.PathUnescape(p); err == nil {
			p = d
		}
	}
	p = path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if p == "/admin/keys" {
		io.WriteString(w, adminSecret)
		return
	}
	http.NotFound(w, r)
}

// rawGet sends target as the request line's URI byte for byte (Go's client
// would re-encode it) and returns the status line and body.
func rawGet(t *testing.T, base, target string) (string, string) {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, u.Host)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status, string(b)
}

// TestFederatedSourcePathStaysClean: /buildid/ID/source/ with "..", its
// encodings, backslashes and double encoding is cleaned or refused before
// it reaches the upstream: the upstream is only ever asked for
// /buildid/ID/source/CLEAN/PATH, viewer never serves the upstream's
// /admin/keys, and its cache holds nothing but clean source entries.
func TestFederatedSourcePathStaysClean(t *testing.T) {
	up := &normalizingUpstream{}
	ts := httptest.NewServer(up)
	defer ts.Close()
	cacheDir := t.TempDir()
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{ts.URL}, CacheDir: cacheDir, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Upstream: client})
	bid := strings.Repeat("ab", 20)
	for _, attack := range []string{
		"../../../admin/keys",
		"..%2f..%2f..%2fadmin%2fkeys",
		"%2e%2e/%2e%2e/%2e%2e/admin/keys",
		"%2E%2E%2F%2E%2E%2F%2E%2E%2Fadmin%2Fkeys",
		"..\\..\\..\\admin\\keys",
		"..%5c..%5c..%5cadmin%5ckeys",
		"%252e%252e/%252e%252e/%252e%252e/admin/keys",
		"..%252f..%252f..%252fadmin%252fkeys",
		"usr/src/./../../../admin/keys",
		"usr//src/../../../../admin/keys",
	} {
		status, body := rawGet(t, ds.URL, "/buildid/"+bid+"/source/"+attack)
		if strings.Contains(body, adminSecret) {
			t.Errorf("%s: viewer served the upstream's /admin/keys (%s)", attack, status)
		}
		if !strings.HasPrefix(status, "404") && !strings.HasPrefix(status, "400") {
			t.Errorf("%s: %s, want 404 (cleaned, not found) or 400 (refused)", attack, status)
		}
	}
	up.mu.Lock()
	uris := append([]string(nil), up.uris...)
	up.mu.Unlock()
	if len(uris) == 0 {
		t.Fatalf("no request reached the upstream: the test no longer exercises federation")
	}
	prefix := "/buildid/" + bid + "/source/"
	for _, u := range uris {
		rest, ok := strings.CutPrefix(u, prefix)
		dec, err := url.PathUnescape(rest)
		if !ok || err != nil || path.Clean("/"+dec) != "/"+dec || strings.ContainsAny(dec, "\\%") {
			t.Errorf("the upstream was asked for %q: not %sCLEAN/PATH", u, prefix)
		}
	}
	filepath.Walk(cacheDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, "admin") && strings.Contains(p, "..") {
			t.Errorf("the cache holds %s", p)
		}
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), adminSecret) {
				t.Errorf("the cache holds the upstream's /admin/keys in %s", p)
			}
		}
		return nil
	})
	t.Logf("the upstream was asked: %q", uris)
}
