package browsertest_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/webtest"
)

// TestBrowserTimeline records nothing new: it uploads a real perf.data
// (testdata/perf/system.data, perf record -a), drags across the first half
// of the flame page's timeline in chromium, and checks what a user would:
// the URL gets t=, the graph's total shrinks to the samples of the
// selected buckets (the timeline's own per-bucket totals), the top table
// follows, and a reload of that URL shows the same filtered graph.
func TestBrowserTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	data, err := os.ReadFile("../../testdata/perf/system.data")
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Ingest(context.Background(), data, "system.perf.data")
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	b := startStrict(t)
	run(t, b.Browser, "open the flame page", chromedp.Navigate(ts.URL+"/p/"+id))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// The page is laid out (the legend, filled in idle time after the
	// graph, is drawn) before the drag is aimed, as a user aims at what
	// they see.
	waitForJS(t, b.Browser, "the timeline", `!document.getElementById('timeline').hidden && window.viewerTimeline.data && document.getElementById('legend').childElementCount > 0`)
	whole := eval[float64](t, b.Browser, `window.viewer.tree.rootTotal`)
	rows := eval[float64](t, b.Browser, `window.viewerTimeline.data.rows.length`)
	if rows < 2 {
		t.Errorf("the timeline of a perf record -a has %v thread rows", rows)
	}
	r := eval[*rect](t, b.Browser, `(() => { const r = document.getElementById('timeline-canvas').getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; })()`)
	y := r.Y + 5
	x0, x1 := r.X+1, r.X+r.Width/2
	run(t, b.Browser, "drag across the first half of the timeline",
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, (x0+x1)/2, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, y, chromedp.ButtonLeft))
	waitForJS(t, b.Browser, "the graph redrawn for the range", `document.body.dataset.loads === '2' && window.viewerTimeline.timings.length === 1`)
	tq := currentURL(t, b.Browser).Query().Get("t")
	if tq == "" {
		t.Fatalf("the URL %s has no t= after selecting a range", currentURL(t, b.Browser))
	}
	// What the selected buckets hold, from the timeline itself.
	want := eval[float64](t, b.Browser, fmt.Sprintf(`(() => {
		const d = window.viewerTimeline.data, [a, z] = %q.split('-').map(Number), w = d.bucket_ns / 1e9;
		let s = 0; d.total.forEach((v, i) => { const at = i * w; if (at >= a - 1e-9 && at < z - 1e-9) s += v; }); return s; })()`, tq))
	got := eval[float64](t, b.Browser, `window.viewer.tree.rootTotal`)
	if got != want || got <= 0 || got >= whole {
		t.Errorf("t=%s: the graph's total is %v; the timeline's buckets in it hold %v, the whole recording %v", tq, got, want, whole)
	}
	waitForJS(t, b.Browser, "the top table for the range", topReady)
	if s := text(t, b.Browser, "#timeline output"); !strings.Contains(s, "Showing") {
		t.Errorf("the timeline says %q after a selection", s)
	}

	run(t, b.Browser, "reload", chromedp.Reload())
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if after := eval[float64](t, b.Browser, `window.viewer.tree.rootTotal`); after != got {
		t.Errorf("after a reload of %s the graph's total is %v, before it %v", currentURL(t, b.Browser), after, got)
	}
	waitForJS(t, b.Browser, "the timeline after the reload", `window.viewerTimeline.data && document.querySelector('#timeline output')?.textContent.includes('Showing')`)
	if u := eval[string](t, b.Browser, `document.getElementById('top-link').getAttribute('href')`); !strings.Contains(u, "t=") {
		t.Errorf("the Top table link %q drops the range", u)
	}
	run(t, b.Browser, "show the whole recording", chromedp.Click(chromedp.CSS("#timeline-clear")))
	waitForJS(t, b.Browser, "the whole graph again", fmt.Sprintf(`window.viewer.tree.rootTotal === %v && !location.search.includes('t=')`, whole))
	b.check(t, "flame with timeline")

	// A range past the recording's end says so, not that the profile has
	// no samples for its sample type.
	run(t, b.Browser, "open a range past the end", chromedp.Navigate(ts.URL+"/p/"+id+"?t=5000-6000"))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForJS(t, b.Browser, "the empty range's message", `document.getElementById('chart-status').textContent.includes('No samples in this time range')`)
}

// TestBrowserTimelineKept: on a perf script of two events (FlameGraph's
// cycles and instructions, with sample times), the flame page's timeline
// follows the sample type chosen on the page (timeline.json?si= of the
// new type); a range dragged on it is kept by the frame menu's and the
// detail strip's links and by the Filters form, and "Whole recording"
// takes it out of that form again.
func TestBrowserTimelineKept(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	data, err := os.ReadFile("../../testdata/peers/flamegraph/perf-cycles-instructions-01.txt")
	if err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "perf.txt", data)
	b := startStrict(t)
	run(t, b.Browser, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForJS(t, b.Browser, "the timeline", `!document.getElementById('timeline').hidden && window.viewerTimeline.data && document.getElementById('legend').childElementCount > 0`)
	first := eval[string](t, b.Browser, `document.getElementById('si').value`)
	other := eval[string](t, b.Browser, `[...document.getElementById('si').options].map((o) => o.value).find((v) => v !== document.getElementById('si').value)`)
	// The timeline shows what timeline.json says for a sample type.
	shows := func(si string) string {
		return fmt.Sprintf(`fetch(location.pathname + '/timeline.json?si=%s').then((r) => r.json()).then((d) => JSON.stringify(d.total) === JSON.stringify(window.viewerTimeline.data.total))`, si)
	}
	if !eval[bool](t, b.Browser, shows(first)) || eval[bool](t, b.Browser, shows(other)) {
		t.Fatalf("the timeline of %s does not show timeline.json?si=%s, or %s's is the same", first, first, other)
	}
	run(t, b.Browser, "choose the other sample type", chromedp.SetValue(chromedp.CSS("#si"), other),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('si').dispatchEvent(new Event('change'))`))
	waitForJS(t, b.Browser, "the graph of "+other, fmt.Sprintf(`window.viewer.tree.sampleType === %q`, other))
	deadline := time.Now().Add(10 * time.Second)
	for !eval[bool](t, b.Browser, shows(other)) {
		if time.Now().After(deadline) {
			t.Fatalf("after choosing %s the timeline still shows %s's samples", other, first)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Aimed once the page is still: the new type's legend, above the
	// timeline, is drawn in idle time.
	r := eval[*rect](t, b.Browser, `new Promise((done) => {
		let last = '', same = 0;
		const look = () => {
			const r = document.getElementById('timeline-canvas').getBoundingClientRect();
			const now = JSON.stringify([r.x, r.y, r.width, r.height]);
			same = now === last ? same + 1 : 0;
			last = now;
			if (same >= 10) done({x: r.x, y: r.y, width: r.width, height: r.height}); else requestAnimationFrame(look);
		};
		look();
	})`)
	y, x0, x1 := r.Y+5, r.X+r.Width/4, r.X+r.Width*3/4
	run(t, b.Browser, "drag across the middle of the timeline",
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, y, chromedp.ButtonLeft))
	waitForJS(t, b.Browser, "the graph of the range", `window.viewerTimeline.timings.length === 1`)
	tq := currentURL(t, b.Browser).Query().Get("t")
	if tq == "" {
		t.Fatalf("the URL %s has no t= after a drag", currentURL(t, b.Browser))
	}
	// The frame menu and the detail strip of the first frame drawn.
	path := eval[[]string](t, b.Browser, `window.viewer.drawnFrames()[0]`)
	if !eval[bool](t, b.Browser, fmt.Sprintf(`window.viewerFrameMenu.open(%s)`, jsStrings(path))) {
		t.Fatalf("no frame menu for %q", path)
	}
	f := frame(t, b.Browser, path...)
	run(t, b.Browser, "click the frame", chromedp.MouseClickXY(f.X+f.Width/2, f.Y+f.Height/2))
	waitForJS(t, b.Browser, "the detail strip", `!document.getElementById('detail').hidden`)
	links := eval[[]string](t, b.Browser, `[...document.querySelectorAll('#frame-menu a, #detail a')].map((a) => a.href)`)
	if len(links) < 12 {
		t.Errorf("the frame menu and the detail strip have %d links, want 6 each", len(links))
	}
	for _, l := range links {
		if u, err := url.Parse(l); err != nil || u.Query().Get("t") != tq || u.Query().Get("si") != other {
			t.Errorf("the link %s drops the range t=%s or si=%s", l, tq, other)
		}
	}
	// The header's links follow the sample type and the range chosen in
	// place: they kept the page's first si and no t.
	navKeeps := func(tq string) {
		t.Helper()
		nav := eval[[]string](t, b.Browser, `[...document.querySelectorAll('nav.site-nav a[data-keep]')].map((a) => a.href)`)
		if len(nav) != 4 {
			t.Errorf("the header has %d view links, want Flame graph, Top, Time order and Types: %q", len(nav), nav)
		}
		for _, l := range nav {
			u, err := url.Parse(l)
			if err != nil {
				t.Fatal(err)
			}
			want := tq
			if strings.HasSuffix(u.Path, "/types") {
				want = "" // the data-type page reads no range
			}
			if u.Query().Get("si") != other || u.Query().Get("t") != want {
				t.Errorf("the header link %s: want si=%s and t=%q", l, other, want)
			}
		}
	}
	navKeeps(tq)

	filter := func(f string) url.Values {
		t.Helper()
		run(t, b.Browser, "filter f="+f, chromedp.Evaluate[chromedp.Void](`document.getElementById('filters-pop').open = true`),
			chromedp.SetValue(chromedp.CSS("#filter-f"), f), chromedp.Submit(chromedp.CSS("#filter-f")))
		waitForJS(t, b.Browser, "the filtered page", fmt.Sprintf(`new URLSearchParams(location.search).get('f') === %q`, f))
		if err := b.WaitReady(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		return currentURL(t, b.Browser).Query()
	}
	if q := filter("."); q.Get("t") != tq || q.Get("si") != other {
		t.Errorf("the Filters form went to %s, want t=%s and si=%s kept", currentURL(t, b.Browser), tq, other)
	}
	waitForJS(t, b.Browser, "the timeline", `window.viewerTimeline.data && !document.getElementById('timeline-clear').hidden`)
	run(t, b.Browser, "show the whole recording", chromedp.Click(chromedp.CSS("#timeline-clear")))
	waitForJS(t, b.Browser, "the whole recording", `!location.search.includes('t=') && window.viewerTimeline.timings.length === 1`)
	if u := eval[string](t, b.Browser, `document.getElementById('filter-clear').getAttribute('href')`); strings.Contains(u, "t=") {
		t.Errorf("after Whole recording Clear filters goes to %s, with a range", u)
	}
	navKeeps("")
	if q := filter(".*"); q.Has("t") {
		t.Errorf("after Whole recording the Filters form went to %s, with a range", currentURL(t, b.Browser))
	}
	b.check(t, "timeline kept")
}
