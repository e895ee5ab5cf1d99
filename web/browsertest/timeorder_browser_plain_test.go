package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/webtest"
)

// TestBrowserTimeOrder uploads a real perf recording of a program with
// two named worker threads and a forked child (testdata/perf/multi.data,
// perf record of testdata/perf/threads), follows the flame page's "Time
// order" link in chromium, and checks what a user would: a lane per
// thread, named as the timeline names it, with boxes drawn in the flame
// graph's colors; a range dragged on the timeline narrows the view to its
// threads (the main thread is done spinning by then); a box clicked zooms
// to its time span, which the URL and the timeline show; Zoom out goes
// back, and the timeline's "Whole recording" shows every thread again.
func TestBrowserTimeOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	data, err := os.ReadFile("../../testdata/perf/multi.data")
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Ingest(context.Background(), data, "multi.perf.data")
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
	run(t, b.Browser, "follow the Time order link", chromedp.Click(chromedp.CSS(`a[href="/p/`+id+`/time"]`), chromedp.NodeVisible))
	waitForJS(t, b.Browser, "the time-order view", `location.pathname.endsWith('/time') && document.body.dataset.timeorderLoads === '1' && window.viewerTimeline && window.viewerTimeline.data`)

	// A lane per thread of the timeline, and each lane's boxes drawn in
	// the flame graph's colors where time.json puts them.
	threads := func() []string {
		return eval[[]string](t, b.Browser, `window.viewerTimeOrder.data.threads.map((th) => th.name)`)
	}
	whole := threads()
	rows := eval[[]string](t, b.Browser, `window.viewerTimeline.data.rows.map((r) => r.name)`)
	slices.Sort(rows)
	if got := slices.Sorted(slices.Values(whole)); fmt.Sprint(got) != fmt.Sprint(rows) || len(whole) < 3 {
		t.Errorf("the view's threads %q; the timeline's %q", got, rows)
	}
	for _, name := range []string{"worker-a", "worker-b", "threads"} {
		if !slices.ContainsFunc(whole, func(s string) bool { return strings.HasPrefix(s, name+" ") }) {
			t.Errorf("no lane for thread %s in %q", name, whole)
		}
	}
	// The canvas's pixel at the middle of each lane's widest box is the
	// color the flame graph gives its function.
	drawn := eval[[]string](t, b.Browser, `(async () => {
		const { frameColor } = await import('/static/flame.js');
		const c = document.getElementById('timeorder-canvas'), d = window.viewerTimeOrder.data;
		const g = c.getContext('2d'), dpr = c.width / c.clientWidth, w = c.clientWidth;
		const out = [];
		let top = 0;
		for (const th of d.threads) {
			let best = -1;
			for (let k = 0; k < th.boxes.length; k += 5) if (best < 0 || th.boxes[k + 1] - th.boxes[k] > th.boxes[best + 1] - th.boxes[best]) best = k;
			const bx = th.boxes;
			const x = ((bx[best] + bx[best + 1]) / 2 - d.from_ns) / (d.to_ns - d.from_ns) * w;
			const y = top + 20 + bx[best + 2] * 16 + 2;
			const p = g.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data;
			const hex = '#' + [p[0], p[1], p[2]].map((v) => v.toString(16).padStart(2, '0')).join('');
			const m = d.mapping[bx[best + 3]];
			const want = frameColor(d.names[bx[best + 3]], m >= 0 ? d.mappings[m] : '')[0];
			out.push(th.name + ' ' + d.names[bx[best + 3]] + ': ' + (hex === want ? 'ok' : hex + ' want ' + want));
			top += 20 + th.depth * 16 + 10;
		}
		return out;
	})()`)
	for _, s := range drawn {
		if !strings.HasSuffix(s, ": ok") {
			t.Errorf("box not drawn in its color: %s", s)
		}
	}

	// Drag across the last quarter of the timeline: the main thread and
	// the child were done by then, the workers were not.
	r := eval[*rect](t, b.Browser, `(() => { const r = document.getElementById('timeline-canvas').getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; })()`)
	y := r.Y + 5
	x0, x1 := r.X+r.Width*0.75, r.X+r.Width-1
	run(t, b.Browser, "drag across the last quarter of the timeline",
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, (x0+x1)/2, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, y, chromedp.ButtonLeft))
	waitForJS(t, b.Browser, "the view for the range", `document.body.dataset.timeorderLoads === '2'`)
	tq := currentURL(t, b.Browser).Query().Get("t")
	if tq == "" {
		t.Fatalf("the URL %s has no t= after selecting a range", currentURL(t, b.Browser))
	}
	var from, to float64
	fmt.Sscanf(strings.Replace(tq, "-", " ", 1), "%g %g", &from, &to)
	got := eval[[]float64](t, b.Browser, `[window.viewerTimeOrder.data.from_ns, window.viewerTimeOrder.data.to_ns]`)
	if got[0] != float64(int64(from*1e9)) || got[1] != float64(int64(to*1e9)) || got[0] <= 0 {
		t.Errorf("t=%s: the view shows [%v, %v) ns", tq, got[0], got[1])
	}
	late := threads()
	if len(late) == 0 || len(late) >= len(whole) || slices.ContainsFunc(late, func(s string) bool { return !strings.HasPrefix(s, "worker-") }) {
		t.Errorf("t=%s: the view's threads %q; want the workers alone (of %q)", tq, late, whole)
	}
	if s := text(t, b.Browser, "#timeorder-scope"); !strings.Contains(s, "Showing") {
		t.Errorf("the view's scope says %q after a range was chosen", s)
	}
	if h := eval[string](t, b.Browser, `document.getElementById('flame-link').getAttribute('href')`); !strings.Contains(h, "t="+tq) {
		t.Errorf("the Flame graph link %q drops the range %s", h, tq)
	}

	// Click the middle of the first lane's deepest box that is not the
	// whole range: the view zooms to its buckets, the URL and the
	// timeline follow.
	target := eval[[]float64](t, b.Browser, `(() => {
		const c = document.getElementById('timeorder-canvas').getBoundingClientRect(), d = window.viewerTimeOrder.data, th = d.threads[0], bx = th.boxes;
		let best = -1;
		for (let k = 0; k < bx.length; k += 5) if ((bx[k] > d.from_ns || bx[k + 1] < d.to_ns) && (best < 0 || bx[k + 2] > bx[best + 2])) best = k;
		if (best < 0) return [];
		const x = c.x + ((bx[best] + bx[best + 1]) / 2 - d.from_ns) / (d.to_ns - d.from_ns) * c.width;
		return [x, c.y + 20 + bx[best + 2] * 16 + 8, bx[best], bx[best + 1]];
	})()`)
	if len(target) != 4 {
		t.Fatalf("the first lane has no box narrower than the range: %s", eval[string](t, b.Browser, `JSON.stringify(window.viewerTimeOrder.data.threads[0])`))
	}
	run(t, b.Browser, "hover the box", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, target[0], target[1]))
	waitForJS(t, b.Browser, "the tooltip", `!document.getElementById('timeorder-tip').hidden`)
	if s := text(t, b.Browser, "#timeorder-tip"); !strings.Contains(s, " s") || !strings.Contains(s, "ms") {
		t.Errorf("the tooltip says %q; want the name and the time span", s)
	}
	before := text(t, b.Browser, "#timeline output")
	run(t, b.Browser, "click the box", chromedp.MouseClickXY(target[0], target[1]))
	waitForJS(t, b.Browser, "the view zoomed to the box", `document.body.dataset.timeorderLoads === '3'`)
	zq := currentURL(t, b.Browser).Query().Get("t")
	zoomed := eval[[]float64](t, b.Browser, `[window.viewerTimeOrder.data.from_ns, window.viewerTimeOrder.data.to_ns, window.viewerTimeOrder.data.bucket_ns]`)
	if zq == tq || zoomed[0] > target[2] || zoomed[1] < target[3] || zoomed[0] <= target[2]-zoomed[2] || zoomed[1] >= target[3]+zoomed[2] {
		t.Errorf("clicked a box over [%v, %v) ns: t=%s, the view shows [%v, %v)", target[2], target[3], zq, zoomed[0], zoomed[1])
	}
	if s := text(t, b.Browser, "#timeline output"); s == before || !strings.Contains(s, "Showing") {
		t.Errorf("the timeline says %q after the zoom to t=%s (before it %q)", s, zq, before)
	}
	run(t, b.Browser, "zoom out", chromedp.Click(chromedp.CSS("#timeorder-out")))
	waitForJS(t, b.Browser, "the range before the click", fmt.Sprintf(`document.body.dataset.timeorderLoads === '4' && new URLSearchParams(location.search).get('t') === %q`, tq))
	run(t, b.Browser, "show the whole recording", chromedp.Click(chromedp.CSS("#timeline-clear")))
	waitForJS(t, b.Browser, "the whole recording again", `document.body.dataset.timeorderLoads === '5' && !location.search.includes('t=') && window.viewerTimeOrder.data.from_ns === 0`)
	if got := threads(); fmt.Sprint(got) != fmt.Sprint(whole) {
		t.Errorf("the whole recording again: threads %q, before %q", got, whole)
	}
	// A range past the recording's end names the range and the
	// recording's length; it said "0.000–0.000 s".
	run(t, b.Browser, "open a range past the end", chromedp.Navigate(ts.URL+"/p/"+id+"/time?t=1000-1001"))
	waitForJS(t, b.Browser, "the empty range", `document.body.dataset.timeorderLoads === '1' && !document.getElementById('timeorder-status').hidden`)
	if s := text(t, b.Browser, "#timeorder-status"); !strings.Contains(s, "1000.") || !strings.Contains(s, "1001.") || !strings.Contains(s, "long") {
		t.Errorf("a range past the end says %q; want the range asked for and the recording's length", s)
	}
	if s := text(t, b.Browser, "#timeorder-scope"); strings.Contains(s, "0.000–0.000") || strings.Contains(s, "0 ns") {
		t.Errorf("a range past the end: the scope line says %q", s)
	}
	b.check(t, "time order")
}

// TestBrowserTimeOrderNoTimes: the time-order page of a profile whose
// samples have no times says, in one visible line, that the view needs
// them and which inputs keep them, instead of an empty chart.
func TestBrowserTimeOrderNoTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Ingest(context.Background(), webtest.BrowserProfile(t), "cpu.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	b := startStrict(t)
	run(t, b.Browser, "open the time-order page", chromedp.Navigate(ts.URL+"/p/"+id+"/time"))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	note := eval[string](t, b.Browser, `(() => { const n = document.getElementById('timeorder-none'); return n.offsetHeight > 0 ? n.textContent : ''; })()`)
	if !strings.Contains(note, "needs sample times") || !strings.Contains(note, "perf.data") {
		t.Errorf("the page shows %q; want the line saying the view needs sample times and which inputs have them", note)
	}
	if eval[bool](t, b.Browser, `document.getElementById('timeorder').offsetHeight > 0`) {
		t.Errorf("an empty chart shows beside the note")
	}
	b.check(t, "time order without times")
}
