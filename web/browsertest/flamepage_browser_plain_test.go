package browsertest_test

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/web/browsertest"
)

// TestBrowserFlameColorsAndLegend: frames of one package share a hue and
// the legend names the widest groups with swatches for unsymbolized and
// merged frames; by binary, C++ and Go frames of /bin/app share one color;
// heat follows self share; the choice is in the URL.
func TestBrowserFlameColorsAndLegend(t *testing.T) {
	b, _ := openPackagesProfile(t, browsertest.Options{Width: 1440, Height: 900})
	waitForJS(t, b, "the legend", `document.querySelectorAll('#legend .legend-item').length > 0`)
	keys := eval[[]string](t, b, `[...document.querySelectorAll('#legend .legend-item')].map(e => e.dataset.key)`)
	for _, want := range []string{"main", "net/http", "std", "libc.so.6", "unsymbolized", "…"} {
		if !contains(keys, want) {
			t.Errorf("legend %q lacks %q", keys, want)
		}
	}
	mainHue, _ := rgbHue(pixel(t, b, "main.main"))
	workHue, _ := rgbHue(pixel(t, b, "main.main", "main.work"))
	httpHue, _ := rgbHue(pixel(t, b, "main.main", "net/http.(*conn).serve"))
	stdHue, _ := rgbHue(pixel(t, b, "main.main", "net/http.(*conn).serve", "std::vector<int>::push_back"))
	if d := hueDistance(mainHue, workHue); d > 4 {
		t.Errorf("main.main (hue %.0f) and main.work (hue %.0f) are one package but differ by %.0f°", mainHue, workHue, d)
	}
	if d := hueDistance(mainHue, httpHue); d < 10 {
		t.Errorf("main (hue %.0f) and net/http (hue %.0f) look alike", mainHue, httpHue)
	}
	if d := hueDistance(httpHue, stdHue); d < 10 {
		t.Errorf("net/http (hue %.0f) and std (hue %.0f) look alike", httpHue, stdHue)
	}
	// The legend's swatch for main is the color of main's frames.
	swatch := eval[string](t, b, `getComputedStyle(document.querySelector('#legend [data-key="main"] .swatch')).backgroundColor`)
	var sw [3]int
	if _, err := fmt.Sscanf(swatch, "rgb(%d, %d, %d)", &sw[0], &sw[1], &sw[2]); err != nil {
		t.Fatalf("swatch color %q: %v", swatch, err)
	}
	if h, _ := rgbHue(sw); hueDistance(h, mainHue) > 4 {
		t.Errorf("legend swatch for main has hue %.0f, main's frames %.0f", h, mainHue)
	}
	unsym := pixel(t, b, "main.main", "app+0x1234")
	if h, s := rgbHue(unsym); hueDistance(h, 215) > 8 || s > 0.3 {
		t.Errorf("the raw address is drawn rgb%v (hue %.0f, saturation %.2f), want the unsymbolized blue-grey", unsym, h, s)
	}

	// Same colors on a reload: stable, not random.
	before := pixel(t, b, "main.main", "net/http.(*conn).serve")
	run(t, b, "reload", chromedp.Evaluate[chromedp.Void](`window.viewer.reload()`, chromedp.EvalAwaitPromise))
	if after := pixel(t, b, "main.main", "net/http.(*conn).serve"); after != before {
		t.Errorf("net/http's color changed on reload: rgb%v, then rgb%v", before, after)
	}

	// By binary: std::vector and net/http are both in /bin/app.
	run(t, b, "color by binary", chromedp.SetValue(chromedp.CSS("#color-scheme"), "binary"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('color-scheme').dispatchEvent(new Event('change'))`))
	waitForJS(t, b, "the binary legend", `document.getElementById('legend').dataset.scheme === 'binary'`)
	if a, c := pixel(t, b, "main.main", "net/http.(*conn).serve"), pixel(t, b, "main.main", "net/http.(*conn).serve", "std::vector<int>::push_back"); a != c {
		t.Errorf("by binary, net/http rgb%v and std::vector rgb%v (both /bin/app) differ", a, c)
	}
	if keys := eval[[]string](t, b, `[...document.querySelectorAll('#legend .legend-item')].map(e => e.dataset.key)`); !contains(keys, "app") || !contains(keys, "libc.so.6") {
		t.Errorf("binary legend %q, want app and libc.so.6", keys)
	}
	// Heat: main.helper has the most self time (40 of 100), main.main none.
	run(t, b, "color by heat", chromedp.SetValue(chromedp.CSS("#color-scheme"), "heat"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('color-scheme').dispatchEvent(new Event('change'))`))
	waitForJS(t, b, "the heat legend", `document.getElementById('legend').dataset.scheme === 'heat'`)
	hot, cold := pixel(t, b, "main.main", "main.work", "main.helper"), pixel(t, b, "main.main")
	if hot[0] < 200 || hot[1] > cold[1]-40 {
		t.Errorf("heat: the hottest frame is rgb%v, the coldest rgb%v; want red against pale yellow", hot, cold)
	}
	if c := currentURL(t, b).Query().Get("color"); c != "heat" {
		t.Errorf("URL color=%q, want heat", c)
	}
	noProblems(t, b)
}

// TestBrowserFlameLayout: one toolbar row, the graph filling the window's
// height below it, the top table beside it at 1440 px, nothing wider
// than a 390 px phone, and room to type in the search box beside its
// matched badge.
func TestBrowserFlameLayout(t *testing.T) {
	b, page := openPackagesProfile(t, browsertest.Options{Width: 1440, Height: 900})
	wide := eval[float64](t, b, `document.getElementById('search').getBoundingClientRect().width`)
	tops := eval[[]float64](t, b, `[...document.getElementById('toolbar').children].filter(e => e.offsetParent).map(e => Math.round(e.getBoundingClientRect().top + e.getBoundingClientRect().height / 2))`)
	for _, y := range tops {
		if math.Abs(y-tops[0]) > 4 {
			t.Errorf("toolbar items at heights %v: more than one row", tops)
			break
		}
	}
	if eval[bool](t, b, `document.getElementById('filter-f').checkVisibility()`) {
		t.Error("the focus box shows before the Filters popover is opened")
	}
	run(t, b, "open Filters", chromedp.Click(chromedp.CSS("#filters-pop > summary")))
	waitForJS(t, b, "the popover", `document.getElementById('filter-f').checkVisibility() && document.getElementById('compare-base').checkVisibility()`)
	run(t, b, "close it", chromedp.Click(chromedp.CSS("h1")))
	waitForJS(t, b, "the popover closed", `!document.getElementById('filters-pop').open`)

	chart := eval[rect](t, b, `(r => ({x: r.left, y: r.top, width: r.width, height: r.height}))(document.getElementById('chart').getBoundingClientRect())`)
	inner := eval[float64](t, b, `window.innerHeight`)
	if bottom := chart.Y + chart.Height; bottom < inner-60 || bottom > inner {
		t.Errorf("the chart spans y %.0f..%.0f of a %.0f px window; want it to reach the bottom (within 60 px)", chart.Y, bottom, inner)
	}
	if chart.Y > 300 {
		t.Errorf("the chart starts at y=%.0f", chart.Y)
	}
	top := eval[rect](t, b, `(r => ({x: r.left, y: r.top, width: r.width, height: r.height}))(document.querySelector('.top-section').getBoundingClientRect())`)
	if top.X < chart.X+chart.Width || top.Y > chart.Y+40 {
		t.Errorf("at 1440 px the top table is at (%.0f, %.0f), the chart spans x %.0f..%.0f; want it beside the chart", top.X, top.Y, chart.X, chart.X+chart.Width)
	}
	if h := eval[float64](t, b, `document.documentElement.scrollHeight`); h > inner+2 {
		t.Errorf("the page is %.0f px tall in a %.0f px window: it should not scroll, the graph does", h, inner)
	}
	b.Screenshot(t, "flame-1440")

	// A phone: 390 px wide, no horizontal scroll, the top table below.
	run(t, b, "a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	waitForJS(t, b, "the canvas follows", `document.getElementById('flame').getBoundingClientRect().width < 390`)
	if w := eval[float64](t, b, `document.documentElement.scrollWidth`); w > 390 {
		wide := eval[[]string](t, b, `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 391).slice(0, 8).map(e => e.tagName + '#' + e.id + '.' + e.className)`)
		t.Errorf("at 390 px the page is %.0f px wide; wider elements: %q", w, wide)
	}
	chart = eval[rect](t, b, `(r => ({x: r.left, y: r.top, width: r.width, height: r.height}))(document.getElementById('chart').getBoundingClientRect())`)
	top = eval[rect](t, b, `(r => ({x: r.left, y: r.top, width: r.width, height: r.height}))(document.querySelector('.top-section').getBoundingClientRect())`)
	if top.Y < chart.Y+chart.Height {
		t.Errorf("at 390 px the top table (y=%.0f) is not below the chart (bottom %.0f)", top.Y, chart.Y+chart.Height)
	}
	b.Screenshot(t, "flame-390")

	// Touch: a tap shows the tooltip without zooming, a second tap zooms.
	// (The full-page screenshot resized the window for a moment.)
	waitForJS(t, b, "the phone's width again", `window.innerWidth === 390 && document.getElementById('flame').getBoundingClientRect().width < 390`)
	r := frame(t, b, "main.main", "net/http.(*conn).serve")
	eval[bool](t, b, `(() => { const tip = document.getElementById('tooltip'); window.__tipShown = false;
		new MutationObserver(() => { if (!tip.hidden && tip.innerText.startsWith('net/http.(*conn).serve')) window.__tipShown = true; })
			.observe(tip, { attributes: true, childList: true, subtree: true }); return true; })()`)
	run(t, b, "tap serve", chromedp.TapXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "the tooltip after a tap", `window.__tipShown`)
	if z := currentURL(t, b).Query()["z"]; len(z) != 0 {
		t.Errorf("one tap zoomed into %q", z)
	}
	run(t, b, "double-tap serve", chromedp.TapXY(r.X+r.Width/2, r.Y+r.Height/2), chromedp.TapXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "zoomed by a double tap", `document.querySelector('#crumbs [aria-current]')?.textContent === 'net/http.(*conn).serve'`)

	// At 1400 px, a search's matched badge beside the search box leaves
	// room to type in it.
	run(t, b, "1400 px", chromedp.EmulateViewport(1400, 900), chromedp.Navigate(page+"?q=serve"))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForJS(t, b, "the matched badge", `document.getElementById('match').textContent.includes('matched')`)
	b.Screenshot(t, "flame-1400-search")
	if w := eval[float64](t, b, `document.getElementById('search').getBoundingClientRect().width`); w < 200 {
		t.Errorf("at 1400 px the search box is %.0f px wide beside %q (%.0f px at 1440 px without it)", w, text(t, b, "#match"), wide)
	}
	noProblems(t, b)
}

// TestBrowserFlameTooltipAndDetail: the tooltip gives file:line, inlined or
// not, package and binary, total, self, the samples (or, without a sample
// type that counts them, the stacks) and the share in the zoom; a click
// opens the detail strip with the links about the function.
func TestBrowserFlameTooltipAndDetail(t *testing.T) {
	b, page := openPackagesProfile(t, browsertest.Options{Width: 1440, Height: 900})
	hover := func(path ...string) string { t.Helper(); return hoverTip(t, b, path...) }
	tip := hover("main.main", "net/http.(*conn).serve")
	for _, want := range []string{"net/http", "/bin/app", "/usr/lib/go/src/net/http/server.go:1900", "not inlined", "Total", "50.0 ms", "50.00%", "Self", "0 ns"} {
		if !strings.Contains(tip, want) {
			t.Errorf("tooltip %q lacks %q", tip, want)
		}
	}
	// cpu/nanoseconds only: no sample count, so the sample records (the
	// header's "Stacks"), which pprof -traces lists one by one.
	if n := eval[int](t, b, `(window.viewer.tree.countsOf(0), window.viewer.tree.counts ? window.viewer.tree.counts.length : -1)`); n != 2*eval[int](t, b, `window.viewer.tree.length`) {
		t.Errorf("flame.json has %d counts, want two per node", n)
	}
	file := filepath.Join(t.TempDir(), "packages.pb.gz")
	if err := os.WriteFile(file, packagesProfile(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fn := range [][]string{{"main.main", "net/http.(*conn).serve"}, {"main.main", "net/http.(*conn).serve", "malloc"}} {
		hover(fn...)
		total, self := pprofTraces(t, file, fn[len(fn)-1])
		if got, want := tipRow(t, b, "Stacks"), fmt.Sprintf("%d total | %d self", total, self); got != want {
			t.Errorf("%s: tooltip's stacks %q, want %q (go tool pprof -traces)", fn[len(fn)-1], got, want)
		}
	}
	if tip := hover("main.main", "main.work", "main.helper"); !strings.Contains(tip, "/src/app/helper.go:30") || !strings.Contains(tip, "inlined") || strings.Contains(tip, "not inlined") {
		t.Errorf("tooltip of the inlined helper: %q", tip)
	}
	if tip := hover("main.main", "net/http.(*conn).serve", "malloc"); !strings.Contains(tip, "libc.so.6") || !strings.Contains(tip, "no file:line") {
		t.Errorf("tooltip of malloc (no file in the profile): %q", tip)
	}

	// Click: zoom and the detail strip.
	r := frame(t, b, "main.main", "net/http.(*conn).serve")
	run(t, b, "click serve", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "the detail strip", `!document.getElementById('detail').hidden && document.getElementById('detail').dataset.fn === 'net/http.(*conn).serve'`)
	links := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll('#detail a')].map(a => [a.textContent, a.getAttribute('href')]))`)
	id := page[strings.LastIndex(page, "/")+1:]
	for label, want := range map[string]string{
		"Callers/callees": "/p/" + id + "/sandwich?fn=net%2Fhttp.%28*conn%29.serve",
		"Source":          "/p/" + id + "/source?fn=",
		"Annotate":        "/p/" + id + "/annotate?fn=net%2Fhttp.%28*conn%29.serve",
		"Focus":           "/p/" + id + "?f=",
		"Ignore":          "/p/" + id + "?i=",
		"Hide":            "/p/" + id + "?h=",
	} {
		if !strings.HasPrefix(links[label], want) {
			t.Errorf("detail link %q = %q, want %s…", label, links[label], want)
		}
	}
	detail := eval[string](t, b, `document.getElementById('detail').innerText`)
	for _, want := range []string{"server.go:1900", "Total", "50.0 ms"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail strip %q lacks %q", detail, want)
		}
	}
	if status := eval[int](t, b, fmt.Sprintf(`fetch(%q).then(r => r.status)`, links["Callers/callees"])); status != http.StatusOK {
		t.Errorf("the sandwich link answers %d", status)
	}
	// Zoomed: the share in the zoom.
	if tip := hover("main.main", "net/http.(*conn).serve", "malloc"); !strings.Contains(tip, "In zoom") || !strings.Contains(tip, "40.00%") {
		t.Errorf("zoomed tooltip of malloc (20 of serve's 50): %q", tip)
	}
	run(t, b, "Escape", chromedp.KeyEvent("\x1b"))
	waitForJS(t, b, "the strip closed", `document.getElementById('detail').hidden`)
	noProblems(t, b)
}

// TestBrowserFlameWheelZoom: the wheel zooms at the pointer (the value
// under it stays put), the full drawing follows when it rests, a drag
// pans, and a click still zooms.
func TestBrowserFlameWheelZoom(t *testing.T) {
	b, _ := openPackagesProfile(t, browsertest.Options{Width: 1440, Height: 900})
	serve := frame(t, b, "main.main", "net/http.(*conn).serve")
	work := frame(t, b, "main.main", "main.work")
	// Point at serve's right quarter.
	px, py := serve.X+serve.Width*0.75, serve.Y+serve.Height/2
	wheel := func(dy float64) {
		t.Helper()
		run(t, b, "wheel", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, px, py, func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 1e-9, dy }))
	}
	// The value under the pointer, before and after.
	under := fmt.Sprintf(`(() => { const g = window.viewer.graph, [vx, vw] = g.range(), left = g.overlay.getBoundingClientRect().left; return vx + (%f - left) / g.width * vw; })()`, px)
	v0 := eval[float64](t, b, under)
	wheel(-240)
	waitForJS(t, b, "a wheel zoom", `window.viewer.graph.view !== null`)
	// The gesture's frames stretch the last drawing; once the wheel rests
	// the graph is drawn again at the new view (serve among its frames).
	waitForJS(t, b, "the drawing after the wheel rests", `window.viewer.graph.snap === null &&
		window.viewer.drawnFrames().some((p) => p.join('>') === 'main.main>net/http.(*conn).serve')`)
	z := frame(t, b, "main.main", "net/http.(*conn).serve")
	if z.Width < serve.Width*1.2 {
		t.Errorf("after a wheel zoom serve is %.0f px wide, was %.0f", z.Width, serve.Width)
	}
	total := eval[float64](t, b, `window.viewer.tree.rootTotal`)
	if v1 := eval[float64](t, b, under); math.Abs(v1-v0) > total*0.002 {
		t.Errorf("the value under the pointer moved from %.0f to %.0f (total %.0f): the zoom is not at the pointer", v0, v1, total)
	}
	if r := eval[any](t, b, `window.viewer.frameRect(['main.main', 'main.work'])`); r != nil {
		if w := frame(t, b, "main.main", "main.work"); w.Width >= work.Width {
			t.Errorf("main.work did not narrow out of view: %.0f px, was %.0f", w.Width, work.Width)
		}
	}
	x0 := eval[float64](t, b, `window.viewer.graph.view.x0`)
	run(t, b, "drag right",
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, px, py, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, px+60, py, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, px+120, py, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, px+120, py, chromedp.ButtonLeft))
	if x1 := eval[float64](t, b, `window.viewer.graph.view ? window.viewer.graph.view.x0 : -1`); x1 >= x0 || x1 < 0 {
		t.Errorf("dragging right moved the view from %v to %v, want it to the left", x0, x1)
	}
	if z := currentURL(t, b).Query()["z"]; len(z) != 0 {
		t.Errorf("a drag zoomed into %q; want no click", z)
	}
	// Zooming out all the way is the whole frame again.
	for i := 0; i < 4; i++ {
		wheel(600)
	}
	waitForJS(t, b, "the whole width again", `window.viewer.graph.view === null`)
	noProblems(t, b)
}
