package browsertest_test

import (
	"strings"
	"testing"

	"viewer/web"
	"viewer/web/manual"
	"viewer/web/webtest"
)

// TestBrowserDocs opens every page of the manual in chromium at 1440×900
// and on a 390×844 phone: no Content-Security-Policy violation or script
// error (the markdown is rendered without inline style), no sideways
// scroll of the page (its wide tables and code scroll in their own box),
// and no text under WCAG AA contrast (contrastJS).
func TestBrowserDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	m, err := manual.Load()
	if err != nil {
		t.Fatal(err)
	}
	b := startStrict(t)
	for _, vp := range []struct {
		w, h   int64
		mobile bool
	}{{1440, 900, false}, {390, 844, true}} {
		emulate(t, b, vp.w, vp.h, vp.mobile)
		for _, p := range m.Pages {
			name := p.URL()
			if vp.mobile {
				name += " at 390 px"
			}
			openTour(t, b, ts.URL, tourPage{name, p.URL(), `document.readyState === 'complete' && document.getElementById('docs-body') !== null`})
			if o := eval[over](t, b.Browser, overflowJS); o.Scroll > o.Width+1 {
				t.Errorf("%s: the page is %v px wide (viewport %v): %s", name, o.Scroll, o.Width, strings.Join(o.Wide, "; "))
			}
			for _, bad := range eval[[]string](t, b.Browser, contrastJS) {
				t.Errorf("%s: %s", name, bad)
			}
			b.check(t, name)
		}
	}
}
