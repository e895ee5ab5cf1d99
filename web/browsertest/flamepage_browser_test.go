package browsertest_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// packagesProfile has frames of four color groups: a Go package (main), a
// Go package path (net/http), a C++ namespace (std), a C function in
// libc.so.6, and a raw address in /bin/app. helper is inlined into
// main.work. Values (cpu ms), root first:
//
//	main.main > main.work > main.helper (inlined)                  40
//	main.main > net/http.(*conn).serve > std::vector<int>::push_back 30
//	main.main > net/http.(*conn).serve > malloc                      20
//	main.main > app+0x1234                                           10
func packagesProfile(t *testing.T) []byte {
	t.Helper()
	app := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", HasFunctions: true}
	libc := &profile.Mapping{ID: 2, Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/lib/x86_64-linux-gnu/libc.so.6", HasFunctions: true}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Mapping:    []*profile.Mapping{app, libc},
	}
	fn := func(name, file string, line int64) *profile.Function {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file, StartLine: line}
		p.Function = append(p.Function, f)
		return f
	}
	loc := func(m *profile.Mapping, addr uint64, lines ...profile.Line) *profile.Location {
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: addr, Line: lines}
		p.Location = append(p.Location, l)
		return l
	}
	mainMain := loc(app, 0x401000, profile.Line{Function: fn("main.main", "/src/app/main.go", 10), Line: 12})
	work := loc(app, 0x402000, profile.Line{Function: fn("main.helper", "/src/app/helper.go", 30), Line: 31},
		profile.Line{Function: fn("main.work", "/src/app/work.go", 20), Line: 22})
	serve := loc(app, 0x403000, profile.Line{Function: fn("net/http.(*conn).serve", "/usr/lib/go/src/net/http/server.go", 1900), Line: 1950})
	push := loc(app, 0x404000, profile.Line{Function: fn("std::vector<int>::push_back", "/usr/include/c++/12/bits/stl_vector.h", 1187), Line: 1190})
	malloc := loc(libc, 0x7f0000001000, profile.Line{Function: fn("malloc", "", 0)})
	raw := loc(app, 0x401234)
	add := func(ms int64, leafFirst ...*profile.Location) {
		p.Sample = append(p.Sample, &profile.Sample{Value: []int64{ms * 1_000_000}, Location: leafFirst})
	}
	add(40, work, mainMain)
	add(30, push, serve, mainMain)
	add(20, malloc, serve, mainMain)
	add(10, raw, mainMain)
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func openPackagesProfile(t *testing.T, opt browsertest.Options) (*browsertest.Browser, string) {
	t.Helper()
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "packages.pb.gz", packagesProfile(t))
	b := browsertest.Start(t, opt)
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("never drew: %v; %q", err, b.Problems())
	}
	return b, base + "/p/" + id
}

// rgbHue is the hue (degrees) and saturation of an RGB pixel.
func rgbHue(c [3]int) (hue, sat float64) {
	r, g, bl := float64(c[0])/255, float64(c[1])/255, float64(c[2])/255
	mx, mn := math.Max(r, math.Max(g, bl)), math.Min(r, math.Min(g, bl))
	d := mx - mn
	if d == 0 {
		return 0, 0
	}
	switch mx {
	case r:
		hue = math.Mod((g-bl)/d, 6)
	case g:
		hue = (bl-r)/d + 2
	default:
		hue = (r-g)/d + 4
	}
	hue *= 60
	if hue < 0 {
		hue += 360
	}
	return hue, d / (1 - math.Abs(mx+mn-1))
}

func hueDistance(a, b float64) float64 {
	d := math.Abs(a - b)
	return math.Min(d, 360-d)
}

// hoverTip moves the pointer over the frame at path and returns the
// tooltip's text.
func hoverTip(t *testing.T, b *browsertest.Browser, path ...string) string {
	t.Helper()
	r := frame(t, b, path...)
	// From outside the graph: a page drawn anew under a pointer that stays
	// put gets no move.
	run(t, b, "hover "+path[len(path)-1], chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 1, 1),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "the tooltip", fmt.Sprintf(`!document.getElementById('tooltip').hidden && document.getElementById('tooltip').innerText.startsWith(%q)`, path[len(path)-1]))
	return eval[string](t, b, `document.getElementById('tooltip').innerText`)
}

// tipRow is the value and share columns of the tooltip row labelled label
// ("Total", "Samples"), as the page shows them; "" when it has none.
func tipRow(t *testing.T, b *browsertest.Browser, label string) string {
	t.Helper()
	return eval[string](t, b, fmt.Sprintf(`(() => { const r = [...document.querySelectorAll('#tooltip .tt-row')].find((r) => r.querySelector('.tt-label').textContent === %q);
		return r ? r.querySelector('.tt-value').textContent + ' | ' + r.querySelector('.tt-pct').textContent : ''; })()`, label))
}

// pprofTraces counts, in go tool pprof -traces of path, the traces (one
// per sample record) with a frame of function fn, and those where fn is
// the leaf.
func pprofTraces(t *testing.T, path, fn string) (total, self int) {
	t.Helper()
	cmd := exec.Command("go", "tool", "pprof", "-traces", path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -traces: %v\n%s", err, out)
	}
	blocks := strings.Split(string(out), "-----------+-------------------------------------------------------")
	for _, blk := range blocks[1:] {
		var frames []string
		for _, l := range strings.Split(strings.TrimSpace(blk), "\n") {
			// "     40ms   main.helper" (the value on the leaf's line), then "   main.work".
			if f := strings.Fields(l); len(f) > 0 {
				frames = append(frames, f[len(f)-1])
			}
		}
		if slices.Contains(frames, fn) {
			total++
			if frames[0] == fn {
				self++
			}
		}
	}
	if len(blocks) < 2 {
		t.Fatalf("go tool pprof -traces printed no trace:\n%s", out)
	}
	return total, self
}

// pprofCount is fn's flat and cum in go tool pprof -top of path for
// sample type si, as printed ("3", "5").
func pprofCount(t *testing.T, path, si, fn string) (flat, cum string) {
	t.Helper()
	cmd := exec.Command("go", "tool", "pprof", "-top", "-sample_index="+si, "-nodefraction=0", path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			continue
		}
		// pprof marks a function inlined at its calls.
		name := strings.TrimSuffix(strings.TrimSuffix(strings.Join(f[5:], " "), " (partial-inline)"), " (inline)")
		if name == fn {
			return f[0], f[3]
		}
	}
	t.Fatalf("go tool pprof -top -sample_index=%s lists no %s:\n%s", si, fn, out)
	return "", ""
}

// TestBrowserFlameTooltipSamples: on a Go CPU profile (samples/count and
// cpu/nanoseconds) the cpu graph's tooltip gives each frame's samples
// beside its time, as go tool pprof -top -sample_index=samples counts
// them, also zoomed and in a time range; the samples graph's gives its
// own values.
func TestBrowserFlameTooltipSamples(t *testing.T) {
	p, err := profile.ParseData(packagesProfile(t))
	if err != nil {
		t.Fatal(err)
	}
	// One sample per 10 ms, as Go's profiler takes them, in records of
	// several samples each; at 0, 1, 2 and 3 s.
	p.SampleType = append([]*profile.ValueType{{Type: "samples", Unit: "count"}}, p.SampleType...)
	for k, s := range p.Sample {
		s.Value = []int64{s.Value[0] / 10_000_000, s.Value[0]}
		s.NumLabel = map[string][]int64{sampling.TimeLabel: {int64(k) * 1e9}}
	}
	p.DurationNanos = 4e9
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cpu.pb.gz")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "cpu.pb.gz", buf.Bytes())
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	open := func(query string) {
		t.Helper()
		run(t, b, "open "+query, chromedp.Navigate(base+"/p/"+id+query))
		if err := b.WaitReady(20 * time.Second); err != nil {
			t.Fatalf("never drew: %v; %q", err, b.Problems())
		}
		// The timeline above the graph comes with its own fetch and moves
		// the graph down: hover once it is there.
		waitForJS(t, b, "the timeline", `!!(window.viewerTimeline && window.viewerTimeline.data) && !document.getElementById('timeline').hidden`)
		eval[bool](t, b, `new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
	}
	open("?si=cpu")
	if r := eval[float64](t, b, `window.viewer.tree.valuePerSample`); r != 10_000_000 {
		t.Errorf("flame.json's valuePerSample %v, want the 10 ms period (cpu is samples × 10 ms)", r)
	}
	for _, path := range [][]string{{"main.main"}, {"main.main", "net/http.(*conn).serve"}, {"main.main", "net/http.(*conn).serve", "malloc"}, {"main.main", "main.work", "main.helper"}} {
		fn := path[len(path)-1]
		hoverTip(t, b, path...)
		flat, cum := pprofCount(t, file, "samples", fn)
		if got, want := tipRow(t, b, "Samples"), cum+" total | "+flat+" self"; got != want {
			t.Errorf("%s: tooltip's samples %q, want %q (go tool pprof -top -sample_index=samples)", fn, got, want)
		}
	}
	if got := tipRow(t, b, "Stacks"); got != "" {
		t.Errorf("a profile with a samples type shows stacks: %q", got)
	}
	// Zoomed into serve (the zoomed tree's chain and subtree).
	r := frame(t, b, "main.main", "net/http.(*conn).serve")
	run(t, b, "click serve", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "the zoomed tree", `document.body.dataset.zoom === 'ready' || location.search.includes('z=')`)
	for _, path := range [][]string{{"main.main"}, {"main.main", "net/http.(*conn).serve", "malloc"}} {
		hoverTip(t, b, path...)
		flat, cum := pprofCount(t, file, "samples", path[len(path)-1])
		if got, want := tipRow(t, b, "Samples"), cum+" total | "+flat+" self"; got != want {
			t.Errorf("zoomed, %s: tooltip's samples %q, want %q", path[len(path)-1], got, want)
		}
	}
	// The time range of the second and third records: serve's 3 + 2.
	open("?si=cpu&t=1-3")
	hoverTip(t, b, "main.main")
	if got := tipRow(t, b, "Samples"); got != "5 total | 0 self" {
		t.Errorf("t=1-3: main.main's samples %q, want 5 total | 0 self", got)
	}
	// The samples graph: its values are the samples.
	open("?si=samples")
	hoverTip(t, b, "main.main", "net/http.(*conn).serve")
	if got := tipRow(t, b, "Samples"); got != "5 total | 0 self" {
		t.Errorf("si=samples: serve's samples %q, want 5 total | 0 self", got)
	}
	noProblems(t, b)
}
