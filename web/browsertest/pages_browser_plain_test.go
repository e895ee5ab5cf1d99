package browsertest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"viewer/symbolize"
	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// strictBrowser is a chromium whose every page is watched for what a user
// would see break: script errors and console.error (browsertest), failed
// or 4xx/5xx requests, and CSP violations. Requests go out with the
// browser's own headers (Accept-Encoding included).
type strictBrowser struct {
	*browsertest.Browser
	mu     sync.Mutex
	failed []string
}

func startStrict(t *testing.T) *strictBrowser {
	t.Helper()
	sb := &strictBrowser{Browser: browsertest.Start(t, browsertest.Options{})}
	err := chromedp.Listen(sb.Ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				msg = fmt.Sprintf("%d %s", int(ev.Response.Status), ev.Response.URL)
			}
		case *network.EventLoadingFailed:
			if !ev.Canceled { // a stream closed by navigating away is no failure
				msg = fmt.Sprintf("request failed: %s (%s)", ev.ErrorText, ev.BlockedReason)
			}
		default:
			return
		}
		if msg != "" {
			sb.mu.Lock()
			sb.failed = append(sb.failed, msg)
			sb.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, sb.Browser, "watch the network and CSP", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI));`,
		})
		return err
	}))
	return sb
}

// check fails the test on anything the page reported since the last check.
func (sb *strictBrowser) check(t *testing.T, pageName string) {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // let late requests finish and be reported
	for _, p := range sb.Problems() {
		t.Errorf("%s: page problem: %s", pageName, p)
	}
	sb.mu.Lock()
	failed := sb.failed
	sb.failed = nil
	sb.mu.Unlock()
	for _, f := range failed {
		t.Errorf("%s: %s", pageName, f)
	}
}

// headerLog records the Accept-Encoding the browser sent per path.
type headerLog struct {
	mu  sync.Mutex
	enc map[string]string
}

func (h *headerLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.enc[r.URL.Path] = r.Header.Get("Accept-Encoding")
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (h *headerLog) get(path string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.enc[path]
}

// TestBrowserEveryPage opens each page in chromium with the browser's own
// headers (flame, top, diff, sandwich, source, types, then an upload
// through the form) and fails on any console error, failed request or CSP
// violation. The diff, whose diff.json was once gzipped twice, must draw.
func TestBrowserEveryPage(t *testing.T) {
	dir := "../../testdata/datatype"
	perfData, err := os.ReadFile(filepath.Join(dir, "datatype-dw5-pie.perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{dir}})) // finds datatype-dw5-pie by its name and build ID
	typed, err := s.Ingest(context.Background(), perfData, "datatype.perf.data")
	if err != nil {
		t.Fatal(err)
	}
	hl := &headerLog{enc: map[string]string{}}
	ts := webtest.LoopbackServer(t, hl.wrap(s.Handler()))
	ts.Start()
	t.Cleanup(ts.Close)
	base := ts.URL
	a := webtest.PostProfile(t, base, "before.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 3)...))
	bID := webtest.PostProfile(t, base, "after.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 5)...))

	b := startStrict(t)
	ready := func(what string) {
		t.Helper()
		if err := b.WaitReady(30 * time.Second); err != nil {
			t.Fatalf("%s never drew: %v; page problems: %q", what, err, b.Problems())
		}
	}
	pages := []struct {
		name, path string
		wait       func()
	}{
		{"flame", "/p/" + a, func() { ready("the flame page") }},
		{"top", "/p/" + a + "/top", func() {
			waitForJS(t, b.Browser, "the top table", `document.querySelectorAll('table tbody tr').length > 10`)
		}},
		{"diff", "/p/" + a + "/diff/" + bID, func() {
			ready("the diff page")
			if st := eval[string](t, b.Browser, `document.getElementById('chart-status')?.textContent || ''`); strings.Contains(st, "Could not") {
				t.Errorf("the diff page says %q", st)
			}
			waitForJS(t, b.Browser, "the diff table", `document.querySelector('#diff-top tbody tr')`)
		}},
		{"sandwich", "/p/" + a + "/sandwich?fn=pkg.work3", func() { ready("the sandwich page") }},
		{"source", "/p/" + a + "/source?fn=pkg.work3", func() {
			waitForJS(t, b.Browser, "the source page", `document.readyState === 'complete' && document.querySelector('main')`)
		}},
		{"types", "/p/" + typed + "/types", func() { waitForJS(t, b.Browser, "the types table", `document.querySelector('#types > tbody > tr')`) }},
	}
	for _, p := range pages {
		run(t, b.Browser, "open the "+p.name+" page", chromedp.Navigate(base+p.path))
		p.wait()
		b.Screenshot(t, "page-"+p.name)
		b.check(t, p.name)
	}
	for _, path := range []string{"/p/" + a + "/flame.json", "/p/" + a + "/diff/" + bID + "/diff.json"} {
		if enc := hl.get(path); !strings.Contains(enc, "gzip") {
			t.Errorf("chromium asked %s with Accept-Encoding %q: the test did not exercise gzip", path, enc)
		}
	}

	// Upload: choose a file on /, land on its flame page.
	pb := filepath.Join(t.TempDir(), "upload.pb.gz")
	if err := os.WriteFile(pb, webtest.StacksPB(t, "", nil, webtest.WideStacks(300, 7)...), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, b.Browser, "open the upload page", chromedp.Navigate(base+"/"))
	run(t, b.Browser, "choose the file", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{pb}, chromedp.NodeReady))
	waitForJS(t, b.Browser, "the uploaded profile's page", `location.pathname.startsWith('/p/')`)
	ready("the uploaded profile's flame page")
	b.check(t, "upload")
}
