package webtest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"viewer/web"
)

// LoopbackServer is an unstarted test server for h that listens on
// 127.0.0.1 only (never on [::1] or another address).
func LoopbackServer(tb testing.TB, h http.Handler) *httptest.Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Listener.Close()
	ts.Listener = ln
	return ts
}

// StartServer serves a fresh viewer on 127.0.0.1, as serve does by
// default: requests must name this machine in their Host.
func StartServer(t *testing.T) string {
	t.Helper()
	return StartServerWith(t, web.Config{Addr: "127.0.0.1:0"})
}

// StartServerWith serves a viewer configured by cfg (in a fresh data
// directory when cfg has none) on 127.0.0.1, until the test's end, and
// returns its URL.
func StartServerWith(t *testing.T, cfg web.Config) string {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	s, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}
