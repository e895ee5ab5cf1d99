package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeChecksHostOnLoopback checks serve's wiring of the Host check
// (web/hosts.go): on its default loopback --addr a page's rebound name is
// answered 421 naming --behind-proxy, while 127.0.0.1 and localhost are
// served; with --behind-proxy the proxy's name is served.
func TestServeChecksHostOnLoopback(t *testing.T) {
	get := func(base, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	base, _, _ := startServe(t, "--data", t.TempDir(), "--no-debuginfod")
	port := base[strings.LastIndex(base, ":"):]
	if code, text := get(base, "evil.example"+port); code != http.StatusMisdirectedRequest || !strings.Contains(text, "--behind-proxy") {
		t.Errorf("serve on loopback, Host evil.example: %d %.200s; want 421 naming --behind-proxy", code, text)
	}
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port} {
		if code, _ := get(base, host); code != http.StatusOK {
			t.Errorf("serve on loopback, Host %s: %d, want 200", host, code)
		}
	}
	proxied, _, _ := startServe(t, "--data", t.TempDir(), "--no-debuginfod", "--behind-proxy")
	if code, text := get(proxied, "viewer.example.com"); code != http.StatusOK {
		t.Errorf("serve --behind-proxy, Host viewer.example.com: %d %.200s; want 200", code, text)
	}
}
