package web

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"viewer/web/profiles"
)

// routeURL is a request path for route path (echo's pattern), its
// parameters filled with id and plausible values.
func routeURL(path, id string) string {
	r := strings.NewReplacer(":id", id, ":base", id, ":key", "0123456789abcdef0123456789abcdef",
		":kind", "debuginfo", ":name", ".text", ":service", "svc", "*", "main.c")
	return r.Replace(path)
}

// TestForeignHostRefusedOnEveryRoute is DNS rebinding against a server on
// loopback: a page on evil.example whose name now resolves to 127.0.0.1
// sends Host evil.example:PORT and a matching Origin. Every route of the
// route table answers it 421 naming --behind-proxy, before any handler
// runs (no upload is stored, nothing is read), while the same routes
// under localhost, 127.0.0.1 and [::1] are served as before; a server
// listening beyond loopback, or behind a proxy, keeps answering any Host.
func TestForeignHostRefusedOnEveryRoute(t *testing.T) {
	s, ts := newTestServer(t, Config{Addr: "127.0.0.1:0", OTLP: true})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	// What a foreign Host uploads: a profile of its own, by its ID; the
	// local ones send the one stored already.
	rebound, local := encodeProfile(t, hostileProfile(), true), encodeProfile(t, testProfile(), true)
	send := func(method, path, host string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost || method == http.MethodPut {
			body = bytes.NewReader(local)
			if strings.HasPrefix(host, "evil.") {
				body = bytes.NewReader(rebound)
			}
		}
		req, _ := http.NewRequest(method, ts.URL+path, body)
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			return resp.StatusCode, "" // event streams do not end: status only
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	routes := s.Echo().Routes()
	if len(routes) < 40 {
		t.Fatalf("only %d routes in the table", len(routes))
	}
	for _, r := range routes {
		path := routeURL(r.Path, id)
		code, text := send(r.Method, path, "evil.example:"+port)
		if code != http.StatusMisdirectedRequest || (r.Method != http.MethodHead && (!strings.Contains(text, "DNS rebinding") || !strings.Contains(text, "--behind-proxy"))) {
			t.Errorf("%s %s with Host evil.example: %d, want 421 naming DNS rebinding and --behind-proxy: %.300s", r.Method, path, code, text)
		}
		if _, err := s.prof.Meta(context.Background(), profiles.NewID(rebound)); err == nil {
			t.Fatalf("%s %s with Host evil.example stored a profile", r.Method, path)
		}
		for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "127.0.0.9:" + port, "[::1]:" + port} {
			if code, text := send(r.Method, path, host); code == http.StatusMisdirectedRequest {
				t.Errorf("%s %s with Host %s: 421: %.300s", r.Method, path, host, text)
			}
		}
	}

	for _, cfg := range []Config{{Addr: "0.0.0.0:0"}, {Addr: "127.0.0.1:0", BehindProxy: true}} {
		_, other := newTestServer(t, cfg)
		req, _ := http.NewRequest(http.MethodGet, other.URL+"/", nil)
		req.Host = "viewer.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("--addr %s, behind proxy %v: Host viewer.example.com answered %d, want 200", cfg.Addr, cfg.BehindProxy, resp.StatusCode)
		}
	}
}
