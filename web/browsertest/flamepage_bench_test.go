package browsertest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// BenchmarkFlameWheel measures wheel zoom on the benchmark profile (200k
// samples) in headless chromium at 1440×900: each iteration sends one wheel
// event at a point of the graph (zooming in eight steps, then out) and
// waits for the frame. It reports the main thread's drawing time of the
// frame (goal ≤ 16 ms), the time from the wheel event to its frame drawn,
// the full drawing once a gesture of eight steps rests (timed outside the
// loop), and the first draw and renderer peak RSS of the page (goals 1 s,
// 300 MB).
//
//	cd web/browsertest && go test -run '^$' -bench FlameWheel -benchtime 40x .
func BenchmarkFlameWheel(b *testing.B) {
	_, data := webtest.BenchProfile(b)
	s, err := web.New(web.Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ts := webtest.LoopbackServer(b, s.Handler())
	ts.Start()
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/api/profiles", "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	var created struct{ URL string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		b.Fatalf("upload: HTTP %d, %v", resp.StatusCode, err)
	}
	// Build the server's tree once, so the first draw measured is the page's.
	if r, err := http.Get(ts.URL + created.URL + "/flame.json"); err == nil {
		r.Body.Close()
	}
	br := browsertest.Start(b, browsertest.Options{Width: 1440, Height: 900})
	first, err := drawTime(br, ts.URL+created.URL, chromedp.WaitReady(chromedp.CSS(`body[data-ready="1"]`)))
	if err != nil {
		b.Fatalf("page never drew: %v; problems %q", err, br.Problems())
	}
	box, err := chromedp.Run(br.Ctx, chromedp.Evaluate[map[string]float64](`(r => ({x: r.left, y: r.top, w: r.width}))(document.getElementById('flame-hover').getBoundingClientRect())`))
	if err != nil {
		b.Fatal(err)
	}
	var draws, latencies, settles []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dy := -180.0
		if i%16 >= 8 {
			dy = 180
		}
		x := box["x"] + box["w"]*(0.2+0.6*float64(i%7)/6)
		y := box["y"] + 18*3 + 9
		if err := chromedp.Do(br.Ctx,
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, x, y, func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 1e-9, dy })); err != nil {
			b.Fatal(err)
		}
		ms, err := chromedp.Run(br.Ctx, chromedp.Evaluate[[]float64](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => {
			const g = window.viewer.graph; r([g.lastWheelFrameMs || 0, g.lastWheelMs || 0]); g.lastWheelMs = 0; g.lastWheelFrameMs = 0; })))`, chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatal(err)
		}
		if ms[0] > 0 {
			draws = append(draws, ms[0])
		}
		if ms[1] > 0 {
			latencies = append(latencies, ms[1])
		}
		if i%8 == 7 {
			// The end of a gesture: the wheel rests, the full drawing follows.
			b.StopTimer()
			ms, err := chromedp.Run(br.Ctx, chromedp.Evaluate[float64](`new Promise(r => setTimeout(() => requestAnimationFrame(() => {
				const g = window.viewer.graph; r(g.lastSettleMs || 0); g.lastSettleMs = 0; }), 400))`, chromedp.EvalAwaitPromise))
			if err != nil {
				b.Fatal(err)
			}
			if ms > 0 {
				settles = append(settles, ms)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	rss, err := br.RendererPeakRSS()
	if err != nil {
		b.Fatal(err)
	}
	sort.Float64s(draws)
	sort.Float64s(latencies)
	sort.Float64s(settles)
	pct := func(v []float64, p float64) float64 {
		if len(v) == 0 {
			return 0
		}
		return v[min(len(v)-1, int(float64(len(v))*p))]
	}
	b.ReportMetric(pct(draws, 0.5), "ms-wheel-frame-median")
	b.ReportMetric(pct(draws, 0.95), "ms-wheel-frame-p95")
	b.ReportMetric(pct(latencies, 0.5), "ms-wheel-to-drawn-median")
	b.ReportMetric(pct(settles, 0.5), "ms-settled-draw-median")
	b.ReportMetric(pct(settles, 1), "ms-settled-draw-max")
	b.ReportMetric(float64(first/time.Millisecond), "ms-first-draw")
	b.ReportMetric(float64(rss)/(1<<20), "renderer-peak-MB")
	b.ReportMetric(pct(draws, 0.95)/16, "frame/goal")
	b.ReportMetric(first.Seconds()/1.0, "draw/goal")
	b.ReportMetric(float64(rss)/(300<<20), "rss/goal")
	if p := br.Problems(); len(p) > 0 {
		b.Errorf("page problems: %q", p)
	}
}
