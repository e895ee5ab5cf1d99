package browsertest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// benchServer serves a fresh viewer with the benchmark profile uploaded;
// it returns the server's URL and the profile's page path.
func benchServer(b *testing.B) (string, string) {
	_, data := webtest.BenchProfile(b)
	s, err := web.New(web.Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ts := webtest.LoopbackServer(b, s.Handler())
	ts.Start()
	b.Cleanup(ts.Close)
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
	return ts.URL, created.URL
}

// zoomTargets are the zoom paths of up to n frames of the whole tree at
// depth 2 to 6 at least 1/400 of the total wide, merged "…" blocks first:
// frames a user would click, whose subtrees have merged frames to open.
func zoomTargets(b *testing.B, base, page string, n int) [][]string {
	resp, err := http.Get(base + page + "/flame.json?si=cpu")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		MinTotal int64    `json:"minTotal"`
		Names    []string `json:"names"`
		Nodes    []int64  `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		b.Fatal(err)
	}
	var merged, frames [][]string
	var path []string
	total := tr.Nodes[2]
	for i := 0; i < len(tr.Nodes); i += 4 {
		name, depth, t := tr.Names[tr.Nodes[i]], int(tr.Nodes[i+1]), tr.Nodes[i+2]
		if depth == 0 {
			continue
		}
		if name == "…" {
			name = fmt.Sprintf("…<%d", tr.MinTotal)
		}
		path = append(path[:depth-1], name)
		if depth < 2 || depth > 6 || t < total/400 {
			continue
		}
		if strings.HasPrefix(name, "…") {
			merged = append(merged, append([]string(nil), path...))
		} else {
			frames = append(frames, append([]string(nil), path...))
		}
	}
	out := append(merged, frames...)
	if len(out) < n {
		b.Fatalf("only %d zoom targets in the benchmark profile", len(out))
	}
	// Spread over the tree rather than the first subtree's frames.
	step := len(out) / n
	var picked [][]string
	for i := 0; i < n; i++ {
		picked = append(picked, out[i*step])
	}
	return picked
}

// BenchmarkZoomDraw measures, in headless chromium on the benchmark
// profile, the time from a zoom (window.viewer.graph.zoomTo, what a click
// calls) until the tree compacted at the zoomed frame's total is fetched
// (flame.json?z=, not cached on the server: each iteration zooms into
// another frame) and drawn, and the next animation frame. Each iteration
// first goes back to the whole profile (kept in the page) and waits until
// it is painted (two animation frames), as a user sees it before clicking.
//
//	cd web/browsertest && go test -run '^$' -bench ZoomDraw -benchtime 20x .
//
// The goal is 150 ms (zoom/goal below 1 meets it). local-redraw-ms is the
// time zoomTo takes before returning (a page from before subtree fetches
// redrew its whole tree zoomed there; one that fetches draws the zoom when
// the subtree arrives, unless that takes over 150 ms). fetch-ms is from the zoom to
// flame.json?z= received (server build, gzip, transfer, JSON parse),
// parse-ms the page's Tree of it; the rest is drawing. first-byte-ms and
// body-ms are the browser's Resource Timing of that request: request sent
// to first byte (the server's work), then the body; to-request-ms from the
// zoom until the request is sent, json-ms from the body received until
// resp.json() is done. The page's own marks split that: headers-ms from
// the zoom until fetch() resolves, text-ms reading the body, json-parse-ms
// JSON.parse of it, draw-ms the draw of the fetched tree.
func BenchmarkZoomDraw(b *testing.B) {
	base, page := benchServer(b)
	targets := zoomTargets(b, base, page, max(b.N, 1))
	br := browsertest.Start(b, browsertest.Options{Width: 1600, Height: 1000})
	defer br.Close()
	if _, err := drawTime(br, base+page+"?si=cpu", chromedp.WaitReady(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		b.Fatalf("page never drew: %v; problems %q", err, br.Problems())
	}
	type timing struct{ Total, Local, Fetch, Build, Nodes, Wait, Body, Queue, After, Headers, Text, Parsed, Draw float64 }
	var totals, locals, fetches, builds, waits, bodies, queues, afters, headers, texts, parses, draws []float64
	var nodes float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := chromedp.Run(br.Ctx, chromedp.Evaluate[chromedp.Void](`(async () => {
			const v = window.viewer, n = v.zoomTimings ? v.zoomTimings.length : -1;
			v.graph.zoomTo(0);
			while (n >= 0 && v.zoomTimings.length === n) await new Promise((r) => document.addEventListener('viewer:zoomed', r, { once: true }));
			// Painted, as before a user's next click: the canvas is
			// rasterized in the frame after the draw.
			for (let k = 0; k < 2; k++) await new Promise((r) => requestAnimationFrame(() => setTimeout(r)));
		})()`, chromedp.EvalAwaitPromise)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		p, _ := json.Marshal(targets[i])
		tm, err := chromedp.Run(br.Ctx, chromedp.Evaluate[timing](fmt.Sprintf(`(async (path) => {
			const v = window.viewer, t = v.tree;
			// A page from before subtree fetches (side by side with
			// one): no zoomTimings, and "…" for a merged block.
			const before = !v.zoomTimings;
			if (before) path = path.map((e) => e.startsWith('…<') ? '…' : e);
			const n = before ? 0 : v.zoomTimings.length;
			const i = t.resolve(path);
			if (t.path(i).join('\n') !== path.join('\n')) throw new Error('no frame ' + path.join(' > ') + ' in a tree zoomed at ' + JSON.stringify(t.zoom) + ' of ' + t.length + ' nodes, found ' + JSON.stringify(t.path(i)));
			const t0 = performance.now();
			v.graph.zoomTo(i);
			const local = performance.now() - t0;
			if (before) {
				await new Promise((r) => requestAnimationFrame(() => r()));
				return { Total: performance.now() - t0, Local: local, Fetch: 0, Build: 0, Nodes: t.length };
			}
			while (v.zoomTimings.length === n) await new Promise((r) => document.addEventListener('viewer:zoomed', r, { once: true }));
			await new Promise((r) => requestAnimationFrame(() => r()));
			if (document.body.dataset.zoom !== 'ready') throw new Error('zoom ' + document.body.dataset.zoom);
			const z = v.zoomTimings[v.zoomTimings.length - 1];
			// The browser's own timing of that request: until the first
			// byte (server), then the body.
			const rs = performance.getEntriesByType('resource').filter((e) => e.name.includes('/flame.json?') && e.startTime >= t0);
			const r = rs[rs.length - 1];
			return { Total: performance.now() - t0, Local: local, Fetch: z.fetchMs, Build: z.buildMs, Nodes: z.nodes,
				Wait: r ? r.responseStart - r.requestStart : 0, Body: r ? r.responseEnd - r.responseStart : 0,
				Queue: r ? r.requestStart - t0 : 0, After: r ? t0 + z.fetchMs - r.responseEnd : 0,
				Headers: z.headersMs, Text: z.textMs - z.headersMs, Parsed: z.parsedMs - z.textMs, Draw: z.drawMs };
		})(%s)`, p), chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatalf("zoom into %q: %v; problems %q", targets[i], err, br.Problems())
		}
		totals = append(totals, tm.Total)
		locals = append(locals, tm.Local)
		fetches = append(fetches, tm.Fetch)
		builds = append(builds, tm.Build)
		waits = append(waits, tm.Wait)
		bodies = append(bodies, tm.Body)
		queues = append(queues, tm.Queue)
		afters = append(afters, tm.After)
		headers = append(headers, tm.Headers)
		texts = append(texts, tm.Text)
		parses = append(parses, tm.Parsed)
		draws = append(draws, tm.Draw)
		nodes = max(nodes, tm.Nodes)
	}
	b.StopTimer()
	sort.Float64s(totals)
	sort.Float64s(locals)
	sort.Float64s(fetches)
	sort.Float64s(builds)
	sort.Float64s(waits)
	sort.Float64s(bodies)
	sort.Float64s(queues)
	sort.Float64s(afters)
	sort.Float64s(headers)
	sort.Float64s(texts)
	sort.Float64s(parses)
	sort.Float64s(draws)
	med := totals[len(totals)/2]
	b.ReportMetric(med, "zoom-to-drawn-ms")
	b.ReportMetric(totals[len(totals)-1], "zoom-to-drawn-max-ms")
	b.ReportMetric(locals[len(locals)/2], "local-redraw-ms")
	b.ReportMetric(fetches[len(fetches)/2], "fetch-ms")
	b.ReportMetric(builds[len(builds)/2], "parse-ms")
	b.ReportMetric(waits[len(waits)/2], "first-byte-ms")
	b.ReportMetric(bodies[len(bodies)/2], "body-ms")
	b.ReportMetric(queues[len(queues)/2], "to-request-ms")
	b.ReportMetric(afters[len(afters)/2], "json-ms")
	b.ReportMetric(headers[len(headers)/2], "headers-ms")
	b.ReportMetric(texts[len(texts)/2], "text-ms")
	b.ReportMetric(parses[len(parses)/2], "json-parse-ms")
	b.ReportMetric(draws[len(draws)/2], "draw-ms")
	b.ReportMetric(nodes, "max-nodes")
	b.ReportMetric(med/150, "zoom/goal")
	b.Logf("%d zooms, ms to drawn: %.0f", len(totals), totals)
	if p := br.Problems(); len(p) > 0 {
		b.Errorf("page problems: %q", p)
	}
}

// BenchmarkTopJSON measures top.json on the server for the benchmark
// profile, over HTTP: the first request (it sorts the profile's stacks
// once for every later zoom and table, and counts the table), then each
// iteration a table zoomed into another frame (not cached) and the whole
// profile's again (cached), with a search.
//
//	cd web/browsertest && go test -run '^$' -bench TopJSON -benchtime 20x .
//
// The goal is 50 ms for a table (top/goal below 1 meets it).
func BenchmarkTopJSON(b *testing.B) {
	base, page := benchServer(b)
	targets := zoomTargets(b, base, page, max(b.N, 1))
	get := func(q url.Values) time.Duration {
		start := time.Now()
		resp, err := http.Get(base + page + "/top.json?" + q.Encode())
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("top.json?%s: HTTP %d %s", q.Encode(), resp.StatusCode, body)
		}
		return time.Since(start)
	}
	whole := url.Values{"si": {"cpu"}, "n": {"100"}, "q": {"json"}}
	first := get(whole)
	var zoomed, cached []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := url.Values{"si": {"cpu"}, "n": {"100"}, "z": targets[i], "q": {"json"}}
		zoomed = append(zoomed, float64(get(q).Microseconds())/1000)
		cached = append(cached, float64(get(whole).Microseconds())/1000)
	}
	b.StopTimer()
	sort.Float64s(zoomed)
	sort.Float64s(cached)
	b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
	b.ReportMetric(zoomed[len(zoomed)/2], "zoomed-ms")
	b.ReportMetric(cached[len(cached)/2], "cached-ms")
	b.ReportMetric(zoomed[len(zoomed)/2]/50, "top/goal")
}
