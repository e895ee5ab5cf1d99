package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestSymbolicateCORS is what a browser does before and when the Firefox
// Profiler's page calls /symbolicate/v5 with JSON: the preflight
// (OPTIONS with Origin, Access-Control-Request-Method and -Headers) is
// answered for https://profiler.firefox.com only, and so is the POST's
// answer; other origins and other routes get no CORS headers.
func TestSymbolicateCORS(t *testing.T) {
	_, base := symbolizingServer(t, nil, 1)
	const profiler = "https://profiler.firefox.com"
	do := func(method, path, origin string) *http.Response {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"memoryMap": [], "stacks": []}`)
		} else {
			body = strings.NewReader("")
		}
		req, _ := http.NewRequest(method, base+path, body)
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Mode", "cors")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "content-type")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	pre := do(http.MethodOptions, "/symbolicate/v5", profiler)
	h := pre.Header
	if pre.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != profiler ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "content-type") || h.Get("Access-Control-Max-Age") == "" {
		t.Errorf("preflight from the profiler: %s %v", pre.Status, h)
	}
	post := do(http.MethodPost, "/symbolicate/v5", profiler)
	if post.StatusCode != 200 || post.Header.Get("Access-Control-Allow-Origin") != profiler || !strings.Contains(strings.Join(post.Header.Values("Vary"), ","), "Origin") {
		t.Errorf("POST from the profiler: %s %v", post.Status, post.Header)
	}
	for _, tc := range []struct{ method, path, origin string }{
		{http.MethodOptions, "/symbolicate/v5", "https://evil.example"},
		{http.MethodPost, "/symbolicate/v5", "https://evil.example"},
		{http.MethodOptions, "/api/profiles", profiler},
		{http.MethodOptions, "/api/symbolize", profiler},
	} {
		if r := do(tc.method, tc.path, tc.origin); r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s from %s: Access-Control-Allow-Origin %q", tc.method, tc.path, tc.origin, r.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}
