package browsertest_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/webtest"
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
	base := webtest.StartServerWith(t, web.Config{})
	// Base: parse 60, render 40 (100). New: parse 30, render 150 (180):
	// render grew from 40% to 83%, parse shrank from 60% to 17%.
	a := webtest.PostProfile(t, base, "before.pb.gz", webtest.StacksPB(t, "", nil, "main;parse", 60, "main;render", 40, "main;render;draw", 0))
	bID := webtest.PostProfile(t, base, "after.pb.gz", webtest.StacksPB(t, "", nil, "main;parse", 30, "main;render", 120, "main;render;draw", 30))
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
	waitForJS(t, b, "the diff page", fmt.Sprintf("location.pathname === %q", "/p/"+a+"/diff/"+bID))
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
	waitForJS(t, b, "the tooltip", `!document.getElementById('tooltip').hidden`)
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
	waitForJS(t, b, "the match summary", `document.getElementById('match').textContent === '40.00% → 83.33% (+43.33 pp)'`)

	// Zoom into render: the link keeps it, and a fresh load reproduces the view.
	run(t, b, "zoom into render", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "zoom in the URL", `new URLSearchParams(location.search).getAll('z').join('>') === 'main>render'`)
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
	run(t, b, "color by binary", chromedp.SetValue(chromedp.CSS("#color-scheme"), "binary"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('color-scheme').dispatchEvent(new Event('change'))`))
	// Swap base and new: the other diff, with this view.
	swap, err := url.Parse(eval[string](t, b, `document.getElementById('swap-link').href`))
	if err != nil {
		t.Fatal(err)
	}
	if q := swap.Query(); swap.Path != "/p/"+bID+"/diff/"+a || q.Get("q") != "rend" || strings.Join(q["z"], ">") != "main>render" || q.Get("color") != "binary" {
		t.Errorf("with a search, a zoom and a color, Swap base and new goes to %s, want /p/%s/diff/%s with q=rend, z=main, z=render and color=binary", swap, bID, a)
	}
	pageProblems(t, b)
}

// TestBrowserDiffColors: the diff page's color switch offers the change
// (red grew, blue shrank: the default, with its legend) beside the flame
// page's package, binary and heat; by package a frame has the color the
// flame page gives it, the choice is kept in the URL (color=) across a
// reload, and switching back draws the change again.
func TestBrowserDiffColors(t *testing.T) {
	base := webtest.StartServerWith(t, web.Config{})
	a := webtest.PostProfile(t, base, "before.pb.gz", webtest.StacksPB(t, "", nil, "main;parse", 60, "main;render", 40))
	bID := webtest.PostProfile(t, base, "after.pb.gz", webtest.StacksPB(t, "", nil, "main;parse", 30, "main;render", 150))
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
	if got := eval[string](t, b, `document.getElementById('color-scheme').value + ' ' + document.getElementById('legend').dataset.scheme + ': ' + [...document.querySelectorAll('#legend .legend-item')].map((e) => e.textContent).join(', ')`); got != "diff diff: −10 pp, −3 pp, −1 pp, noise, +1 pp, +3 pp, +10 pp" {
		t.Errorf("default scheme and legend %q, want the change's scale", got)
	}
	if grew := pixel(t, b, "main", "render"); !(grew[0] > grew[2]+60) {
		t.Errorf("render grew but is drawn rgb%v, not red", grew)
	}

	run(t, b, "color by package", chromedp.SetValue(chromedp.CSS("#color-scheme"), "package"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('color-scheme').dispatchEvent(new Event('change'))`))
	waitForJS(t, b, "color=package in the URL", `new URLSearchParams(location.search).get('color') === 'package'`)
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
	waitForJS(t, b, "no color= in the URL", `!new URLSearchParams(location.search).has('color')`)
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
	base := webtest.StartServerWith(t, web.Config{})
	id := webtest.PostProfile(t, base, "cpu.pb.gz", webtest.StacksPB(t, "", nil,
		"main;a;f;g", 10, "main;b;f", 20, "main;f;f;h", 5, "main;c", 7))
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id+"?si=cpu"))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("flame page never drew: %v", err)
	}
	r := frame(t, b, "main", "b", "f")
	run(t, b, "right-click main > b > f", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2, chromedp.Button("right")))
	waitForJS(t, b, "the frame menu", `!document.getElementById('frame-menu').hidden`)
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
	waitForJS(t, b, "zoom and focus in the URL", `(p => p.get('f') === '^f$' && p.getAll('z').join('>') === 'main>b')(new URLSearchParams(location.search))`)
	run(t, b, "clear the filters", chromedp.Click(chromedp.CSS("#filter-clear")))
	waitForJS(t, b, "the unfiltered graph", `document.body.dataset.ready === '1' && window.viewer.tree && window.viewer.tree.rootTotal === 42`)
	r = frame(t, b, "main", "b", "f")
	run(t, b, "right-click main > b > f", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2, chromedp.Button("right")))
	waitForJS(t, b, "the frame menu again", `!document.getElementById('frame-menu').hidden`)

	// The top table's rows have the same menu.
	run(t, b, "scroll to the table", chromedp.ScrollIntoView(chromedp.CSS(`#top-table tbody tr[data-name="g"]`)))
	row := eval[*rect](t, b, `(() => { const r = document.querySelector('#top-table tbody tr[data-name="g"]').getBoundingClientRect(); return { x: r.left, y: r.top, width: r.width, height: r.height }; })()`)
	run(t, b, "right-click the row of g", chromedp.MouseClickXY(row.X+row.Width-20, row.Y+row.Height/2, chromedp.Button("right")))
	waitForJS(t, b, "the menu for g", `document.getElementById('frame-menu').dataset.fn === 'g' && !document.getElementById('frame-menu').hidden`)
	run(t, b, "back to the graph", chromedp.ScrollIntoView(chromedp.CSS("#chart")))
	r = frame(t, b, "main", "b", "f")
	run(t, b, "right-click main > b > f again", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2, chromedp.Button("right")))
	waitForJS(t, b, "the menu for f", `document.getElementById('frame-menu').dataset.fn === 'f'`)
	run(t, b, "open the sandwich", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#frame-menu a')].find(a => a.textContent.startsWith('Callers')).click()`))
	waitForJS(t, b, "the sandwich page", `location.pathname.endsWith('/sandwich')`)
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
	waitForJS(t, b, "the sandwich of b", `new URLSearchParams(location.search).get('fn') === 'b' && document.body.dataset.ready === '1'`)
	if got, want := paths("callees"), "b=20 b>f=20"; got != want {
		t.Errorf("callees of b %q, want %q", got, want)
	}
	// A function with no samples says so in one line above the charts; the
	// message covered the whole page, header and links included.
	run(t, b, "the sandwich of a function not in the profile", chromedp.Navigate(base+"/p/"+id+"/sandwich?si=cpu&fn=nosuch"))
	waitForJS(t, b, "the no-samples message", `document.getElementById('chart-status').textContent.startsWith('No samples pass through')`)
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
	base := webtest.StartServerWith(t, web.Config{})
	a := webtest.PostProfile(t, base, "a.pb.gz", webtest.StacksPB(t, "", map[string]string{evil: "/src/<b>.c"}, "main;"+evil, 10, "main;x", 10))
	bID := webtest.PostProfile(t, base, "b.pb.gz", webtest.StacksPB(t, "", map[string]string{evil: "/src/<b>.c"}, "main;"+evil, 30, "main;x", 10))
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
	waitForJS(t, b, "tooltip", `document.getElementById('tooltip').textContent.includes('<img')`)
	check("diff")
	run(t, b, "flame page", chromedp.Navigate(base+"/p/"+bID))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	r = frame(t, b, "main", evil)
	run(t, b, "right-click", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2, chromedp.Button("right")))
	waitForJS(t, b, "menu", `document.getElementById('frame-menu').dataset.fn === `+jsStrings([]string{evil})[1:len(jsStrings([]string{evil}))-1])
	check("frame menu")
	run(t, b, "sandwich", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#frame-menu a')].find(a => a.textContent.startsWith('Callers')).click()`))
	waitForJS(t, b, "sandwich drawn", `location.pathname.endsWith('/sandwich') && document.body.dataset.ready === '1'`)
	if got := text(t, b, "#sandwich-fn"); got != evil {
		t.Errorf("sandwich heading %q", got)
	}
	check("sandwich")
	run(t, b, "source", chromedp.Click(chromedp.CSS("#source-link")))
	waitForJS(t, b, "source page", `location.pathname.endsWith('/source') && !!document.getElementById('source-problem')`)
	if got := text(t, b, "#source-file"); got != "/src/<b>.c" {
		t.Errorf("source file shown as %q", got)
	}
	check("source")
	pageProblems(t, b)
}

// sampled draws n samples from the distribution of stacks (stack, weight,
// stack, weight, ...) with a fixed seed and returns stacksPB's arguments:
// each stack with how many samples fell on it.
func sampled(seed uint64, n int, dist ...any) []any {
	r := rand.New(rand.NewPCG(seed, 34))
	var sum int
	for i := 1; i < len(dist); i += 2 {
		sum += dist[i].(int)
	}
	counts := make([]int, len(dist)/2)
	for range n {
		x := r.IntN(sum)
		for k := 0; k < len(counts); k++ {
			if x -= dist[2*k+1].(int); x < 0 {
				counts[k]++
				break
			}
		}
	}
	out := make([]any, 0, len(dist))
	for k, c := range counts {
		out = append(out, dist[2*k], c)
	}
	return out
}

// serviceDist is a service's CPU: 14 call paths with their weights.
var serviceDist = []any{
	"main;serve;parse;lex", 120, "main;serve;parse;alloc", 60, "main;serve;route", 40,
	"main;serve;handle;query;scan", 150, "main;serve;handle;query;decode", 90, "main;serve;handle;render;template", 110,
	"main;serve;handle;render;escape", 45, "main;serve;handle;log", 30, "main;serve;write;flush", 70,
	"main;gc;mark", 100, "main;gc;sweep", 35, "main;timer", 20, "main;serve;handle;auth;hash", 80, "main;idle", 50,
}

// TestBrowserDiffNoise: two samplings (20,000 samples each, fixed seeds) of
// one program differ by up to about a point per frame; the diff draws every
// frame neutral, as the noise of that many samples, where it painted the
// largest such change saturated. A real doubling of one function is drawn
// at full red, and the legend prints the scale and the rule.
func TestBrowserDiffNoise(t *testing.T) {
	base := webtest.StartServerWith(t, web.Config{})
	a := webtest.PostProfile(t, base, "run1.pb.gz", webtest.StacksPB(t, "", nil, sampled(1, 20000, serviceDist...)...))
	bID := webtest.PostProfile(t, base, "run2.pb.gz", webtest.StacksPB(t, "", nil, sampled(2, 20000, serviceDist...)...))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	run(t, b, "open the diff of two runs", chromedp.Navigate(base+"/p/"+a+"/diff/"+bID))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("the diff never drew: %v; page problems: %q", err, b.Problems())
	}
	pageProblems(t, b)
	// Every frame's fill, and its change, from the page's own description.
	type node struct {
		Path  string  `json:"path"`
		Delta float64 `json:"delta"`
		Color string  `json:"color"`
	}
	nodes := func() []node {
		return eval[[]node](t, b, `(() => { const t = window.viewer.tree; const out = [];
			for (let i = 1; i < t.length; i++) { const p = t.path(i); const d = window.viewer.describe(p);
				out.push({ path: p.join('>'), delta: d.delta, color: d.color }); }
			return out; })()`)
	}
	// The root is both profiles' whole: no change, the neutral fill.
	neutral := eval[string](t, b, `window.viewer.describe([]).color`)
	maxDelta := 0.0
	for _, n := range nodes() {
		maxDelta = max(maxDelta, math.Abs(n.Delta))
		if n.Color != neutral {
			t.Errorf("%s changed by %+.2f pp between two samplings of one program, and is drawn %s, not neutral %s", n.Path, n.Delta*100, n.Color, neutral)
		}
	}
	if maxDelta < 0.005 {
		t.Fatalf("the two samplings differ by at most %.2f pp: the test shows nothing", maxDelta*100)
	}
	if got := pixel(t, b, "main", "serve", "handle", "query", "scan"); max(got[0], got[1], got[2])-min(got[0], got[1], got[2]) > 30 {
		t.Errorf("scan is drawn rgb%v, not a neutral grey", got)
	}
	if got := eval[string](t, b, `document.querySelector('#diff-top td.grew, #diff-top td.shrank')?.closest('tr').dataset.name || ''`); got != "" {
		t.Errorf("the table marks %s as changed between two samplings of one program", got)
	}
	if got, want := eval[string](t, b, `[...document.querySelectorAll('#legend .legend-item')].map((e) => e.textContent).join(', ')`), "−10 pp, −3 pp, −1 pp, noise, +1 pp, +3 pp, +10 pp"; got != want {
		t.Errorf("the legend reads %q, want the scale's stops %q", got, want)
	}
	rule := text(t, b, "#diff-rule")
	for _, want := range []string{"red", "slower", "±10 pp", "3 standard errors"} {
		if !strings.Contains(rule, want) {
			t.Errorf("the diff's rule %q does not say %q", rule, want)
		}
	}
	b.Screenshot(t, "diff-noise")

	// The same program with scan's weight doubled: 20% -> 33% of the total.
	doubled := append([]any(nil), serviceDist...)
	for i := 0; i < len(doubled); i += 2 {
		if strings.HasSuffix(doubled[i].(string), ";scan") {
			doubled[i+1] = 2 * doubled[i+1].(int)
		}
	}
	cID := webtest.PostProfile(t, base, "run3.pb.gz", webtest.StacksPB(t, "", nil, sampled(3, 20000, doubled...)...))
	run(t, b, "open the diff against the doubled scan", chromedp.Navigate(base+"/p/"+a+"/diff/"+cID))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("the diff never drew: %v; page problems: %q", err, b.Problems())
	}
	if got := eval[float64](t, b, `window.viewer.describe(['main', 'serve', 'handle', 'query', 'scan']).delta`); got < 0.10 {
		t.Errorf("scan doubled, and its share grew by %.2f pp only", got*100)
	}
	if got := pixel(t, b, "main", "serve", "handle", "query", "scan"); !(got[0] > 180 && got[1] < 90 && got[2] < 90) {
		t.Errorf("scan doubled and is drawn rgb%v, not saturated red", got)
	}
	if got := eval[string](t, b, `window.viewer.describe(['main', 'timer']).color`); got != neutral {
		t.Errorf("timer (1%% of the total, 0.17 pp less) is drawn %s, not neutral", got)
	}
	pageProblems(t, b)
}

// TestBrowserDiffLayout: a deep diff's graph scrolls in its own pane with
// the changes table beside it at 1440x900, the page as tall as the window;
// on a 390 px phone the table follows the pane (a window's height down,
// not the graph's) and nothing is wider than the screen.
func TestBrowserDiffLayout(t *testing.T) {
	deep := "main"
	for i := range 300 {
		deep += fmt.Sprintf(";level%03d", i)
	}
	var before, after []any
	for i := range 40 {
		before = append(before, fmt.Sprintf("main;serve;fn%02d", i), 10+i)
		after = append(after, fmt.Sprintf("main;serve;fn%02d", i), 10+(i*7)%40)
	}
	before = append(before, deep, 200)
	after = append(after, deep, 400)
	base := webtest.StartServerWith(t, web.Config{})
	a := webtest.PostProfile(t, base, "before.pb.gz", webtest.StacksPB(t, "", nil, before...))
	bID := webtest.PostProfile(t, base, "after.pb.gz", webtest.StacksPB(t, "", nil, after...))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	run(t, b, "open the diff", chromedp.Navigate(base+"/p/"+a+"/diff/"+bID))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("the diff never drew: %v; page problems: %q", err, b.Problems())
	}
	box := func(sel string) rect {
		return eval[rect](t, b, fmt.Sprintf(`(r => ({x: r.left, y: r.top, width: r.width, height: r.height}))(document.querySelector(%q).getBoundingClientRect())`, sel))
	}
	if h := eval[float64](t, b, `window.viewer.graph.canvas.getBoundingClientRect().height`); h < 3000 {
		t.Fatalf("the graph is %.0f px tall: the test needs a deep one", h)
	}
	inner := eval[float64](t, b, `window.innerHeight`)
	chart, table, head := box("#chart"), box("#diff-top"), box(".top-section h2")
	if table.X < chart.X+chart.Width || head.Y < 0 || head.Y+head.Height > inner {
		t.Errorf("at 1440x900 the changes table is at (%.0f, %.0f), its heading at y=%.0f, the graph spans x %.0f..%.0f: want it beside the graph, in the window",
			table.X, table.Y, head.Y, chart.X, chart.X+chart.Width)
	}
	if row := box("#diff-top tbody tr"); row.Y+row.Height > inner {
		t.Errorf("at 1440x900 the first change is at y=%.0f, below the window (%.0f)", row.Y, inner)
	}
	if h := eval[float64](t, b, `document.documentElement.scrollHeight`); h > inner+2 {
		t.Errorf("at 1440x900 the page is %.0f px tall, want the window's %.0f (the graph scrolls in its pane)", h, inner)
	}
	b.Screenshot(t, "diff-1440")

	run(t, b, "a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	waitForJS(t, b, "the canvas follows", `document.getElementById('flame').getBoundingClientRect().width < 390`)
	if w := eval[float64](t, b, `document.documentElement.scrollWidth`); w > 390 {
		wide := eval[[]string](t, b, `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 391 || e.scrollWidth > e.clientWidth + 1).slice(0, 8).map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + e.getBoundingClientRect().right + ' ' + e.scrollWidth + '/' + e.clientWidth)`)
		t.Errorf("at 390 px the page is %.0f px wide; wider elements: %q", w, wide)
	}
	chart, table = box("#chart"), box("#diff-top")
	if table.Y < chart.Y+chart.Height {
		t.Errorf("at 390 px the changes table (y=%.0f) is not below the graph (bottom %.0f)", table.Y, chart.Y+chart.Height)
	}
	b.Screenshot(t, "diff-390")
	if y := table.Y + eval[float64](t, b, `window.scrollY`); y > 2*844 {
		t.Errorf("at 390x844 the changes table starts %.0f px down the page, want within two screens", y)
	}
	pageProblems(t, b)
}
