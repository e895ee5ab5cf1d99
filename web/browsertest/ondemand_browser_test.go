package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

func odEval[T any](t *testing.T, b *browsertest.Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func odDo(t *testing.T, b *browsertest.Browser, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// odSearch types q into the search box and returns the match summary once
// it is shown.
func odSearch(t *testing.T, b *browsertest.Browser, q string) {
	t.Helper()
	odDo(t, b, "search "+q,
		chromedp.Focus(chromedp.CSS("#search")),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('search').select()`),
		chromedp.SendKeys(chromedp.CSS("#search"), q),
		chromedp.SendKeys(chromedp.CSS("#search"), "\r"),
	)
	// The matched share comes with the top table (top.json).
	waitForJS(t, b, "the search's top table", topReady)
}

// heldDownloads is a pass-through proxy to a debuginfod server that holds
// every debug file's body at the number of bytes the test allows, so a
// test can look at a download in the middle however slow the machine is
// (a rate limit alone races the browser: under load the page could miss
// the whole download).
type heldDownloads struct {
	URL string

	mu      sync.Mutex
	allowed int64
	changed chan struct{} // closed, and replaced, when allowed changes
}

// holdDownloads starts the proxy in front of server with nothing allowed
// through yet; the test's end releases everything.
func holdDownloads(t *testing.T, server string) *heldDownloads {
	t.Helper()
	target, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldDownloads{changed: make(chan struct{})}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusOK && strings.HasSuffix(resp.Request.URL.Path, "/debuginfo") {
				resp.Body = &heldBody{ReadCloser: resp.Body, h: h, ctx: resp.Request.Context()}
			}
			return nil
		},
	}
	ts := webtest.LoopbackServer(t, proxy)
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() { h.Allow(math.MaxInt64) }) // before ts.Close: no body stays held
	h.URL = ts.URL
	return h
}

// Allow lets each debug file's body through up to n bytes.
func (h *heldDownloads) Allow(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.allowed = n
	close(h.changed)
	h.changed = make(chan struct{})
}

type heldBody struct {
	io.ReadCloser
	h   *heldDownloads
	ctx context.Context
	n   int64
}

func (b *heldBody) Read(p []byte) (int, error) {
	for {
		b.h.mu.Lock()
		allowed, changed := b.h.allowed, b.h.changed
		b.h.mu.Unlock()
		if left := allowed - b.n; left > 0 {
			if int64(len(p)) > left {
				p = p[:left]
			}
			n, err := b.ReadCloser.Read(p)
			b.n += int64(n)
			return n, err
		}
		select {
		case <-changed:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
}

func TestBrowserOnDemandSymbolization(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	// The server gets a copy of the debug file padded to 640 KiB, and the
	// viewer reaches it through a proxy that lets the download through in
	// steps, so the page is seen following it (the client reports every
	// 64 KiB): first 128 KiB, then 384 KiB, then the rest.
	served := webtest.PaddedDebugDir(t, debugFile, 640<<10)
	dsrv := debuginfodtest.Start(t, served)
	bid, _ := debuginfodtest.BuildID(exe)
	held := holdDownloads(t, dsrv.URL)
	held.Allow(128 << 10)
	_, base := webtest.SymbolizingServer(t, []string{held.URL}, 2)
	pb := filepath.Join(t.TempDir(), "ondemand.pb.gz")
	if err := os.WriteFile(pb, webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 0), 0o644); err != nil {
		t.Fatal(err)
	}

	b := browsertest.Start(t, browsertest.Options{})
	odDo(t, b, "open the upload page", chromedp.Navigate(base+"/"))
	if got := odEval[string](t, b, `document.getElementById('debuginfod').textContent`); !strings.Contains(got, held.URL) {
		t.Errorf("upload page says %q, want the debuginfod server %s named", got, held.URL)
	}
	odDo(t, b, "choose the file", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{pb}, chromedp.NodeReady))
	waitForJS(t, b, "the profile page", `location.pathname.startsWith('/p/')`)
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatalf("flame graph never drew: %v; problems %q", err, b.Problems())
	}
	id := strings.TrimPrefix(odEval[string](t, b, "location.pathname"), "/p/")
	odEval[bool](t, b, `window.__samePage = true`)

	// The panel lists the binary and follows its fetch from the server.
	waitForJS(t, b, "the symbolization panel", `!document.getElementById('symbolization').hidden && document.querySelector('#binaries tr')`)
	row := `document.querySelector('#binaries tr')`
	if got := odEval[string](t, b, row+`.dataset.buildId`); got != bid {
		t.Errorf("panel row build ID %q, want %s", got, bid)
	}
	// Search before the names exist: nothing matches yet.
	odSearch(t, b, "ondemand_hash_block")
	waitForJS(t, b, "fetching with progress", row+`.dataset.state === 'fetching' && `+row+`.querySelector('progress') && `+row+`.querySelector('progress').value > 0`)
	if src := odEval[string](t, b, row+`.cells[3].textContent`); src != held.URL {
		t.Errorf("while fetching, the source column says %q, want %s", src, held.URL)
	}
	if m := odEval[string](t, b, `document.getElementById('match').textContent`); !strings.Contains(m, "no match") {
		t.Errorf("before names arrived the search says %q, want no match", m)
	}
	first := odEval[float64](t, b, row+`.querySelector('progress').value`)
	held.Allow(384 << 10)
	waitForJS(t, b, "progress to advance while fetching", fmt.Sprintf(`%s.dataset.state === 'fetching' && %s.querySelector('progress').value > %v`, row, row, first))
	b.Screenshot(t, "ondemand-fetching")
	held.Allow(math.MaxInt64)

	// Names arrive: the same page (no navigation) redraws, keeping the
	// search, which now matches the hot function's share.
	waitForJS(t, b, "symbolized", row+`.dataset.state === 'symbolized' && document.getElementById('symbolization').dataset.job === 'done'`)
	waitForJS(t, b, "the search to match after the redraw", `document.getElementById('match').textContent.includes('60.00%')`)
	if !odEval[bool](t, b, `window.__samePage === true`) {
		t.Error("the page was reloaded; want a redraw in place")
	}
	if r := odEval[any](t, b, `window.viewer.frameRect(["main","ondemand_run_workload","ondemand_hash_block"])`); r == nil {
		t.Error("frame main > ondemand_run_workload > ondemand_hash_block is not drawn")
	}
	if note := odEval[string](t, b, `document.getElementById('symbolize-note').textContent`); !strings.Contains(note, "Asked: "+held.URL) {
		t.Errorf("panel note %q does not say which server was asked", note)
	}
	if src := odEval[string](t, b, row+`.cells[3].textContent`); !strings.Contains(src, "debuginfod") {
		t.Errorf("source column %q does not say the debug info came from debuginfod", src)
	}
	b.Screenshot(t, "ondemand-symbolized")
	for _, p := range b.Problems() {
		t.Errorf("page problem: %s", p)
	}
	if n := dsrv.Requests(bid); n != 1 {
		t.Errorf("the server got %d requests for %s, want 1", n, bid)
	}
	if names := webtest.FunctionNames(t, base, id); !names["ondemand_hash_block"] || !names["ondemand_render_frame"] {
		t.Errorf("profile.pb.gz has %v, want the program's functions", names)
	}

	// Later, a second browser opens the link: names at once, and nothing
	// new reaches the debuginfod server.
	before := len(dsrv.AllRequests())
	b2 := browsertest.Start(t, browsertest.Options{})
	odDo(t, b2, "open the shared link", chromedp.Navigate(base+"/p/"+id+"?q=ondemand_hash_block"))
	if err := b2.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForJS(t, b2, "the names in the second browser", `document.getElementById('match').textContent.includes('60.00%')`)
	waitForJS(t, b2, "the panel's outcome", `document.querySelector('#binaries tr')?.dataset.state === 'symbolized'`)
	if n := len(dsrv.AllRequests()); n != before {
		t.Errorf("opening the link again made %d new requests to debuginfod", n-before)
	}
	for _, p := range b2.Problems() {
		t.Errorf("second page problem: %s", p)
	}
}

// heldPage is a profile page in chromium whose binary's debuginfod
// download is held after 64 KiB (heldOnDemandPage).
type heldPage struct {
	held     *heldDownloads // lets the download go on
	b        *browsertest.Browser
	row      string // the binary's row, a JavaScript expression
	base, id string // the server and the profile
}

// heldOnDemandPage uploads the on-demand profile to a server whose
// debuginfod downloads are held after 64 KiB, opens its page in chromium
// and waits until the binary's row shows it fetching with a Skip button.
func heldOnDemandPage(t *testing.T) heldPage {
	t.Helper()
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, webtest.PaddedDebugDir(t, debugFile, 640<<10))
	p := heldPage{held: holdDownloads(t, dsrv.URL), row: `document.querySelector('#binaries tr')`}
	p.held.Allow(64 << 10)
	_, p.base = webtest.SymbolizingServer(t, []string{p.held.URL}, 2)
	p.id = webtest.UploadAPI(t, p.base, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 5))

	p.b = browsertest.Start(t, browsertest.Options{})
	odDo(t, p.b, "open the profile", chromedp.Navigate(p.base+"/p/"+p.id))
	if err := p.b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForJS(t, p.b, "fetching", p.row+`?.dataset.state === 'fetching'`)
	waitForJS(t, p.b, "the Skip button", p.row+`.querySelector('button.skip') && !`+p.row+`.querySelector('button.skip').hidden`)
	return p
}

func TestBrowserOnDemandSkipAndRetryButtons(t *testing.T) {
	// The download stops after 64 KiB until the test lets it go: only Skip
	// ends it, however long the browser takes to get there.
	p := heldOnDemandPage(t)
	held, b, row := p.held, p.b, p.row
	if odEval[bool](t, b, `document.getElementById('symbolize-disable').hidden`) {
		t.Error("no Disable button while fetching")
	}
	odDo(t, b, "click Skip", chromedp.Click(chromedp.CSS(`#binaries tr button.skip`)))
	waitForJS(t, b, "skipped", row+`.dataset.state === 'skipped' && document.getElementById('symbolization').dataset.job === 'done'`)
	if got := odEval[string](t, b, row+`.cells[4].textContent`); got != "skipped by the user" {
		t.Errorf("detail after Skip: %q", got)
	}
	waitForJS(t, b, "the Retry button", `!document.getElementById('symbolize-retry').hidden`)

	held.Allow(math.MaxInt64)
	odSearch(t, b, "ondemand_hash_block")
	// The ended job folded the panel to its summary line: open it, as a
	// user does, to reach Retry.
	if odEval[bool](t, b, `!document.querySelector('#symbolization details').open`) {
		odDo(t, b, "open the folded panel", chromedp.Click(chromedp.CSS(`#symbolization details > summary`)))
	}
	odDo(t, b, "click Retry", chromedp.Click(chromedp.CSS(`#symbolize-retry`)))
	waitForJS(t, b, "symbolized after Retry", row+`.dataset.state === 'symbolized' && document.getElementById('symbolization').dataset.job === 'done'`)
	waitForJS(t, b, "names after Retry", `document.getElementById('match').textContent.includes('60.00%')`)
	if !odEval[bool](t, b, `document.getElementById('symbolize-retry').hidden`) {
		t.Error("Retry still offered with nothing missing")
	}
	for _, p := range b.Problems() {
		t.Errorf("page problem: %s", p)
	}
}

// TestBrowserOnDemandKeys: perf's keys on the page. s typed into the search
// box is text; s pressed on the page skips the binary being fetched, and
// after Retry, d disables debuginfod for the rest of the profile.
func TestBrowserOnDemandKeys(t *testing.T) {
	p := heldOnDemandPage(t) // every download stops after 64 KiB
	b, row, base, id := p.b, p.row, p.base, p.id

	odDo(t, b, "type s and d in the search box",
		chromedp.Focus(chromedp.CSS("#search")),
		chromedp.SendKeys(chromedp.CSS("#search"), "sd"))
	if got := odEval[string](t, b, row+`.dataset.state`); got != "fetching" {
		t.Fatalf("typing s and d into the search box changed the binary to %q", got)
	}
	if odEval[string](t, b, `document.getElementById('search').value`) != "sd" {
		t.Errorf("the search box did not keep the typed text")
	}

	odDo(t, b, "press s on the page",
		chromedp.Blur(chromedp.CSS("#search")),
		chromedp.KeyEvent("s"))
	waitForJS(t, b, "skipped by s", row+`.dataset.state === 'skipped' && document.getElementById('symbolization').dataset.job === 'done'`)
	if got := odEval[string](t, b, row+`.cells[4].textContent`); got != "skipped by the user" {
		t.Errorf("detail after s: %q", got)
	}

	waitForJS(t, b, "the Retry button", `!document.getElementById('symbolize-retry').hidden`)
	// The ended job folded the panel to its summary line: open it, as a
	// user does, to reach Retry.
	if odEval[bool](t, b, `!document.querySelector('#symbolization details').open`) {
		odDo(t, b, "open the folded panel", chromedp.Click(chromedp.CSS(`#symbolization details > summary`)))
	}
	odDo(t, b, "click Retry", chromedp.Click(chromedp.CSS(`#symbolize-retry`)))
	waitForJS(t, b, "fetching again", row+`.dataset.state === 'fetching' && !document.getElementById('symbolize-disable').hidden`)
	odDo(t, b, "press d on the page", chromedp.KeyEvent("d"))
	waitForJS(t, b, "disabled by d", row+`.dataset.state === 'skipped' && document.getElementById('symbolization').dataset.job === 'done'`)
	if got := odEval[string](t, b, row+`.cells[4].textContent`); !strings.Contains(got, "disabled") {
		t.Errorf("detail after d: %q, want it to say debuginfod was disabled", got)
	}
	resp, err := http.Get(base + "/p/" + id + "/symbolization")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Disabled bool `json:"disabled"`
	}
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if !st.Disabled {
		t.Errorf("the server does not record debuginfod as disabled for this profile after d")
	}
	for _, p := range b.Problems() {
		t.Errorf("page problem: %s", p)
	}
}

func TestBrowserUploadWithoutDebuginfod(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(webtest.OndemandDir(), "debuginfo"))
	bid, _ := debuginfodtest.BuildID(exe)
	_, base := webtest.SymbolizingServer(t, []string{dsrv.URL}, 2)
	pb := filepath.Join(t.TempDir(), "private.pb.gz")
	if err := os.WriteFile(pb, webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 6), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.Start(t, browsertest.Options{})
	odDo(t, b, "open the upload page", chromedp.Navigate(base+"/"))
	odDo(t, b, "tick don't ask debuginfod", chromedp.Click(chromedp.CSS("#no-debuginfod")))
	odDo(t, b, "choose the file", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{pb}, chromedp.NodeReady))
	waitForJS(t, b, "the profile page", `location.pathname.startsWith('/p/')`)
	waitForJS(t, b, "the outcome", `document.querySelector('#binaries tr')?.dataset.state === 'no symbols'`)
	waitForJS(t, b, "the note", `document.getElementById('symbolize-note').textContent.includes('not asked')`)
	if n := dsrv.Requests(bid); n != 0 {
		t.Errorf("the server got %d requests for a profile uploaded with debuginfod unticked", n)
	}
	for _, p := range b.Problems() {
		t.Errorf("page problem: %s", p)
	}
}
