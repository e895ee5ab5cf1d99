package web_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/store"
	"viewer/web/webtest"
)

// rawPut sends a PUT's headers, announcing length bytes, and the first
// bytes of its body, then sends nothing more and reads the answer: the
// client a slow or stalled upload is. The answer must come within wait.
func rawPut(t testing.TB, base, path string, length int64, first string, wait time.Duration) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n\r\n%s",
		path, strings.TrimPrefix(base, "http://"), length, first)
	conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("PUT %s: no answer within %v while the body waits: %v", path, wait, err)
	}
	var b strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&b)
	resp.Body.Close()
	return resp, b.String()
}

// TestDebugUploadEdgeCases is issue 37's fifth point for debug-file PUTs:
// a Content-Length over --max-debug-file is answered 413 while the client
// is still sending (the server does not first read part of the body at the
// client's pace, which took the 10 s rate window), and a body that stalls
// is 408 saying so, not 500.
func TestDebugUploadEdgeCases(t *testing.T) {
	_, _, bid := webtest.PrivFiles(t)
	start := func(lim web.Limits) string {
		st, err := store.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		files := debuginfo.New(debuginfo.Config{Store: st, MaxFile: 64 << 10, TempDir: t.TempDir()})
		s, err := web.New(web.Config{Store: st, Debuginfo: &web.DebuginfoConfig{Files: files, Serve: "open"}, Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		ts := webtest.LoopbackServer(t, s.Handler())
		ts.Start()
		t.Cleanup(func() { ts.Close(); s.CloseSymbolization() })
		return ts.URL
	}

	// Default limits; half the rate window: the answer must not wait for it.
	resp, body := rawPut(t, start(web.Limits{}), "/buildid/"+bid+"/debuginfo", 128<<10, "\x7fELF", web.DefaultUploadRateWindow/2)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "--max-debug-file") {
		t.Errorf("oversized Content-Length: %s %q, want 413 naming --max-debug-file", resp.Status, body)
	}
	// Idle 1 s: the stall is answered well within the rate window.
	resp, body = rawPut(t, start(web.Limits{UploadIdle: time.Second}), "/buildid/"+bid+"/debuginfo", 60<<10, "\x7fELF\x02\x01\x01", web.DefaultUploadRateWindow/2)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, "no upload bytes arrived") {
		t.Errorf("stalled body: %s %q, want 408 saying no bytes arrived", resp.Status, body)
	}
	if strings.Contains(body, "127.0.0.1") || strings.Contains(body, "read tcp") {
		t.Errorf("the 408 shows connection details: %q", body)
	}
}
