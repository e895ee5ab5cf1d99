package browsertest_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/pprof/profile"

	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// TestBrowserDeepStack draws a stack deeper than a canvas can be tall at full
// resolution (2,500 frames × 18 px): the graph is drawn at a lower
// resolution instead of staying blank.
func TestBrowserDeepStack(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test: skipped with -short")
	}
	const depth = 2500
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	s := &profile.Sample{Value: []int64{1e6}}
	for i := 0; i < depth; i++ {
		f := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("pkg.f%04d", i)}
		l := &profile.Location{ID: uint64(i + 1), Address: uint64(0x1000 + 16*i), Line: []profile.Line{{Function: f}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		s.Location = append([]*profile.Location{l}, s.Location...) // leaf first
	}
	p.Sample = []*profile.Sample{s}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServer(t)
	resp, err := http.Post(base+"/api/profiles", "application/octet-stream", &buf)
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ URL string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: HTTP %d, %v", resp.StatusCode, err)
	}
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the deep profile", chromedp.Navigate(base+created.URL))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("never drew: %v; %q", err, b.Problems())
	}
	// The deepest frame has colour where it is drawn, once the graph (which
	// scrolls inside its box and draws the rows it shows) is scrolled there.
	eval[bool](t, b, `new Promise(r => { document.getElementById('chart').scrollTop = 1e9; requestAnimationFrame(() => requestAnimationFrame(() => r(true))); })`)
	drawn := eval[bool](t, b, `(() => {
		const g = window.viewer.graph, t = window.viewer.tree, i = t.length - 1;
		if (t.label(i) !== 'pkg.f2499') return false;
		const r = g.rectOf(i), d = g.dpr;
		if (!r || g.canvas.height > 32767) return false;
		const px = g.ctx.getImageData(Math.floor((r.x + r.w / 2) * d), Math.floor((r.y + r.h / 2) * d), 1, 1).data;
		return px[0] + px[1] + px[2] < 3 * 250;
	})()`)
	if !drawn {
		t.Errorf("the deepest frame of a %d-frame stack is not drawn", depth)
	}
	noProblems(t, b)
}

// TestBrowserDropUpload drops a file on the upload page: the page posts it
// to the JSON API and opens the returned link.
func TestBrowserDropUpload(t *testing.T) {
	base := webtest.StartServer(t)
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the upload page", chromedp.Navigate(base+"/"))
	data := base64.StdEncoding.EncodeToString(webtest.BrowserProfile(t))
	run(t, b, "drop a profile", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const bytes = Uint8Array.from(atob(%q), c => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], 'dropped.pb', {type: 'application/octet-stream'}));
		const ev = (type) => new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true});
		document.body.dispatchEvent(ev('dragenter'));
		document.body.dispatchEvent(ev('drop'));
	})()`, data)))
	waitForJS(t, b, "the profile page", `location.pathname.startsWith('/p/')`)
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("flame graph never drew: %v; page problems %q", err, b.Problems())
	}
	frame(t, b, "main.main", "main.work", "main.parse")
	noProblems(t, b)

	// A file that is not a profile: the page says what was wrong.
	run(t, b, "open the upload page", chromedp.Navigate(base+"/"))
	run(t, b, "drop text", chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['hello, this is not a profile'], 'notes.txt'));
		document.body.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
	})()`))
	waitForJS(t, b, "an error message", `document.getElementById('upload-status').classList.contains('error')`)
	msg := text(t, b, "#upload-status")
	if !strings.Contains(msg, "notes.txt") || !strings.Contains(msg, "400") {
		t.Errorf("error for a text file = %q, want the file name and HTTP 400", msg)
	}
	b.Problems() // the failed POST is logged as a resource error; expected here

	// An unknown profile is a styled 404 page.
	run(t, b, "open an unknown profile", chromedp.Navigate(base+"/p/AAAAAAAAAAAAAAAAAAAAAA"))
	if got := text(t, b, ".status-code"); got != "404" {
		t.Errorf("unknown profile: status %q, want 404", got)
	}
}

func TestBrowserFlamePage(t *testing.T) {
	base := webtest.StartServer(t)
	b := browsertest.Start(t, browsertest.Options{})
	pb := filepath.Join(t.TempDir(), "cpu.pb")
	if err := os.WriteFile(pb, webtest.BrowserProfile(t), 0o644); err != nil {
		t.Fatal(err)
	}

	// Upload through the page's file input: choosing the file submits.
	run(t, b, "open the upload page", chromedp.Navigate(base+"/"))
	if got := text(t, b, "#max-upload"); got == "" {
		t.Errorf("the upload page does not show the upload limit")
	}
	run(t, b, "choose the file", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{pb}, chromedp.NodeReady))
	waitForJS(t, b, "the profile page", `location.pathname.startsWith('/p/')`)
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("flame graph never drew (body[data-ready]): %v; page problems: %q", err, b.Problems())
	}
	u := currentURL(t, b)
	if !profileURL.MatchString(u.Path) {
		t.Errorf("landed on %s, want /p/ID", u.Path)
	}
	noProblems(t, b)

	// The drawn tree has the frames of the profile.
	for _, path := range [][]string{
		{"main.main"}, {"main.main", "main.work", "main.parse"},
		{"main.main", "main.render", "main.parse", "runtime.mallocgc"},
	} {
		frame(t, b, path...)
	}

	// Search: a function's share, and nested matches counted once.
	search(t, b, "main.parse", "65.00%")
	if q := currentURL(t, b).Query().Get("q"); q != "main.parse" {
		t.Errorf("URL q = %q after searching, want main.parse", q)
	}
	search(t, b, "PARSE|render", "85.00%")
	search(t, b, "mallocgc", "40.00%")
	if got := eval[[]string](t, b, `Array.from(document.querySelectorAll('#top-table tr.match td.fn')).map(td => td.textContent)`); len(got) != 1 || got[0] != "runtime.mallocgc" {
		t.Errorf("top rows marked as matching %q, want [runtime.mallocgc]", got)
	}

	// Top functions table, from top.json: main.parse and
	// runtime.mallocgc both have 40 ms flat; mallocgc is 40% cumulative.
	rows := eval[[]string](t, b, `Array.from(document.querySelectorAll('#top-table tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent).join('|'))`)
	if len(rows) != 5 {
		t.Errorf("top table has %d rows, want 5 functions: %q", len(rows), rows)
	}
	if len(rows) > 0 && rows[0] != "40.0 ms|40.00%|65.0 ms|65.00%|main.parse" {
		t.Errorf("top row = %q, want main.parse with 40 ms flat and 65 ms cum", rows[0])
	}
	if !contains(rows, "40.0 ms|40.00%|40.0 ms|40.00%|runtime.mallocgc") {
		t.Errorf("top table lacks runtime.mallocgc 40 ms flat and cum: %q", rows)
	}
	run(t, b, "sort by name", chromedp.Click(chromedp.CSS(`#top-table [data-sort="name"]`)))
	waitForJS(t, b, "the top table by name", topReady)
	first := eval[string](t, b, `document.querySelector('#top-table tbody tr td.fn').textContent`)
	if first != "runtime.mallocgc" && first != "main.main" {
		t.Errorf("after sorting by name the first row is %q", first)
	}

	// Hover: the tooltip names the frame with its values in the unit.
	r := frame(t, b, "main.main", "main.render")
	run(t, b, "hover main.render", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "tooltip", `!document.getElementById('tooltip').hidden`)
	tip := eval[string](t, b, `document.getElementById('tooltip').innerText`)
	for _, want := range []string{"main.render", "Total", "25.0 ms", "25.00%", "Self", "0 ns", "0.00%"} {
		if !strings.Contains(tip, want) {
			t.Errorf("tooltip %q lacks %q", tip, want)
		}
	}

	// Click to zoom into main.work: the URL and breadcrumb hold the path.
	r = frame(t, b, "main.main", "main.work")
	run(t, b, "click main.work", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "zoom", `document.querySelector('#crumbs [aria-current]')?.textContent === 'main.work'`)
	waitForJS(t, b, "the zoomed top table", topReady)
	if z := currentURL(t, b).Query()["z"]; strings.Join(z, ">") != "main.main>main.work" {
		t.Errorf("URL z = %q after zooming, want [main.main main.work]", z)
	}
	// Zoomed, main.work spans the width and its children fill it 30:20.
	parse := frame(t, b, "main.main", "main.work", "main.parse")
	render := frame(t, b, "main.main", "main.work", "main.render")
	if ratio := parse.Width / render.Width; ratio < 1.45 || ratio > 1.55 {
		t.Errorf("zoomed widths parse %.1f render %.1f: ratio %.2f, want 1.5", parse.Width, render.Width, ratio)
	}
	if w := eval[float64](t, b, `document.getElementById('flame').getBoundingClientRect().width`); parse.Width+render.Width < w*0.98 {
		t.Errorf("zoomed children are %.0f px wide in a %.0f px canvas", parse.Width+render.Width, w)
	}
	// The top table follows the zoom: functions under main.work, with
	// shares of main.work's 50 ms.
	rows = eval[[]string](t, b, `Array.from(document.querySelectorAll('#top-table tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent).join('|'))`)
	if len(rows) != 3 || !contains(rows, "30.0 ms|60.00%|30.0 ms|60.00%|main.parse") || !contains(rows, "0|0.00%|50.0 ms|100.00%|main.work") {
		t.Errorf("top table zoomed into main.work: %q", rows)
	}
	// A link with the view state reproduces it.
	run(t, b, "copy the link", chromedp.Click(chromedp.CSS("#copy-link")))
	waitForJS(t, b, "copied", `document.getElementById('copy-link').textContent === 'Copied'`)
	shared := currentURL(t, b).String()
	run(t, b, "open the shared link", chromedp.Navigate(shared))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForJS(t, b, "the shared view's top table", topReady)
	if got := eval[string](t, b, `document.getElementById('search').value`); got != "mallocgc" {
		t.Errorf("shared link: search box %q, want mallocgc", got)
	}
	if got := text(t, b, "#match"); !strings.Contains(got, "40.00%") {
		t.Errorf("shared link: match %q, want 40.00%%", got)
	}
	if got := text(t, b, "#crumbs [aria-current]"); got != "main.work" {
		t.Errorf("shared link: zoomed to %q, want main.work", got)
	}
	// reload() (what on-demand symbolization calls) refetches flame.json
	// and redraws, keeping the zoom and the search.
	loads := eval[string](t, b, `document.body.dataset.loads`)
	run(t, b, "reload", chromedp.Evaluate[chromedp.Void](`window.viewer.reload()`, chromedp.EvalAwaitPromise))
	if got := eval[string](t, b, `document.body.dataset.loads`); got == loads {
		t.Errorf("reload did not load again (data-loads still %s)", got)
	}
	if got := text(t, b, "#crumbs [aria-current]"); got != "main.work" {
		t.Errorf("after reload: zoomed to %q, want main.work", got)
	}
	if got := text(t, b, "#match"); !strings.Contains(got, "40.00%") {
		t.Errorf("after reload: match %q, want 40.00%%", got)
	}
	// Escape goes back to the whole profile.
	run(t, b, "press Escape", chromedp.KeyEvent("\x1b"))
	waitForJS(t, b, "zoom reset", `document.getElementById('crumbs').hidden && document.getElementById('reset').disabled`)
	if z := currentURL(t, b).Query()["z"]; len(z) != 0 {
		t.Errorf("URL z = %q after Escape, want none", z)
	}
	// And the breadcrumb goes back too.
	r = frame(t, b, "main.main", "main.work")
	run(t, b, "click main.work again", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "zoom", `!document.getElementById('reset').disabled`)
	run(t, b, "click the root crumb", chromedp.Click(chromedp.CSS("#crumbs button.crumb")))
	waitForJS(t, b, "zoom reset by crumb", `document.getElementById('crumbs').hidden`)

	// Icicle (root on top) to flame (root at the bottom).
	icicleMain := frame(t, b, "main.main")
	icicleWork := frame(t, b, "main.main", "main.work")
	if icicleMain.Y >= icicleWork.Y {
		t.Errorf("icicle: main.main at y=%.0f is not above main.work at y=%.0f", icicleMain.Y, icicleWork.Y)
	}
	run(t, b, "switch to flame", chromedp.Click(chromedp.CSS("#mode-flame")))
	flameMain := frame(t, b, "main.main")
	flameWork := frame(t, b, "main.main", "main.work")
	if flameMain.Y <= flameWork.Y {
		t.Errorf("flame: main.main at y=%.0f is not below main.work at y=%.0f", flameMain.Y, flameWork.Y)
	}
	if m := currentURL(t, b).Query().Get("mode"); m != "flame" {
		t.Errorf("URL mode = %q, want flame", m)
	}

	// Sample type: counts instead of time.
	loads = eval[string](t, b, `document.body.dataset.loads`)
	run(t, b, "choose samples", chromedp.Evaluate[chromedp.Void](
		`(() => { const s = document.getElementById('si'); s.value = 'samples'; s.dispatchEvent(new Event('change')); })()`))
	waitForJS(t, b, "samples drawn", fmt.Sprintf(`document.body.dataset.loads !== %q`, loads))
	waitForJS(t, b, "samples' top table", topReady)
	// mallocgc: 2+1 of 9 samples.
	if got := text(t, b, "#match"); !strings.Contains(got, "33.33%") {
		t.Errorf("samples: match %q, want 33.33%%", got)
	}
	if si := currentURL(t, b).Query().Get("si"); si != "samples" {
		t.Errorf("URL si = %q, want samples", si)
	}
	run(t, b, "switch back to icicle", chromedp.Click(chromedp.CSS("#mode-icicle")))

	// Keyboard: arrows walk from the root to the widest child, Enter zooms.
	run(t, b, "walk with arrows",
		chromedp.Focus(chromedp.CSS("#flame-hover")),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.KeyEvent(kb.ArrowDown),
	)
	if tip := eval[string](t, b, `document.getElementById('tooltip').innerText`); !strings.HasPrefix(tip, "main.work") {
		t.Errorf("after two ArrowDowns the tooltip is %q, want main.work", tip)
	}
	run(t, b, "zoom with Enter", chromedp.KeyEvent(kb.Enter))
	waitForJS(t, b, "keyboard zoom", `document.querySelector('#crumbs [aria-current]')?.textContent === 'main.work'`)
	run(t, b, "zoom out with Escape", chromedp.KeyEvent(kb.Escape))
	waitForJS(t, b, "zoom reset", `document.getElementById('crumbs').hidden`)
	noProblems(t, b)
	b.Screenshot(t, "flame-page")

	// The links on the page work; the exports sit in the Export menu, shown
	// when it is opened.
	if eval[bool](t, b, `document.getElementById('svg-link').checkVisibility()`) {
		t.Error("flame.svg shows before the Export menu is opened")
	}
	run(t, b, "open the Export menu", chromedp.Click("#export-menu > summary", chromedp.NodeVisible))
	if !eval[bool](t, b, `['svg-link','pprof-link'].every((id) => { const a = document.getElementById(id), r = a.getBoundingClientRect(); return a.checkVisibility() && r.width > 0 && r.right <= innerWidth; })`) {
		t.Error("the opened Export menu does not show flame.svg and profile.pb.gz inside the window")
	}
	for _, id := range []string{"svg-link", "pprof-link", "top-link"} {
		href := eval[string](t, b, fmt.Sprintf("document.getElementById(%q).href", id))
		status := eval[int](t, b, fmt.Sprintf("fetch(%q).then(r => r.status)", href))
		if status != 200 {
			t.Errorf("%s %s: HTTP %d", id, href, status)
		}
	}

	// The canvas follows the window's width and the device pixel ratio.
	run(t, b, "narrow hi-dpi window", chromedp.EmulateViewport(900, 800, chromedp.EmulateScale(2)))
	waitForJS(t, b, "canvas resized", `(() => {
		const c = document.getElementById('flame'), w = c.getBoundingClientRect().width;
		return w > 700 && w < 900 && c.width === Math.round(w * 2);
	})()`)
	if r := frame(t, b, "main.main"); r.Width > 900 {
		t.Errorf("after resizing main.main is %.0f px wide", r.Width)
	}

	// The server-rendered top page sorts by its headers.
	run(t, b, "open the top page", chromedp.Click(chromedp.CSS("#top-link")))
	waitForJS(t, b, "the top page", `location.pathname.endsWith('/top') && document.readyState === 'complete'`)
	names := func() []string {
		return eval[[]string](t, b, `Array.from(document.querySelectorAll('#top tbody td.fn')).map(td => td.textContent)`)
	}
	if got := names(); len(got) != 5 {
		t.Errorf("top page rows %q, want 5 functions", got)
	}
	run(t, b, "sort by function", chromedp.Click(chromedp.CSS(`#top [data-sort="name"]`)))
	if got := names(); !sort.StringsAreSorted(got) || len(got) != 5 {
		t.Errorf("top page sorted by name: %q", got)
	}
	run(t, b, "sort by cum", chromedp.Click(chromedp.CSS(`#top [data-sort="cum"]`)))
	if got := names(); len(got) == 0 || got[0] != "main.main" {
		t.Errorf("top page sorted by cum: %q, want main.main first", got)
	}
	noProblems(t, b)
}

// TestBrowserLoopbackNames checks a server on loopback, which refuses a
// foreign Host (DNS rebinding), still works for a browser that opens it as
// http://127.0.0.1:PORT/ or http://localhost:PORT/: a dropped upload is
// stored and its flame graph drawn, with no page problem.
func TestBrowserLoopbackNames(t *testing.T) {
	base := webtest.StartServer(t)
	port := base[strings.LastIndex(base, ":"):]
	b := browsertest.Start(t, browsertest.Options{})
	data := base64.StdEncoding.EncodeToString(webtest.BrowserProfile(t))
	for _, origin := range []string{"http://127.0.0.1" + port, "http://localhost" + port} {
		run(t, b, "open the upload page at "+origin, chromedp.Navigate(origin+"/"))
		run(t, b, "drop a profile", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			const bytes = Uint8Array.from(atob(%q), c => c.charCodeAt(0));
			const dt = new DataTransfer();
			dt.items.add(new File([bytes], 'dropped.pb', {type: 'application/octet-stream'}));
			document.body.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
		})()`, data)))
		waitForJS(t, b, "the profile page at "+origin, `location.pathname.startsWith('/p/')`)
		if err := b.WaitReady(20 * time.Second); err != nil {
			t.Fatalf("%s: flame graph never drew: %v; page problems %q", origin, err, b.Problems())
		}
		frame(t, b, "main.main", "main.work", "main.parse")
		if u := currentURL(t, b); u.Scheme+"://"+u.Host != origin {
			t.Errorf("the page left %s for %s", origin, u)
		}
		noProblems(t, b)
	}
}
