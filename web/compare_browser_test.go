package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/browsertest"
)

// pixel reads the colour drawn on the graph canvas near the top right of
// the frame at path (away from its label).
func pixel(t *testing.T, b *browsertest.Browser, path ...string) [3]int {
	t.Helper()
	r := frame(t, b, path...)
	js := fmt.Sprintf(`(() => {
		const c = document.getElementById('flame');
		const box = c.getBoundingClientRect();
		const dpr = c.width / box.width;
		const d = c.getContext('2d').getImageData(Math.floor((%f - box.left) * dpr), Math.floor((%f - box.top) * dpr), 1, 1).data;
		return [d[0], d[1], d[2]];
	})()`, r.X+r.Width-4, r.Y+3)
	v := eval[[]int](t, b, js)
	return [3]int{v[0], v[1], v[2]}
}

// TestBrowserDiffLink opens a diff link: a function that grew is red, one
// that shrank is blue, the tooltip gives both values and the change, and
// the page's link (with zoom) reproduces the view. The flame page's
// compare picker leads to the same diff.
func TestBrowserDiffLink(t *testing.T) {
	base := compareServer(t, web.Config{})
	// Base: parse 60, render 40 (100). New: parse 30, render 150 (180):
	// render grew from 40% to 83%, parse shrank from 60% to 17%.
	a := postProfile(t, base, "before.pb.gz", stacksPB(t, "", nil, "main;parse", 60, "main;render", 40, "main;render;draw", 0))
	bID := postProfile(t, base, "after.pb.gz", stacksPB(t, "", nil, "main;parse", 30, "main;render", 120, "main;render;draw", 30))
	b := browsertest.Start(t, browsertest.Options{})

	ready := func(what string) {
		t.Helper()
		if err := b.WaitReady(20 * time.Second); err != nil {
			t.Fatalf("%s never drew: %v; page problems: %q", what, err, b.Problems())
		}
	}
	run(t, b, "open the flame page of the new profile", chromedp.Navigate(base+"/p/"+bID))
	ready("the flame page")
	run(t, b, "paste the base profile's link into the compare picker",
		chromedp.Click(chromedp.CSS("#filters-pop > summary")),
		chromedp.SendKeys(chromedp.CSS("#compare-base"), base+"/p/"+a),
		chromedp.Submit(chromedp.CSS("#compare-base")))
	waitFor(t, b, "the diff page", fmt.Sprintf("location.pathname === %q", "/p/"+a+"/diff/"+bID))
	ready("the diff page")
	pageProblems(t, b)

	b.Screenshot(t, "diff")
	grew, shrank := pixel(t, b, "main", "render"), pixel(t, b, "main", "parse")
	if !(grew[0] > grew[2]+60) {
		t.Errorf("render grew but is drawn rgb%v, not red", grew)
	}
	if !(shrank[2] > shrank[0]+60) {
		t.Errorf("parse shrank but is drawn rgb%v, not blue", shrank)
	}

	r := frame(t, b, "main", "render")
	run(t, b, "hover render", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, r.X+r.Width/2, r.Y+r.Height/2))
	waitFor(t, b, "the tooltip", `!document.getElementById('tooltip').hidden`)
	tip := text(t, b, "#tooltip")
	for _, want := range []string{"render", "Base", "40 ns (40.00%)", "New", "150 ns (83.33%)", "+43.33 pp", "+110 ns"} {
		if !strings.Contains(tip, want) {
			t.Errorf("tooltip %q lacks %q", tip, want)
		}
	}
	if got := eval[string](t, b, `document.querySelector('#diff-top tbody tr').dataset.name`); got != "parse" && got != "render" {
		t.Errorf("the diff table starts with %q, want one of the changed functions", got)
	}

	// Search: the matched share in both profiles.
	run(t, b, "search render", chromedp.SendKeys(chromedp.CSS("#search"), "rend"))
	waitFor(t, b, "the match summary", `document.getElementById('match').textContent === '40.00% → 83.33% (+43.33 pp)'`)

	// Zoom into render: the link keeps it, and a fresh load reproduces the view.
	run(t, b, "zoom into render", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitFor(t, b, "zoom in the URL", `new URLSearchParams(location.search).getAll('z').join('>') === 'main>render'`)
	link := eval[string](t, b, "location.href")
	run(t, b, "leave", chromedp.Navigate(base+"/p/"+a))
	ready("the base's flame page")
	run(t, b, "open the copied link", chromedp.Navigate(link))
	ready("the diff page from its link")
	if got := eval[string](t, b, `window.viewer.tree.path(window.viewer.graph.zoom).join('>')`); got != "main>render" {
		t.Errorf("the link reopened zoomed on %q, want main>render", got)
	}
	if got := text(t, b, "#match"); got != "40.00% → 83.33% (+43.33 pp)" {
		t.Errorf("the link reopened with match %q, want the search kept", got)
	}
	// draw does not match the search, so it is faded, but still red.
	if got := pixel(t, b, "main", "render", "draw"); !(got[0] > got[2]+30 && got[0] > got[1]+30) {
		t.Errorf("after reload, draw (0 → 30) is rgb%v, not red", got)
	}
	pageProblems(t, b)
}

// TestBrowserDiffColors: the diff page's color switch offers the change
// (red grew, blue shrank: the default, with its legend) beside the flame
// page's package, binary and heat; by package a frame has the color the
// flame page gives it, the choice is kept in the URL (color=) across a
// reload, and switching back draws the change again.
func TestBrowserDiffColors(t *testing.T) {
	base := compareServer(t, web.Config{})
	a := postProfile(t, base, "before.pb.gz", stacksPB(t, "", nil, "main;parse", 60, "main;render", 40))
	bID := postProfile(t, base, "after.pb.gz", stacksPB(t, "", nil, "main;parse", 30, "main;render", 150))
	b := browsertest.Start(t, browsertest.Options{})
	ready := func(what string) {
		t.Helper()
		if err := b.WaitReady(20 * time.Second); err != nil {
			t.Fatalf("%s never drew: %v; page problems: %q", what, err, b.Problems())
		}
	}
	run(t, b, "open the new profile's flame page", chromedp.Navigate(base+"/p/"+bID))
	ready("the flame page")
	flameRender := pixel(t, b, "main", "render")

	diffURL := base + "/p/" + a + "/diff/" + bID
	run(t, b, "open the diff", chromedp.Navigate(diffURL))
	ready("the diff page")
	if got := eval[string](t, b, `[...document.querySelectorAll('#color-scheme option')].map((o) => o.value).join(' ')`); got != "diff package binary heat" {
		t.Fatalf("the diff page's color switch offers %q, want diff package binary heat", got)
	}
	if got := eval[string](t, b, `document.getElementById('color-scheme').value + ' ' + document.getElementById('legend').dataset.scheme + ': ' + [...document.querySelectorAll('#legend .legend-item')].map((e) => e.textContent).join(', ')`); got != "diff diff: grew, shrank, unchanged" {
		t.Errorf("default scheme and legend %q, want the change's", got)
	}
	if grew := pixel(t, b, "main", "render"); !(grew[0] > grew[2]+60) {
		t.Errorf("render grew but is drawn rgb%v, not red", grew)
	}

	run(t, b, "color by package", chromedp.SetValue(chromedp.CSS("#color-scheme"), "package"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('color-scheme').dispatchEvent(new Event('change'))`))
	waitFor(t, b, "color=package in the URL", `new URLSearchParams(location.search).get('color') === 'package'`)
	near := func(p, q [3]int) bool {
		for i := range p {
			if d := p[i] - q[i]; d > 3 || d < -3 {
				return false
			}
		}
		return true
	}
	if got := pixel(t, b, "main", "render"); !near(got, flameRender) {
		t.Errorf("by package, render is rgb%v on the diff page and rgb%v on the flame page", got, flameRender)
	}
	if got := eval[string](t, b, `document.getElementById('legend').dataset.scheme`); got != "package" {
		t.Errorf("legend scheme %q after switching to package", got)
	}

	run(t, b, "reload", chromedp.Reload())
	ready("the diff page reloaded")
	if got := eval[string](t, b, `document.getElementById('color-scheme').value`); got != "package" {
		t.Errorf("after a reload the switch says %q, want package (from the URL)", got)
	}
	if got := pixel(t, b, "main", "render"); !near(got, flameRender) {
		t.Errorf("after a reload render is rgb%v, want the package color rgb%v", got, flameRender)
	}
	run(t, b, "back to the change", chromedp.SetValue(chromedp.CSS("#color-scheme"), "diff"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('color-scheme').dispatchEvent(new Event('change'))`))
	waitFor(t, b, "no color= in the URL", `!new URLSearchParams(location.search).has('color')`)
	if shrank := pixel(t, b, "main", "parse"); !(shrank[2] > shrank[0]+60) {
		t.Errorf("back on the change, parse (shrank) is rgb%v, not blue", shrank)
	}
	pageProblems(t, b)
}

// pageProblems fails on console errors and failed loads, except the
// symbolization panel's status request, which answers 404 on a server
// without on-demand symbolization (the panel's concern, not the diff's).
func pageProblems(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	for _, p := range b.Problems() {
		if !strings.HasSuffix(p, "/symbolization") {
			t.Errorf("page problem: %s", p)
		}
	}
}

// TestBrowserFrameMenuSandwich right-clicks a frame on the flame page, takes
// the menu's sandwich link, and checks the callers and callees drawn; a
// click on a caller re-centres the sandwich on it.
func TestBrowserFrameMenuSandwich(t *testing.T) {
	base := compareServer(t, web.Config{})
	id := postProfile(t, base, "cpu.pb.gz", stacksPB(t, "", nil,
		"main;a;f;g", 10, "main;b;f", 20, "main;f;f;h", 5, "main;c", 7))
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id+"?si=cpu"))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("flame page never drew: %v", err)
	}
	r := frame(t, b, "main", "b", "f")
	run(t, b, "right-click main > b > f", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2, chromedp.Button("right")))
	waitFor(t, b, "the frame menu", `!document.getElementById('frame-menu').hidden`)
	b.Screenshot(t, "frame-menu")
	if got := eval[string](t, b, `document.getElementById('frame-menu').dataset.fn`); got != "f" {
		t.Fatalf("menu for %q, want f", got)
	}
	src := eval[string](t, b, `[...document.querySelectorAll('#frame-menu a')].find(a => a.textContent === 'Source').getAttribute('href')`)
	if !strings.Contains(src, "/p/"+id+"/source?") || !strings.Contains(src, "fn=f") || !strings.Contains(src, "si=cpu") {
		t.Errorf("source link %q", src)
	}
	// "Focus on it" reloads the graph with pprof's f, kept in the URL.
	focus := eval[string](t, b, `[...document.querySelectorAll('#frame-menu a')].find(a => a.textContent === 'Focus on it').getAttribute('href')`)
	run(t, b, "focus on f", chromedp.Navigate(base+focus))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("focused page never drew: %v", err)
	}
	if got := eval[float64](t, b, `window.viewer.tree.rootTotal`); got != 35 {
		t.Errorf("focused on f: the graph's total is %v, want 35 (c's 7 dropped)", got)
	}
	if got := eval[string](t, b, `document.getElementById('filter-f').value`); got != "^f$" {
		t.Errorf("focus box shows %q, want ^f$", got)
	}
	c := frame(t, b, "main", "b")
	run(t, b, "zoom into b", chromedp.MouseClickXY(c.X+c.Width/2, c.Y+c.Height/2))
	waitFor(t, b, "zoom and focus in the URL", `(p => p.get('f') === '^f$' && p.getAll('z').join('>') === 'main>b')(new URLSearchParams(location.search))`)
	run(t, b, "clear the filters", chromedp.Click(chromedp.CSS("#filter-clear")))
	waitFor(t, b, "the unfiltered graph", `document.body.dataset.ready === '1' && window.viewer.tree && window.viewer.tree.rootTotal === 42`)
	r = frame(t, b, "main", "b", "f")
	run(t, b, "right-click main > b > f", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2, chromedp.Button("right")))
	waitFor(t, b, "the frame menu again", `!document.getElementById('frame-menu').hidden`)

	// The top table's rows have the same menu.
	run(t, b, "scroll to the table", chromedp.ScrollIntoView(chromedp.CSS(`#top-table tbody tr[data-name="g"]`)))
	row := eval[*rect](t, b, `(() => { const r = document.querySelector('#top-table tbody tr[data-name="g"]').getBoundingClientRect(); return { x: r.left, y: r.top, width: r.width, height: r.height }; })()`)
	run(t, b, "right-click the row of g", chromedp.MouseClickXY(row.X+row.Width-20, row.Y+row.Height/2, chromedp.Button("right")))
	waitFor(t, b, "the menu for g", `document.getElementById('frame-menu').dataset.fn === 'g' && !document.getElementById('frame-menu').hidden`)
	run(t, b, "back to the graph", chromedp.ScrollIntoView(chromedp.CSS("#chart")))
	r = frame(t, b, "main", "b", "f")
	run(t, b, "right-click main > b > f again", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2, chromedp.Button("right")))
	waitFor(t, b, "the menu for f", `document.getElementById('frame-menu').dataset.fn === 'f'`)
	run(t, b, "open the sandwich", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#frame-menu a')].find(a => a.textContent.startsWith('Callers')).click()`))
	waitFor(t, b, "the sandwich page", `location.pathname.endsWith('/sandwich')`)
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("sandwich never drew: %v; problems %q", err, b.Problems())
	}
	paths := func(g string) string {
		return eval[string](t, b, fmt.Sprintf(`(() => { const t = window.viewer.%s.tree; const out = [];
			for (let i = 0; i < t.length; i++) out.push([t.label(0), ...t.path(i)].join('>') + '=' + t.total[i]);
			return out.sort().join(' '); })()`, g))
	}
	b.Screenshot(t, "sandwich")
	if got, want := paths("callers"), "f=35 f>a=10 f>a>main=10 f>b=20 f>b>main=20 f>f=5 f>f>main=5"; got != want {
		t.Errorf("callers drawn %q, want %q", got, want)
	}
	if got, want := paths("callees"), "f=35 f>f=5 f>f>h=5 f>g=10"; got != want {
		t.Errorf("callees drawn %q, want %q", got, want)
	}
	if got := text(t, b, "#sandwich-stats"); !strings.Contains(got, "35 ns") || !strings.Contains(got, "20 ns") {
		t.Errorf("stats %q lack cum 35 ns and flat 20 ns", got)
	}
	// Click caller b (callers are drawn root at the bottom).
	rb := eval[*rect](t, b, `(() => { const g = window.viewer.callers; const t = g.tree; let i = 0;
		for (let j = 1; j < t.length; j++) if (t.label(j) === 'b') i = j;
		const r = g.rectOf(i); const c = g.overlay.getBoundingClientRect();
		return { x: c.left + r.x, y: c.top + r.y, width: r.w, height: r.h }; })()`)
	run(t, b, "click caller b", chromedp.MouseClickXY(rb.X+rb.Width/2, rb.Y+rb.Height/2))
	waitFor(t, b, "the sandwich of b", `new URLSearchParams(location.search).get('fn') === 'b' && document.body.dataset.ready === '1'`)
	if got, want := paths("callees"), "b=20 b>f=20"; got != want {
		t.Errorf("callees of b %q, want %q", got, want)
	}
	// A function with no samples says so in one line above the charts; the
	// message covered the whole page, header and links included.
	run(t, b, "the sandwich of a function not in the profile", chromedp.Navigate(base+"/p/"+id+"/sandwich?si=cpu&fn=nosuch"))
	waitFor(t, b, "the no-samples message", `document.getElementById('chart-status').textContent.startsWith('No samples pass through')`)
	if got := eval[string](t, b, `(() => { const s = document.getElementById('chart-status').getBoundingClientRect();
		const a = document.querySelector('header a, nav a').getBoundingClientRect();
		const hit = document.elementFromPoint(a.left + a.width / 2, a.top + a.height / 2);
		return s.height > 80 ? 'status is ' + s.height + ' px tall' : hit && hit.closest('header, nav') ? '' : 'the header is covered by ' + (hit && hit.outerHTML.slice(0, 60)); })()`); got != "" {
		t.Errorf("sandwich status: %s", got)
	}
	pageProblems(t, b)
}

// TestBrowserCompareHostileNames: a function named like markup shows as
// text on the diff, sandwich and source pages and in the frame menu.
func TestBrowserCompareHostileNames(t *testing.T) {
	const evil = `<img src=x onerror="window.pwned=1">`
	base := compareServer(t, web.Config{})
	a := postProfile(t, base, "a.pb.gz", stacksPB(t, "", map[string]string{evil: "/src/<b>.c"}, "main;"+evil, 10, "main;x", 10))
	bID := postProfile(t, base, "b.pb.gz", stacksPB(t, "", map[string]string{evil: "/src/<b>.c"}, "main;"+evil, 30, "main;x", 10))
	b := browsertest.Start(t, browsertest.Options{})
	check := func(what string) {
		t.Helper()
		if n := eval[int](t, b, `document.querySelectorAll('main img, main b').length + (window.pwned ? 100 : 0)`); n != 0 {
			t.Errorf("%s: the hostile name became markup (%d)", what, n)
		}
	}
	run(t, b, "diff", chromedp.Navigate(base+"/p/"+a+"/diff/"+bID))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := eval[string](t, b, `document.querySelector('#diff-top tbody tr').dataset.name`); got != evil {
		t.Errorf("diff table row %q, want the name as text", got)
	}
	r := frame(t, b, "main", evil)
	run(t, b, "hover", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, r.X+r.Width/2, r.Y+r.Height/2))
	waitFor(t, b, "tooltip", `document.getElementById('tooltip').textContent.includes('<img')`)
	check("diff")
	run(t, b, "flame page", chromedp.Navigate(base+"/p/"+bID))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	r = frame(t, b, "main", evil)
	run(t, b, "right-click", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2, chromedp.Button("right")))
	waitFor(t, b, "menu", `document.getElementById('frame-menu').dataset.fn === `+jsStrings([]string{evil})[1:len(jsStrings([]string{evil}))-1])
	check("frame menu")
	run(t, b, "sandwich", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#frame-menu a')].find(a => a.textContent.startsWith('Callers')).click()`))
	waitFor(t, b, "sandwich drawn", `location.pathname.endsWith('/sandwich') && document.body.dataset.ready === '1'`)
	if got := text(t, b, "#sandwich-fn"); got != evil {
		t.Errorf("sandwich heading %q", got)
	}
	check("sandwich")
	run(t, b, "source", chromedp.Click(chromedp.CSS("#source-link")))
	waitFor(t, b, "source page", `location.pathname.endsWith('/source') && !!document.getElementById('source-problem')`)
	if got := text(t, b, "#source-file"); got != "/src/<b>.c" {
		t.Errorf("source file shown as %q", got)
	}
	check("source")
	pageProblems(t, b)
}
