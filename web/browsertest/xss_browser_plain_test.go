package browsertest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// Names a hostile profile carries; each would run script if a page put it
// into markup unescaped.
const (
	xssFunc    = `<script>alert(1)</script>`
	xssImg     = `<img src=x onerror="window.__xss='img'">`
	xssSVG     = `<svg onload="window.__xss='svg'">`
	xssMapping = `/lib/"><script>window.__xss='map'</script>.so`
	// xssUploadName is the upload's file name, shown in the page title.
	xssUploadName = `<img src=x onerror=alert(2)>.pb.gz`
)

func xssProfile(t *testing.T) []byte {
	t.Helper()
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: xssMapping, HasFunctions: true}
	var fns []*profile.Function
	var locs []*profile.Location
	for i, name := range []string{"main.main", xssFunc, xssImg, xssSVG} {
		f := &profile.Function{ID: uint64(i + 1), Name: name, Filename: name + ".go"}
		fns = append(fns, f)
		locs = append(locs, &profile.Location{ID: uint64(i + 1), Mapping: m, Address: 0x401000 + uint64(i)*16, Line: []profile.Line{{Function: f, Line: 3}}})
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{locs[1], locs[0]}, Value: []int64{60e6}, Label: map[string][]string{"thread": {xssImg}}},
			{Location: []*profile.Location{locs[2], locs[0]}, Value: []int64{30e6}},
			{Location: []*profile.Location{locs[3], locs[0]}, Value: []int64{10e6}},
		},
		Mapping: []*profile.Mapping{m}, Location: locs, Function: fns,
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBrowserHostileNamesStayText uploads a profile whose function and file
// names are markup and opens its pages in headless chromium: no dialog opens,
// no injected script or handler runs, nothing breaks the Content-Security-
// Policy, and the names show as text (in the flame graph's tooltip and the
// top table).
func TestBrowserHostileNamesStayText(t *testing.T) {
	base := webtest.StartServer(t)
	resp, err := http.Post(base+"/api/profiles?name="+url.QueryEscape(xssUploadName), "application/octet-stream", bytes.NewReader(xssProfile(t)))
	if err != nil {
		t.Fatal(err)
	}
	var up struct{ ID, URL string }
	json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	b := browsertest.Start(t, browsertest.Options{})
	var mu sync.Mutex
	var dialogs []string
	if err := chromedp.Listen(b.Ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			mu.Lock()
			dialogs = append(dialogs, fmt.Sprintf("%s: %q", d.Type, d.Message))
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	checkInert := func(where string) {
		t.Helper()
		time.Sleep(200 * time.Millisecond) // let any onerror/onload fire
		mu.Lock()
		d := append([]string(nil), dialogs...)
		mu.Unlock()
		if len(d) > 0 {
			t.Fatalf("%s: a dialog opened: %v", where, d)
		}
		if v := eval[string](t, b, `String(window.__xss ?? "")`); v != "" {
			t.Errorf("%s: injected code ran (window.__xss = %q)", where, v)
		}
		if n := eval[int](t, b, `[...document.scripts].filter(s => s.type !== 'application/json' && !s.src).length`); n != 0 {
			t.Errorf("%s: %d inline scripts in the document", where, n)
		}
		if n := eval[int](t, b, `document.querySelectorAll('img[src="x"], svg[onload], [onerror], [onload]').length`); n != 0 {
			t.Errorf("%s: %d injected elements", where, n)
		}
		// Script errors and CSP violations fail; other problems (a failed
		// fetch of an optional resource) are not this test's concern.
		for _, p := range b.Problems() {
			if strings.HasPrefix(p, "exception") || strings.Contains(p, "Content Security Policy") || strings.Contains(p, "Refused to") {
				t.Errorf("%s: page problem: %s", where, p)
			} else {
				t.Logf("%s: page problem (ignored here): %s", where, p)
			}
		}
	}

	run(t, b, "open the flame graph", chromedp.Navigate(base+up.URL))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("flame graph never drew: %v; problems %q", err, b.Problems())
	}
	checkInert("flame graph")
	r := frame(t, b, "main.main", xssFunc)
	run(t, b, "hover the hostile frame", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "the tooltip", `!document.getElementById('tooltip').hidden`)
	if tip := text(t, b, "#tooltip"); !strings.Contains(tip, xssFunc) || !strings.Contains(tip, xssMapping) {
		t.Errorf("tooltip %q does not show the name and binary as text", tip)
	}
	if title := eval[string](t, b, `document.title`); !strings.Contains(title, xssUploadName) {
		t.Errorf("title %q does not show the upload's name as text", title)
	}
	checkInert("flame graph tooltip")

	run(t, b, "open the top table", chromedp.Navigate(base+up.URL+"/top"))
	checkInert("top table")
	for _, name := range []string{xssFunc, xssImg, xssSVG} {
		if !eval[bool](t, b, fmt.Sprintf(`[...document.querySelectorAll('td')].some(td => td.textContent.includes(%q))`, name)) {
			t.Errorf("top table does not show %q as text", name)
		}
	}

	run(t, b, "open the types page", chromedp.Navigate(base+up.URL+"/types"))
	checkInert("types page")

	run(t, b, "open flame.svg", chromedp.Navigate(base+up.URL+"/flame.svg"))
	checkInert("flame.svg")
	if !eval[bool](t, b, fmt.Sprintf(`[...document.querySelectorAll('title, text')].some(e => e.textContent.includes(%q))`, xssFunc)) {
		t.Errorf("flame.svg does not show %q as text", xssFunc)
	}
}
