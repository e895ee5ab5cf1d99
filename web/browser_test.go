package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/web"
	"viewer/web/browsertest"
)

// BrowserProfile is a small CPU profile whose shares are easy to check by
// hand. Stacks (root first) and their cpu values in ms / sample counts:
//
//	main.main > main.work > main.parse                      30 ms / 3
//	main.main > main.work > main.render                     20 ms / 2
//	main.main > main.parse                                  10 ms / 1
//	main.main > main.render > main.parse > runtime.mallocgc 25 ms / 2
//	main.main > runtime.mallocgc                            15 ms / 1
//
// Total 100 ms / 9 samples. main.parse: 30+10+25 = 65%; "parse|render"
// counts the parse nested under render once: 30+20+10+25 = 85%.
func BrowserProfile(t *testing.T) []byte {
	t.Helper()
	fns := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		f := &profile.Function{ID: uint64(len(fns) + 1), Name: name, SystemName: name, Filename: "main.go"}
		fns[name] = f
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(locs) + 1), Address: 0x1000 + uint64(len(locs))*16, Line: []profile.Line{{Function: f, Line: int64(10 + len(locs))}}}
		locs[name] = l
		p.Location = append(p.Location, l)
		return l
	}
	add := func(count, ms int64, rootFirst ...string) {
		s := &profile.Sample{Value: []int64{count, ms * 1_000_000}}
		for i := len(rootFirst) - 1; i >= 0; i-- {
			s.Location = append(s.Location, loc(rootFirst[i]))
		}
		p.Sample = append(p.Sample, s)
	}
	add(3, 30, "main.main", "main.work", "main.parse")
	add(2, 20, "main.main", "main.work", "main.render")
	add(1, 10, "main.main", "main.parse")
	add(2, 25, "main.main", "main.render", "main.parse", "runtime.mallocgc")
	add(1, 15, "main.main", "runtime.mallocgc")
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// LoopbackServer is an unstarted test server for h that listens on
// 127.0.0.1 only (never on [::1] or another address).
func LoopbackServer(tb testing.TB, h http.Handler) *httptest.Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Listener.Close()
	ts.Listener = ln
	return ts
}

// StartServer serves a fresh viewer on 127.0.0.1, as serve does by
// default: requests must name this machine in their Host.
func StartServer(t *testing.T) string {
	t.Helper()
	s, err := web.New(web.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ts := LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

// run runs browser steps with a timeout and fails the test on error.
func run(t *testing.T, b *browsertest.Browser, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, b *browsertest.Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitForJS polls a JS expression until it is true, for up to 30 s.
// Errors while the page navigates count as not yet.
func waitForJS(t *testing.T, b *browsertest.Browser, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waiting for %s (%s): timed out (last error: %v); page problems: %q", what, expr, last, b.Problems())
}

type rect struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// frame returns where the frame at path (names below the root) is drawn.
func frame(t *testing.T, b *browsertest.Browser, path ...string) rect {
	t.Helper()
	q := fmt.Sprintf("window.viewer.frameRect(%s)", jsStrings(path))
	r := eval[*rect](t, b, q)
	if r == nil {
		t.Fatalf("frame %q is not drawn", strings.Join(path, " > "))
	}
	return *r
}

func jsStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

func currentURL(t *testing.T, b *browsertest.Browser) *url.URL {
	t.Helper()
	loc := eval[string](t, b, "location.href")
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func text(t *testing.T, b *browsertest.Browser, sel string) string {
	t.Helper()
	return eval[string](t, b, fmt.Sprintf("document.querySelector(%q).textContent", sel))
}

func noProblems(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	for _, p := range b.Problems() {
		t.Errorf("page problem: %s", p)
	}
}

// topReady is true once the flame page's top table shows the latest
// top.json it asked for.
const topReady = `document.getElementById('top-table').dataset.state === 'ready'`

// search types q into the search box and waits for the match summary.
func search(t *testing.T, b *browsertest.Browser, q, wantPct string) {
	t.Helper()
	run(t, b, "search "+q,
		chromedp.Focus(chromedp.CSS("#search")),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('search').select()`),
		chromedp.SendKeys(chromedp.CSS("#search"), q),
		chromedp.SendKeys(chromedp.CSS("#search"), "\r"),
	)
	waitForJS(t, b, "match for "+q, fmt.Sprintf("document.getElementById('match').textContent.includes(%q)", wantPct))
}

var profileURL = regexp.MustCompile(`^/p/[A-Za-z0-9_-]{14,}$`)

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
