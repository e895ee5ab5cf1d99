package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// recordFrames makes the flame page note, at each animation frame, the
// zoom path its graph last drew, the top table's scope line and its
// rows' names (window.__frames), so a test can tell whether the table
// showed the view the graph did in the same frame.
const recordFrames = `(() => {
	const g = window.viewer.graph;
	const draw = g.draw.bind(g);
	window.__drawn = g.zoomPath.slice();
	g.draw = () => { draw(); window.__drawn = g.zoomPath.slice(); window.__drawnTotal = g.tree.rootTotal; };
	window.__frames = [];
	const tick = () => {
		window.__frames.push({
			drawn: window.__drawn.slice(), total: window.__drawnTotal || 0,
			scope: document.getElementById('top-scope').textContent,
			state: document.getElementById('top-table').dataset.state,
			rows: [...document.querySelectorAll('#top-table tbody tr')].map(r => r.dataset.name),
		});
		if (window.__frames.length < 2000) requestAnimationFrame(tick);
	};
	requestAnimationFrame(tick);
	return true;
})()`

type viewFrame struct {
	Drawn []string `json:"drawn"`
	Total float64  `json:"total"`
	Scope string   `json:"scope"`
	State string   `json:"state"`
	Rows  []string `json:"rows"`
}

// TestBrowserTableFollowsZoom: on the flame page, the frame that first
// shows the graph zoomed into main.work shows the top table of main.work
// too (its scope line names it; its rows are main.work's functions), and
// the frame that first shows the graph zoomed out again shows the whole
// profile's table. Before, the table came a top.json later (250-350 ms on
// a loaded server), still saying "whole profile" beside the zoomed graph.
func TestBrowserTableFollowsZoom(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "cpu.pb.gz", webtest.BrowserProfile(t))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id+"?si=cpu"))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("never drew: %v; %q", err, b.Problems())
	}
	waitForJS(t, b, "the top table", topReady)
	eval[bool](t, b, recordFrames)
	r := frame(t, b, "main.main", "main.work")
	run(t, b, "click main.work", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "the zoom and its table", `document.body.dataset.zoom === 'ready' && `+topReady+` && document.getElementById('top-scope').textContent.startsWith('within main.work')`)
	eval[bool](t, b, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
	first := func(what string, path []string) viewFrame {
		t.Helper()
		frames := eval[[]viewFrame](t, b, `window.__frames`)
		for _, f := range frames {
			if slices.Equal(f.Drawn, path) {
				return f
			}
		}
		t.Fatalf("%s: no frame shows the graph at %q (%d frames)", what, path, len(frames))
		return viewFrame{}
	}
	f := first("zoom", []string{"main.main", "main.work"})
	if !strings.HasPrefix(f.Scope, "within main.work") || f.State != "ready" {
		t.Errorf("the first frame with the graph zoomed into main.work has the table at %q (%s)", f.Scope, f.State)
	}
	if got := slices.Sorted(slices.Values(f.Rows)); !slices.Equal(got, []string{"main.parse", "main.render", "main.work"}) {
		t.Errorf("the first frame with the graph zoomed into main.work lists %q", f.Rows)
	}
	if title := eval[string](t, b, `document.getElementById('top-scope').title`); !strings.Contains(title, "main.main › main.work") {
		t.Errorf("the scope's title %q does not give the zoom path", title)
	}

	eval[bool](t, b, `(window.__frames = [], true)`)
	run(t, b, "Escape zooms out", chromedp.KeyEvent("\x1b"))
	waitForJS(t, b, "the whole profile's table", `document.body.dataset.zoom === 'ready' && `+topReady+` && document.getElementById('top-scope').textContent === 'whole profile'`)
	eval[bool](t, b, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
	f = first("zoom out", []string{})
	if f.Scope != "whole profile" || len(f.Rows) != 5 {
		t.Errorf("the first frame with the graph zoomed out has the table at %q with %q", f.Scope, f.Rows)
	}
	noProblems(t, b)
}

// TestBrowserTableFollowsRange: on a perf.data's flame page, choosing a
// time range on the timeline redraws the graph and the top table in the
// same frame, and the table's scope line names the range (it said "whole
// profile"); a zoom within the range names both.
func TestBrowserTableFollowsRange(t *testing.T) {
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
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	run(t, b, "open the flame page", chromedp.Navigate(ts.URL+"/p/"+id))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForJS(t, b, "the timeline and the table", `!document.getElementById('timeline').hidden && window.viewerTimeline.data && `+topReady)
	whole := eval[float64](t, b, `window.viewer.tree.rootTotal`)
	eval[bool](t, b, recordFrames)
	// The first half of the recording, on the timeline's buckets.
	from, to := 0.0, eval[float64](t, b, `(() => { const d = window.viewerTimeline.data; const w = d.bucket_ns / 1e9; return +(Math.floor(d.total.length / 2) * w).toFixed(9); })()`)
	eval[bool](t, b, fmt.Sprintf(`import('/static/timeline.js').then(m => m.select({from: %v, to: %v})).then(() => true)`, from, to))
	waitForJS(t, b, "the range's graph and table", `document.body.dataset.loads === '2' && `+topReady)
	eval[bool](t, b, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
	secs := func(x float64) string { return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".") }
	wantRange := secs(from) + "–" + secs(to) + " s"
	frames := eval[[]viewFrame](t, b, `window.__frames`)
	var f *viewFrame
	for i := range frames {
		if frames[i].Total != 0 && frames[i].Total != whole {
			f = &frames[i]
			break
		}
	}
	if f == nil {
		t.Fatalf("no frame shows the range's graph (%d frames)", len(frames))
	}
	if !strings.Contains(f.Scope, wantRange) || f.State != "ready" {
		t.Errorf("the first frame with the range's graph has the table at %q (%s), want it to name %s", f.Scope, f.State, wantRange)
	}
	if got := text(t, b, "#top-scope"); !strings.Contains(got, wantRange) {
		t.Errorf("after choosing %s the table's scope reads %q", wantRange, got)
	}
	// Zoomed within the range: the frame and the range.
	path := eval[[]string](t, b, `(() => { const t = window.viewer.tree; let best = -1;
		for (let i = 1; i < t.length; i++) if (t.parent[i] === 0 && t.label(i) !== '…' && (best < 0 || t.total[i] > t.total[best])) best = i;
		return t.path(best); })()`)
	r := frame(t, b, path...)
	run(t, b, "zoom into "+path[0], chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "the zoom's table", `document.body.dataset.zoom === 'ready' && `+topReady+` && document.getElementById('top-scope').textContent.startsWith('within ')`)
	if got := text(t, b, "#top-scope"); !strings.Contains(got, path[0]) || !strings.Contains(got, wantRange) {
		t.Errorf("zoomed into %s within %s, the table's scope reads %q", path[0], wantRange, got)
	}
	noProblems(t, b)
}
