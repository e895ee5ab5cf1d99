package browsertest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/debuginfo"
	"viewer/web/ondemand"
	"viewer/web/store"
	"viewer/web/webtest"
)

// topHeaderJS measures the /top table's sticky header against its scroll
// container (the nearest ancestor that scrolls, or the viewport) and the
// rows: which rows it hides (a row below the header's height from the
// container's top whose middle point hits the header rather than the row).
const topHeaderJS = `(() => {
	const th = document.querySelector('#top thead th');
	let box = th.parentElement;
	for (; box && box !== document.body; box = box.parentElement) {
		const cs = getComputedStyle(box);
		if (/(auto|scroll|hidden)/.test(cs.overflowY + cs.overflowX)) break;
	}
	const view = box && box !== document.body ? box.getBoundingClientRect() : { top: 0, bottom: innerHeight };
	const h = th.getBoundingClientRect();
	const covered = [];
	const rows = [...document.querySelectorAll('#top tbody tr')].filter((r) => !r.hidden);
	rows.forEach((r, i) => {
		const b = r.getBoundingClientRect();
		const y = (b.top + b.bottom) / 2;
		if (b.top < Math.max(view.top, 0) + h.height - 0.5 || y > Math.min(view.bottom, innerHeight) || y < 0) return;
		const hit = document.elementFromPoint(b.left + b.width / 2, y);
		if (!hit || !r.contains(hit)) covered.push(i + 1);
	});
	return { headTop: h.top, headBottom: h.bottom, boxTop: Math.max(view.top, 0), covered, firstRowTop: rows[0].getBoundingClientRect().top, scrolls: box !== document.body && box.scrollHeight > box.clientHeight + 1 };
})()`

type topHeader struct {
	HeadTop     float64 `json:"headTop"`
	HeadBottom  float64 `json:"headBottom"`
	BoxTop      float64 `json:"boxTop"`
	Covered     []int   `json:"covered"`
	FirstRowTop float64 `json:"firstRowTop"`
	Scrolls     bool    `json:"scrolls"`
}

// TestBrowserTopStickyHeader opens /p/ID/top at 1440×900 (issue 34: the
// header sat 96 px below the top of its scroll box, over rows 3–4): the
// header is at the top of its scroll container and hides no row, before
// and after the table is scrolled.
func TestBrowserTopStickyHeader(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "wide.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 3)...))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	run(t, b, "open the top page", chromedp.Navigate(base+"/p/"+id+"/top"))
	waitForJS(t, b, "the top table", `document.body.dataset.ready === '1' && document.querySelectorAll('#top tbody tr').length > 50`)
	time.Sleep(100 * time.Millisecond)
	check := func(when string) topHeader {
		t.Helper()
		h := eval[topHeader](t, b, topHeaderJS)
		if d := h.HeadTop - h.BoxTop; d > 1 || d < -1 {
			t.Errorf("%s: the header's top is at y=%.0f, %.0f px below the top of its scroll box (y=%.0f)", when, h.HeadTop, d, h.BoxTop)
		}
		if len(h.Covered) > 0 {
			t.Errorf("%s: the header (y=%.0f–%.0f) hides rows %v", when, h.HeadTop, h.HeadBottom, h.Covered)
		}
		return h
	}
	h := check("before scrolling")
	if h.FirstRowTop < h.HeadBottom-1 {
		t.Errorf("before scrolling the first row (y=%.0f) starts under the header (bottom y=%.0f)", h.FirstRowTop, h.HeadBottom)
	}
	// Scroll as a user would: the wheel over the table, 600 px.
	run(t, b, "scroll the table", chromedp.Evaluate[chromedp.Void](`(() => {
		const r = document.querySelector('#top tbody tr:nth-child(8)').getBoundingClientRect();
		window.__wheelAt = [r.left + 200, r.top];
	})()`))
	at := eval[[]float64](t, b, `window.__wheelAt`)
	run(t, b, "wheel", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, at[0], at[1], func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 1e-9, 600 }))
	time.Sleep(400 * time.Millisecond)
	after := check("after scrolling 600 px")
	if after.FirstRowTop >= h.FirstRowTop-100 {
		t.Errorf("the wheel did not scroll the table: first row at y=%.0f, was %.0f", after.FirstRowTop, h.FirstRowTop)
	}
	b.Screenshot(t, "top-sticky-header")
	noProblems(t, b)
}

// pageOverflowJS is how far the page scrolls sideways past the viewport,
// and the widest elements that do not sit inside a box of their own that
// scrolls or clips them.
const pageOverflowJS = `(() => {
	const vw = document.documentElement.clientWidth;
	const wide = [];
	for (const el of document.querySelectorAll('body *')) {
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.right <= vw + 1) continue;
		let p = el.parentElement, clipped = false;
		for (; p && p !== document.body; p = p.parentElement) {
			const ox = getComputedStyle(p).overflowX;
			if (ox === 'auto' || ox === 'scroll' || ox === 'hidden') { clipped = true; break; }
		}
		if (!clipped) wide.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : '') + ' right=' + Math.round(r.right));
	}
	return { over: document.documentElement.scrollWidth - vw, wide: wide.slice(0, 8) };
})()`

type pageOverflow struct {
	Over float64  `json:"over"`
	Wide []string `json:"wide"`
}

// TestBrowserSourcePhoneWidth opens a source page with real lines, one of
// them 200 characters long, at 390×844 as a phone (issue 34: it
// overflowed by 34 px): the page does not scroll sideways; the long line
// scrolls inside its own box, and is there whole.
func TestBrowserSourcePhoneWidth(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "hello.c")
	long := "\treturn s + " + strings.Repeat("compute_helper_value(n) + ", 7) + "0; /* long */"
	code := strings.Replace(webtest.HelloC, "\treturn s;", long, 1)
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServerWith(t, web.Config{Source: &web.SourceConfig{Dirs: []string{dir}}})
	id := webtest.PostProfile(t, base, "p.pb.gz", webtest.SourceProfile(t, "", src))
	sb := startStrict(t)
	emulate(t, sb, 390, 844, true)
	b := sb.Browser
	run(t, b, "open the source page", chromedp.Navigate(base+"/p/"+id+"/source?fn=compute"))
	waitForJS(t, b, "the source lines", `document.readyState === 'complete' && document.querySelectorAll('[data-line]').length >= 5`)
	time.Sleep(200 * time.Millisecond)
	o := eval[pageOverflow](t, b, pageOverflowJS)
	if o.Over > 0 {
		t.Errorf("source page at 390 px scrolls sideways by %.0f px: %s", o.Over, strings.Join(o.Wide, "; "))
	}
	if !strings.Contains(eval[string](t, b, `document.body.innerText`), "/* long */") {
		t.Errorf("the long line's end is not on the page")
	}
	b.Screenshot(t, "source-390")
	sb.check(t, "source at 390 px")
}

// benchWithUnnamedLibs is the 200k-sample benchmark profile (a quarter of
// it under the race detector, as exactProfile) with the locations of its
// first n libraries left without names, as a perf.data of a program whose
// libraries have no debug info on the server: their rows stay in the
// symbolization panel as "no symbols" after the job.
func benchWithUnnamedLibs(t *testing.T, n int) []byte {
	t.Helper()
	_, data := exactProfile(t)
	p, err := profile.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Mapping[1 : 1+n] {
		m.HasFunctions, m.HasFilenames, m.HasLineNumbers = false, false, false
	}
	for _, l := range p.Location {
		if l.Mapping != nil && !l.Mapping.HasFunctions {
			l.Line = nil
		}
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// graphBoxJS is the flame graph's drawn canvas in the window.
const graphBoxJS = `(r => ({x: r.left, y: r.top, width: r.width, height: r.height}))(document.getElementById('flame').getBoundingClientRect())`

// TestBrowserFlameSymbolizationFolds opens the 200k-sample profile whose
// libraries the server cannot symbolize at 1440×900 (issue 34: the
// panel stayed open with its rows once the job had ended, and the graph
// started at y≈600): once the job ends the panel folds to its summary
// line, which says how many binaries are left without symbols, and the
// graph starts within the top 180 px and fills at least 60% of the
// window's height, both on the page that followed the job and on one
// opened after it.
func TestBrowserFlameSymbolizationFolds(t *testing.T) {
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900}) // first: it skips with -short
	_, base := webtest.SymbolizingServer(t, nil, 1)
	id := webtest.UploadAPI(t, base, "", benchWithUnnamedLibs(t, 4))
	check := func(when string) {
		t.Helper()
		if open := eval[bool](t, b, `document.querySelector('#symbolization details').open`); open {
			t.Errorf("%s: the symbolization panel is still open", when)
		}
		if s := text(t, b, "#symbolization-summary"); !strings.Contains(s, "of 4 symbolized") || !strings.Contains(s, "4 without symbols") {
			t.Errorf("%s: the folded panel's summary %q does not say 0 of 4 symbolized, 4 without symbols", when, s)
		}
		g := eval[rect](t, b, graphBoxJS)
		inner := eval[float64](t, b, `window.innerHeight`)
		if g.Y > 180 {
			t.Errorf("%s: the flame graph starts at y=%.0f, want within the top 180 px", when, g.Y)
		}
		if shown := min(g.Y+g.Height, inner) - max(g.Y, 0); shown < 0.6*inner {
			t.Errorf("%s: the flame graph shows %.0f px of the %.0f px window (%.0f%%, y=%.0f..%.0f); want at least 60%%", when, shown, inner, 100*shown/inner, g.Y, g.Y+g.Height)
		}
	}
	runLong(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(3 * time.Minute); err != nil {
		t.Fatalf("the flame graph never drew: %v; problems %q", err, b.Problems())
	}
	waitRun(t, base, id, ondemand.RunDone)
	waitForJS(t, b, "the page to learn the job ended", `document.getElementById('symbolization').dataset.job === 'done'`)
	time.Sleep(300 * time.Millisecond) // the graph takes the room
	check("after following the job")
	b.Screenshot(t, "flame-symbolization-folded")

	runLong(t, b, "open the page again", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(3 * time.Minute); err != nil {
		t.Fatalf("the flame graph never drew: %v", err)
	}
	waitForJS(t, b, "the panel's outcome", `document.getElementById('symbolization').dataset.job === 'done'`)
	time.Sleep(300 * time.Millisecond)
	check("on a page opened after the job")
	noProblems(t, b)
}

// siteChromeJS is what a page shares with the others: its header's links,
// the header's box and colours, and the style sheets it loads.
const siteChromeJS = `(() => {
	const h = document.querySelector('header.site');
	if (!h) return null;
	const cs = getComputedStyle(h), r = h.getBoundingClientRect();
	return {
		links: [...h.querySelectorAll('a')].map((a) => a.getAttribute('href') + ' ' + a.textContent.trim()),
		style: [cs.backgroundColor, cs.color, cs.position, Math.round(r.height), Math.round(r.top), getComputedStyle(document.body).fontFamily].join(' | '),
		sheets: [...document.querySelectorAll('link[rel=stylesheet]')].map((l) => new URL(l.href).pathname).filter((p) => p === '/static/style.css'),
	};
})()`

type siteChrome struct {
	Links  []string `json:"links"`
	Style  string   `json:"style"`
	Sheets []string `json:"sheets"`
}

// TestBrowserDebuginfoInSiteLayout opens /debuginfo with one uploaded
// debug file beside the upload page and the services page (issue 34: it
// was a bare page of its own, without the site's header): it has the same
// header, links and styles as they do, and its table lists the file.
func TestBrowserDebuginfoInSiteLayout(t *testing.T) {
	_, debugFile, bid := webtest.PrivFiles(t)
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := debuginfo.New(debuginfo.Config{Store: st, TempDir: t.TempDir()})
	s, err := web.New(web.Config{Store: st, OTLP: true, Debuginfo: &web.DebuginfoConfig{Files: files, Serve: "open"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	webtest.UploadDebugFile(t, ts.URL, debugFile)

	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	chrome := func(path string) siteChrome {
		t.Helper()
		run(t, b, "open "+path, chromedp.Navigate(ts.URL+path))
		waitForJS(t, b, path+" loaded", `document.readyState === 'complete'`)
		c := eval[*siteChrome](t, b, siteChromeJS)
		if c == nil {
			t.Fatalf("%s has no site header (header.site); it says:\n%s", path, eval[string](t, b, `document.body.innerText`))
		}
		return *c
	}
	want := chrome("/")
	for _, other := range []string{"/services", "/debuginfo"} {
		got := chrome(other)
		if strings.Join(got.Links, "\n") != strings.Join(want.Links, "\n") || got.Style != want.Style || len(got.Sheets) != 1 {
			t.Errorf("%s's header differs from the upload page's:\n got %+v\nwant %+v", other, got, want)
		}
	}
	if rows := eval[[]string](t, b, `[...document.querySelectorAll('#debug-files tbody tr')].map((r) => r.textContent.replace(/\s+/g, ' ').trim())`); len(rows) != 1 || !strings.Contains(rows[0], bid) {
		t.Errorf("/debuginfo lists %q, want one row with build ID %s", rows, bid)
	}
	b.Screenshot(t, "debuginfo")
	noProblems(t, b)
}
