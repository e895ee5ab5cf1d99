package web_test

import (
	"net/http"
	"strings"
	"testing"

	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/store"
	"viewer/web/webtest"
)

// TestListingsNeedToken is issue 37's fourth point: with --auth-token the
// pages that list profile links, /services and /debuginfo, answer 401
// without it and name no profile; with it they list them. A profile's own
// link stays open.
func TestListingsNeedToken(t *testing.T) {
	dir := t.TempDir()
	// An OTLP profile of service "checkout", sent before the token was set.
	s, err := web.New(web.Config{DataDir: dir, OTLP: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	id := webtest.SendService(t, ts.URL, "checkout", 200, 3)
	ts.Close()
	s.CloseSymbolization()

	st, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := debuginfo.New(debuginfo.Config{Store: st, TempDir: t.TempDir()})
	s, err = web.New(web.Config{Store: st, OTLP: true, AuthToken: "s3cret",
		Debuginfo: &web.DebuginfoConfig{Files: files, Serve: "open"}})
	if err != nil {
		t.Fatal(err)
	}
	ts = webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(func() { ts.Close(); s.CloseSymbolization() })
	_, debugFile, bid := webtest.PrivFiles(t)
	if code, body := putFile(t, ts.URL, bid, "debuginfo", debugFile, "s3cret"); code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, body)
	}
	for _, path := range []string{"/services", "/debuginfo", "/debuginfo?q=" + bid, "/api/recent"} {
		code, body := webtest.GetToken(t, ts.URL+path, "")
		if code != http.StatusUnauthorized || strings.Contains(body, id) || strings.Contains(body, bid) {
			t.Errorf("%s without the token: %d, want 401 naming no profile or build ID", path, code)
		}
		if code, _ := webtest.GetToken(t, ts.URL+path, "s3cret"); code != http.StatusOK {
			t.Errorf("%s with the token: %d", path, code)
		}
	}
	if _, body := webtest.GetToken(t, ts.URL+"/services", "s3cret"); !strings.Contains(body, "checkout") {
		t.Errorf("/services with the token does not list checkout")
	}
	if code, _ := webtest.GetToken(t, ts.URL+"/p/"+id, ""); code != http.StatusOK {
		t.Errorf("the profile's own link without the token: %d", code)
	}
}
