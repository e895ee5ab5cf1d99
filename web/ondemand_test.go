package web_test

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/ondemand"
)

// The on-demand tests use testdata/ondemand: a stripped PIE (bin/ondemand,
// no symbols at all) whose debug file (debuginfo/ondemand.debug) only the
// real debuginfod server has.
const ondemandDir = "../testdata/ondemand"

// pieBase is where the profiled process had the executable mapped.
const pieBase = 0x555555554000

// ondemandProfile is a CPU profile of bin/ondemand holding only addresses
// and the build ID, as perf or an eBPF profiler records it. Stacks (root
// first) and sample counts, each 10 ms:
//
//	main > ondemand_run_workload > ondemand_hash_block     6
//	main > ondemand_run_workload > ondemand_render_frame   3
//	main > ondemand_parse_input                            1
//
// so ondemand_hash_block is 60% once named. seed changes the bytes (and so
// the profile's ID) without changing its shape.
func ondemandProfile(t testing.TB, exe, debugFile, file string, seed int) []byte {
	t.Helper()
	bid, err := debuginfodtest.BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	var text *elf.Prog
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			text = p
		}
	}
	// Function addresses come from the debug file, which the server being
	// tested never sees except through debuginfod.
	df, err := elf.Open(debugFile)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	syms, err := df.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			addr[s.Name] = pieBase + s.Value + 4 // inside the function
		}
	}
	for _, fn := range []string{"main", "ondemand_run_workload", "ondemand_hash_block", "ondemand_render_frame", "ondemand_parse_input"} {
		if addr[fn] == 0 {
			t.Fatalf("%s has no symbol %s", debugFile, fn)
		}
	}
	m := &profile.Mapping{
		ID: 1, Start: pieBase + text.Vaddr&^0xfff, Limit: pieBase + (text.Vaddr+text.Memsz+0xfff)&^0xfff,
		Offset: text.Off &^ 0xfff, File: file, BuildID: bid,
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
		Mapping:    []*profile.Mapping{m},
		Comments:   []string{fmt.Sprintf("seed %d", seed)},
	}
	locs := map[string]*profile.Location{}
	loc := func(fn string) *profile.Location {
		if l := locs[fn]; l != nil {
			return l
		}
		l := &profile.Location{ID: uint64(len(locs) + 1), Mapping: m, Address: addr[fn]}
		locs[fn] = l
		p.Location = append(p.Location, l)
		return l
	}
	add := func(n int64, rootFirst ...string) {
		s := &profile.Sample{Value: []int64{n, n * 10_000_000}}
		for i := len(rootFirst) - 1; i >= 0; i-- {
			s.Location = append(s.Location, loc(rootFirst[i]))
		}
		p.Sample = append(p.Sample, s)
	}
	add(6, "main", "ondemand_run_workload", "ondemand_hash_block")
	add(3, "main", "ondemand_run_workload", "ondemand_render_frame")
	add(1, "main", "ondemand_parse_input")
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// symbolizingServer is a viewer with on-demand symbolization asking the
// given debuginfod servers, with a fresh client cache and no system debug
// directories, so only debuginfod can name the test program.
func symbolizingServer(t testing.TB, urls []string, workers int, adjust ...func(*symbolize.Config)) (*web.Server, string) {
	t.Helper()
	return symbolizingServerWith(t, urls, workers, web.Config{}, adjust...)
}

// symbolizingServerWith is symbolizingServer with cfg's other settings.
func symbolizingServerWith(t testing.TB, urls []string, workers int, cfg web.Config, adjust ...func(*symbolize.Config)) (*web.Server, string) {
	t.Helper()
	cache := t.TempDir()
	client, err := debuginfod.New(debuginfod.Config{URLs: urls, CacheDir: cache, Timeout: 30 * time.Second, RetryLimit: 1, MaxParallel: 32})
	if err != nil {
		t.Fatal(err)
	}
	gate := ondemand.NewGate(client)
	scfg := symbolize.Config{
		Fetcher: gate, DebuginfodCacheDir: cache,
		SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none",
	}
	for _, f := range adjust {
		f(&scfg)
	}
	engine := symbolize.New(scfg)
	cfg.DataDir = t.TempDir()
	cfg.Symbolization = &web.SymbolizationConfig{
		Engine: engine, Gate: gate, Servers: client.Servers(), Workers: workers, Queue: 64,
	}
	s, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := loopbackServer(t, s.Handler())
	ts.Config.RegisterOnShutdown(s.CloseSymbolization)
	ts.Start()
	t.Cleanup(func() {
		s.CloseSymbolization()
		ts.Close()
	})
	return s, ts.URL
}

// uploadAPI posts a profile to /api/profiles (with an optional query) and
// returns its ID.
func uploadAPI(t testing.TB, base, query string, data []byte) string {
	t.Helper()
	resp, err := http.Post(base+"/api/profiles"+query, "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&r) != nil {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("upload: %s %s", resp.Status, body)
	}
	return r.ID
}

// finalEvent follows /p/ID/events until the "symbolized" event and returns
// it with the types of the events seen before.
func finalEvent(t testing.TB, base, id string) (ondemand.Status, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/p/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("events: %s, Content-Type %q", resp.Status, ct)
	}
	var types []string
	typ := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
			types = append(types, typ)
		case strings.HasPrefix(line, "data: ") && typ == "symbolized":
			var s ondemand.Status
			if err := json.Unmarshal([]byte(line[6:]), &s); err != nil {
				t.Fatal(err)
			}
			return s, types
		}
	}
	t.Fatalf("events of %s ended without a symbolized event (saw %v): %v", id, types, sc.Err())
	return ondemand.Status{}, nil
}

// functionNames fetches /p/ID/profile.pb.gz and lists its function names.
func functionNames(t testing.TB, base, id string) map[string]bool {
	t.Helper()
	resp, err := http.Get(base + "/p/" + id + "/profile.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p, err := profile.Parse(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range p.Function {
		names[f.Name] = true
	}
	return names
}

func ondemandFiles(t testing.TB) (exe, debug string) {
	exe = filepath.Join(ondemandDir, "bin", "ondemand")
	debug = filepath.Join(ondemandDir, "debuginfo", "ondemand.debug")
	for _, f := range []string{exe, debug} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: rebuild with testdata/ondemand/build.sh", err)
		}
	}
	return exe, debug
}

// paddedDebugDir copies the debug file into a new directory with an extra
// non-allocated section of size bytes (its build ID unchanged).
func paddedDebugDir(t testing.TB, debugFile string, size int) string {
	t.Helper()
	dir := t.TempDir()
	padDebugFile(t, debugFile, filepath.Join(dir, filepath.Base(debugFile)), size)
	return dir
}

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
	ts := loopbackServer(t, proxy)
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
	exe, debugFile := ondemandFiles(t)
	// The server gets a copy of the debug file padded to 640 KiB, and the
	// viewer reaches it through a proxy that lets the download through in
	// steps, so the page is seen following it (the client reports every
	// 64 KiB): first 128 KiB, then 384 KiB, then the rest.
	served := paddedDebugDir(t, debugFile, 640<<10)
	dsrv := debuginfodtest.Start(t, served)
	bid, _ := debuginfodtest.BuildID(exe)
	held := holdDownloads(t, dsrv.URL)
	held.Allow(128 << 10)
	_, base := symbolizingServer(t, []string{held.URL}, 2)
	pb := filepath.Join(t.TempDir(), "ondemand.pb.gz")
	if err := os.WriteFile(pb, ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 0), 0o644); err != nil {
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
	if names := functionNames(t, base, id); !names["ondemand_hash_block"] || !names["ondemand_render_frame"] {
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

func TestOnDemandNoDebuginfodUploadAsksNoServer(t *testing.T) {
	exe, debugFile := ondemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(ondemandDir, "debuginfo"))
	bid, _ := debuginfodtest.BuildID(exe)
	_, base := symbolizingServer(t, []string{dsrv.URL}, 2)
	id := uploadAPI(t, base, "?debuginfod=0", ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 1))
	s, _ := finalEvent(t, base, id)
	if s.Debuginfod || len(s.Asked) != 0 || len(s.Binaries) != 1 || s.Binaries[0].State != symbolize.StateNotFound {
		t.Errorf("final status %+v, want debuginfod off and the binary not found", s)
	}
	if n := dsrv.Requests(bid); n != 0 {
		t.Errorf("a ?debuginfod=0 upload sent %d requests to the server", n)
	}
	// Uploading the same bytes again with debuginfod allowed does not
	// override the first uploader's choice.
	uploadAPI(t, base, "", ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 1))
	resp, err := http.Post(base+"/p/"+id+"/symbolize/retry", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("retry: %s", resp.Status)
	}
	finalEvent(t, base, id)
	if n := dsrv.Requests(bid); n != 0 {
		t.Errorf("after a retry the server got %d requests despite the upload's choice", n)
	}
}

func TestOnDemandUploadsSharingABinaryFetchItOnce(t *testing.T) {
	exe, debugFile := ondemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(ondemandDir, "debuginfo"))
	bid, _ := debuginfodtest.BuildID(exe)
	dsrv.SetRate(8 << 10) // about a second: the uploads overlap
	_, base := symbolizingServer(t, []string{dsrv.URL}, 4)
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := uploadAPI(t, base, "", ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 100+i))
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		s, _ := finalEvent(t, base, id)
		if s.Resolved != 1 {
			t.Errorf("%s: %+v", id, s)
		}
		if !functionNames(t, base, id)["ondemand_hash_block"] {
			t.Errorf("%s was not symbolized", id)
		}
	}
	if n := dsrv.Requests(bid); n != 1 {
		t.Errorf("6 uploads sharing one binary made %d requests to debuginfod, want 1", n)
	}
}

func post(t testing.TB, url string, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// waitState polls /p/ID/symbolization until the binary reaches state.
func waitState(t testing.TB, base, id string, state symbolize.State) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%s's binary to reach %s", id, state), func() bool {
		resp, err := http.Get(base + "/p/" + id + "/symbolization")
		if err != nil {
			t.Fatal(err)
		}
		var s ondemand.Status
		json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		return len(s.Binaries) > 0 && s.Binaries[0].State == state
	})
}

func TestOnDemandSkipThenRetry(t *testing.T) {
	exe, debugFile := ondemandFiles(t)
	dsrv := debuginfodtest.Start(t, paddedDebugDir(t, debugFile, 640<<10))
	bid, _ := debuginfodtest.BuildID(exe)
	dsrv.SetRate(32 << 10) // 20 s: only Skip ends it in time
	_, base := symbolizingServer(t, []string{dsrv.URL}, 2)
	id := uploadAPI(t, base, "", ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 2))
	waitState(t, base, id, symbolize.StateFetching)

	if code, body, _ := post(t, base+"/p/"+id+"/symbolize/skip", nil); code != http.StatusBadRequest || !strings.Contains(body, "build_id") {
		t.Errorf("skip without a build ID: %d %q", code, body)
	}
	if code, _, _ := post(t, base+"/p/"+id+"/symbolize/skip?build_id="+bid, http.Header{"Origin": {"http://evil.example"}}); code != http.StatusForbidden {
		t.Errorf("cross-origin skip: %d, want 403", code)
	}
	if code, _, _ := post(t, base+"/p/"+id+"/symbolize/retry", nil); code != http.StatusConflict {
		t.Errorf("retry while running: %d, want 409", code)
	}
	start := time.Now()
	if code, body, _ := post(t, base+"/p/"+id+"/symbolize/skip?build_id="+strings.ToUpper(bid), nil); code != http.StatusOK {
		t.Fatalf("skip: %d %s", code, body)
	}
	s, _ := finalEvent(t, base, id)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the job ended %v after Skip: the fetch was not cancelled", took)
	}
	if len(s.Binaries) != 1 || s.Binaries[0].State != symbolize.StateSkipped || s.Binaries[0].Reason != "skipped by the user" {
		t.Fatalf("after Skip: %+v", s.Binaries)
	}
	if functionNames(t, base, id)["ondemand_hash_block"] {
		t.Error("names appeared for a skipped binary")
	}

	// Retry: the binary that missed is fetched now.
	dsrv.SetRate(0)
	code, body, _ := post(t, base+"/p/"+id+"/symbolize/retry", nil)
	if code != http.StatusAccepted || !strings.Contains(body, "/p/"+id+"/events") {
		t.Fatalf("retry: %d %s", code, body)
	}
	s, _ = finalEvent(t, base, id)
	if s.Resolved != 1 || !functionNames(t, base, id)["ondemand_hash_block"] {
		t.Errorf("after Retry: %+v", s)
	}
}

func TestOnDemandDisableStopsAskingDebuginfod(t *testing.T) {
	exe, debugFile := ondemandFiles(t)
	dsrv := debuginfodtest.Start(t, paddedDebugDir(t, debugFile, 640<<10))
	dsrv.SetRate(32 << 10)
	_, base := symbolizingServer(t, []string{dsrv.URL}, 2)
	id := uploadAPI(t, base, "", ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 3))
	waitState(t, base, id, symbolize.StateFetching)
	if code, body, _ := post(t, base+"/p/"+id+"/symbolize/disable", nil); code != http.StatusOK {
		t.Fatalf("disable: %d %s", code, body)
	}
	s, _ := finalEvent(t, base, id)
	if s.Debuginfod || !s.Disabled || s.Binaries[0].State != symbolize.StateSkipped || !strings.Contains(s.Binaries[0].Reason, "disabled") {
		t.Errorf("after Disable: %+v", s)
	}
}

func TestOnDemandQueueFullKeepsTheUpload(t *testing.T) {
	exe, debugFile := ondemandFiles(t)
	dsrv := debuginfodtest.Start(t, paddedDebugDir(t, debugFile, 640<<10))
	dsrv.SetRate(32 << 10) // 20 s: the only worker stays busy with the first upload
	client, _ := debuginfod.New(debuginfod.Config{URLs: []string{dsrv.URL}, CacheDir: t.TempDir()})
	gate := ondemand.NewGate(client)
	s, err := web.New(web.Config{DataDir: t.TempDir(), Symbolization: &web.SymbolizationConfig{
		Engine: symbolize.New(symbolize.Config{Fetcher: gate, DebuginfodCacheDir: client.CacheDir(), SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-"}),
		Gate:   gate, Servers: client.Servers(), Workers: 1, Queue: 1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.CloseSymbolization(); ts.Close() })
	var ids []string
	var last *http.Response
	for i := range 5 {
		resp, err := http.Post(ts.URL+"/api/profiles", "application/octet-stream", bytes.NewReader(ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 10+i)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			last = resp
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "/p/") || !strings.Contains(string(body), "queue is full") {
				t.Errorf("503 without Retry-After or the link: %q", body)
			}
			m := regexp.MustCompile(`/p/([a-z2-7]{20})`).FindStringSubmatch(string(body))
			if m == nil {
				t.Fatalf("503 body names no link: %q", body)
			}
			ids = append(ids, m[1])
			continue
		}
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("upload %d: %s %s", i, resp.Status, body)
		}
		if i == 0 {
			var r struct{ ID string }
			json.Unmarshal(body, &r)
			waitState(t, ts.URL, r.ID, symbolize.StateFetching) // the worker holds it
		}
	}
	// One running, one queued: the other three are refused.
	if len(ids) != 3 || last == nil {
		t.Fatalf("%d uploads refused with 503, want 3 (workers 1, queue 1)", len(ids))
	}
	// The refused upload was stored: its link works and names it once the
	// queue has room (opening the page queues it).
	for _, id := range ids {
		resp, err := http.Get(ts.URL + "/p/" + id + "/profile.pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("refused upload %s: profile.pb.gz %s", id, resp.Status)
		}
	}
}

func TestOnDemandPageViewQueuesAStoredProfile(t *testing.T) {
	exe, debugFile := ondemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(ondemandDir, "debuginfo"))
	dir := t.TempDir()
	// Uploaded while symbolization was off (or before a restart).
	plain, err := web.New(web.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	id, err := plain.Ingest(context.Background(), ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 4), "x.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	client, _ := debuginfod.New(debuginfod.Config{URLs: []string{dsrv.URL}, CacheDir: t.TempDir()})
	gate := ondemand.NewGate(client)
	s, err := web.New(web.Config{DataDir: dir, Symbolization: &web.SymbolizationConfig{
		Engine: symbolize.New(symbolize.Config{Fetcher: gate, DebuginfodCacheDir: client.CacheDir(), SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-"}),
		Gate:   gate, Servers: client.Servers(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.CloseSymbolization(); ts.Close() })
	resp, err := http.Get(ts.URL + "/p/" + id)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "/p/"+id+"/events") || !strings.Contains(string(page), "symbolize.js") {
		t.Fatalf("the page of an unsymbolized profile has no event stream")
	}
	st, _ := finalEvent(t, ts.URL, id)
	if st.Resolved != 1 || !functionNames(t, ts.URL, id)["ondemand_hash_block"] {
		t.Errorf("after the page view: %+v", st)
	}
	// A later view has the outcome and no stream.
	resp, _ = http.Get(ts.URL + "/p/" + id)
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(page), "/p/"+id+"/events") || !strings.Contains(string(page), `data-state="symbolized"`) {
		t.Errorf("the page after symbolization still streams or lacks the outcome")
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
	exe, debugFile := ondemandFiles(t)
	dsrv := debuginfodtest.Start(t, paddedDebugDir(t, debugFile, 640<<10))
	p := heldPage{held: holdDownloads(t, dsrv.URL), row: `document.querySelector('#binaries tr')`}
	p.held.Allow(64 << 10)
	_, p.base = symbolizingServer(t, []string{p.held.URL}, 2)
	p.id = uploadAPI(t, p.base, "", ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 5))

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
	exe, debugFile := ondemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(ondemandDir, "debuginfo"))
	bid, _ := debuginfodtest.BuildID(exe)
	_, base := symbolizingServer(t, []string{dsrv.URL}, 2)
	pb := filepath.Join(t.TempDir(), "private.pb.gz")
	if err := os.WriteFile(pb, ondemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 6), 0o644); err != nil {
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

// TestOnDemandKernelFetchesVmlinuxLast: a kernel mapping is named from this
// machine's kallsyms when its build ID is the running kernel's, with no
// request to debuginfod; the vmlinux is fetched by build ID only when
// nothing local fits.
func TestOnDemandKernelFetchesVmlinuxLast(t *testing.T) {
	dir := t.TempDir()
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	vmlinux := filepath.Join(dir, "vmlinux") // stands in for one: ET_EXEC, absolute addresses
	if out, err := exec.Command(gcc, "-g", "-O1", "-fno-inline", "-no-pie", "-fno-pie", "-Wl,--build-id=sha1", "-o", vmlinux, filepath.Join(ondemandDir, "ondemand.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	bid, _ := debuginfodtest.BuildID(vmlinux)
	ef, err := elf.Open(vmlinux)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := ef.Symbols()
	ef.Close()
	addr := map[string]uint64{}
	var kallsyms strings.Builder
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			addr[s.Name] = s.Value
			fmt.Fprintf(&kallsyms, "%016x T %s\n", s.Value, s.Name)
		}
	}
	fmt.Fprintf(&kallsyms, "%016x T _text\n", addr["main"]&^0xfff)
	ksPath := filepath.Join(t.TempDir(), "kallsyms")
	os.WriteFile(ksPath, []byte(kallsyms.String()), 0o644)
	notes := func(id string) string {
		desc, _ := hex.DecodeString(id)
		b := make([]byte, 12, 16+len(desc))
		binary.LittleEndian.PutUint32(b, 4)
		binary.LittleEndian.PutUint32(b[4:], uint32(len(desc)))
		binary.LittleEndian.PutUint32(b[8:], 3)
		b = append(append(b, "GNU\x00"...), desc...)
		p := filepath.Join(t.TempDir(), "notes")
		os.WriteFile(p, b, 0o644)
		return p
	}
	kernelProfile := func(seed int64) []byte {
		m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "[kernel.kallsyms]", BuildID: bid}
		l := &profile.Location{ID: 1, Mapping: m, Address: addr["ondemand_hash_block"] + 4}
		p := &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
			Sample:     []*profile.Sample{{Location: []*profile.Location{l}, Value: []int64{seed}}},
			Mapping:    []*profile.Mapping{m}, Location: []*profile.Location{l},
		}
		var b bytes.Buffer
		p.Write(&b)
		return b.Bytes()
	}
	dsrv := debuginfodtest.Start(t, dir)

	// The running kernel: kallsyms names it, nothing is fetched.
	_, base := symbolizingServer(t, []string{dsrv.URL}, 1, func(c *symbolize.Config) {
		c.KallsymsPath, c.KernelNotesPath = ksPath, notes(bid)
	})
	id := uploadAPI(t, base, "", kernelProfile(1))
	s, _ := finalEvent(t, base, id)
	if s.Resolved != 1 || !strings.Contains(s.Binaries[0].Source, "kallsyms") {
		t.Errorf("running kernel: %+v", s.Binaries)
	}
	if n := dsrv.Requests(bid); n != 0 {
		t.Errorf("kallsyms could name the running kernel, yet debuginfod got %d requests", n)
	}

	// Another machine's kernel: the vmlinux comes from debuginfod.
	_, base = symbolizingServer(t, []string{dsrv.URL}, 1, func(c *symbolize.Config) {
		c.KallsymsPath, c.KernelNotesPath = ksPath, notes("ffeeddccbbaa99887766554433221100ffeeddcc")
	})
	id = uploadAPI(t, base, "", kernelProfile(2))
	s, _ = finalEvent(t, base, id)
	if s.Resolved != 1 || !strings.Contains(s.Binaries[0].Source, "debuginfod") {
		t.Errorf("other kernel: %+v", s.Binaries)
	}
	if n := dsrv.Requests(bid); n != 1 {
		t.Errorf("other kernel: debuginfod got %d requests, want 1", n)
	}
	if !functionNames(t, base, id)["ondemand_hash_block"] {
		t.Error("the kernel frame has no name after the vmlinux was fetched")
	}
}
