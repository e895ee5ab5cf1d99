package browsertest_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/symbolize"
	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

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

// serveRecording starts a loopback server whose data-type engine reads the
// binaries of dir, with dir/file ingested as name; it returns the server's
// URL and the profile's ID.
func serveRecording(t *testing.T, dir, file, name string) (base, pid string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{dir}})) // finds the binaries by name and build ID
	pid, err = s.Ingest(context.Background(), data, name)
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL, pid
}
