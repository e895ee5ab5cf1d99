// Package browsertest drives Debian's headless chromium through chromedp for
// the web package's browser tests and benchmarks: it starts one browser with
// a fresh profile directory, records the page's script errors, saves
// screenshots as test artifacts and reads the renderer's peak memory.
//
// Those tests are this package's own (package browsertest_test), in a
// module of its own, viewer/web/browsertest, so that chromedp and cdproto
// stay out of viewer's go.mod; what they share with the web package's
// other tests is in viewer/web/webtest. make test runs them (BROWSER_TESTS
// in the Makefile); `go test ./...` at the repository's top does not.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium is where Debian's chromium package installs the browser.
const Chromium = "/usr/bin/chromium"

// Browser is one headless chromium with one tab.
type Browser struct {
	// Ctx runs actions in the tab: chromedp.Do(b.Ctx, ...).
	Ctx context.Context

	mu       sync.Mutex
	problems []string
	stopOnce sync.Once
	stop     func()
}

// Close stops the browser and removes its profile directory; the test's
// cleanup calls it too.
func (b *Browser) Close() {
	b.stopOnce.Do(func() {
		if b.stop != nil {
			b.stop()
		}
	})
}

// Options adjust Start.
type Options struct {
	Width, Height int // window size in CSS px; default 1400x900
	// Flags are more chromium flags (chromedp.Flag), after the usual ones.
	Flags []chromedp.ExecAllocatorOption
}

// StartTimeout bounds chromium's start-up (about a second on an idle
// machine, a few under heavy load): generous, so a busy machine does not
// fail a test, but finite, so a browser that never answers fails the test
// with its output instead of hanging until go test's own timeout.
const StartTimeout = 90 * time.Second

// Start launches headless chromium with the flags the team uses for tests
// run as root (no sandbox, no GPU, no background traffic) and a fresh user
// data directory. It fails the test when chromium is missing or does not
// start within StartTimeout. The browser is stopped when the test ends.
// With go test -short it skips the test instead: browser tests are
// integration tests, which make test runs.
func Start(tb testing.TB, opt Options) *Browser {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts headless chromium: skipped with -short")
	}
	if _, err := os.Stat(Chromium); err != nil {
		tb.Fatalf("browser tests need chromium at %s (%v): run make deps", Chromium, err)
	}
	if opt.Width == 0 {
		opt.Width, opt.Height = 1400, 900
	}
	dir, err := os.MkdirTemp("", "viewer-chromium-")
	if err != nil {
		tb.Fatal(err)
	}
	b := &Browser{}
	stderr := &lockedWriter{w: &bytes.Buffer{}}
	flags := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(opt.Width, opt.Height),
		chromedp.CombinedOutput(stderr),
	}, opt.Flags...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), flags...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	b.stop = func() {
		cancel()
		acancel()
		os.RemoveAll(dir)
	}
	tb.Cleanup(b.Close)
	start := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, log.Enable, cdp.Empty{})
		return err
	})
	// The first action launches the browser. Its context must not carry
	// the deadline (the browser lives as long as ctx), so the bound is a
	// timer that stops the browser.
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx, start) }()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("starting %s: %v (after %v)\n%s", Chromium, err, time.Since(began).Round(time.Millisecond), tail(stderr.String(), 2000))
		}
	case <-timer.C:
		b.Close()
		<-done
		tb.Fatalf("%s did not start within %v\n%s", Chromium, StartTimeout, tail(stderr.String(), 2000))
	}
	if took := time.Since(began); took > 10*time.Second {
		tb.Logf("%s took %v to start (a busy machine?)", Chromium, took.Round(time.Millisecond))
	}
	b.Ctx = ctx
	return b
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// String returns what was written so far; chromium may still be writing.
func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// listen records uncaught exceptions, console.error calls and browser log
// errors (failed loads, CSP violations).
func (b *Browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = "exception: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		if d.URL != "" {
			msg += fmt.Sprintf(" at %s:%d", d.URL, d.LineNumber+1)
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			if len(a.Value) > 0 {
				parts = append(parts, string(a.Value))
			} else {
				parts = append(parts, a.Description)
			}
		}
		msg = "console.error: " + strings.Join(parts, " ")
	case *log.EventEntryAdded:
		if ev.Entry == nil || ev.Entry.Level != log.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.problems = append(b.problems, msg)
	b.mu.Unlock()
}

// Problems returns the script errors and failed loads seen since the last
// call, and forgets them.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

// ArtifactDir is where screenshots go: $VIEWER_ARTIFACTS when set (CI keeps
// it), else a directory of the test.
func ArtifactDir(tb testing.TB) string {
	if d := os.Getenv("VIEWER_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatalf("VIEWER_ARTIFACTS: %v", err)
		}
		return d
	}
	return tb.TempDir()
}

// Screenshot saves a PNG of the whole page (beyond the viewport) as
// name.png in ArtifactDir, logs and returns its path.
func (b *Browser) Screenshot(tb testing.TB, name string) string {
	tb.Helper()
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(ArtifactDir(tb), sanitize(name)+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("screenshot: %s", path)
	return path
}

// ViewportPNG returns a PNG of what the window shows.
func (b *Browser) ViewportPNG() ([]byte, error) {
	return chromedp.Run(b.Ctx, chromedp.CaptureScreenshot())
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func sanitize(s string) string { return unsafeName.ReplaceAllString(s, "_") }

// WaitReady waits until the page sets data-ready="1" on <body>, which the
// flame graph page does once it has drawn.
func (b *Browser) WaitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`body[data-ready="1"]`)))
}

// RendererPeakRSS returns the largest peak resident set size (VmHWM) among
// the browser's renderer processes, in bytes.
func (b *Browser) RendererPeakRSS() (int64, error) {
	pids, err := b.renderers()
	if err != nil {
		return 0, err
	}
	var peak int64
	for _, pid := range pids {
		if hwm, err := vmHWM(pid); err == nil && hwm > peak {
			peak = hwm
		}
	}
	return peak, nil
}

// ResetRendererPeakRSS makes each renderer's peak resident set size
// (VmHWM) its present one (/proc/PID/clear_refs 5, which needs the
// process's owner or root), so that RendererPeakRSS then reads the peak
// of what comes next, not of the renderer's start-up.
func (b *Browser) ResetRendererPeakRSS() error {
	pids, err := b.renderers()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			return err
		}
	}
	return nil
}

// RendererCPU is the CPU time (user + system, /proc/PID/stat, in clock
// ticks of 10 ms) the browser's renderer processes have used so far: the
// page's own work, which a loaded machine's waiting for a core does not
// inflate as it does wall time. The difference of two readings is the
// work between them.
func (b *Browser) RendererCPU() (time.Duration, error) {
	pids, err := b.renderers()
	if err != nil {
		return 0, err
	}
	return processCPU(pids), nil
}

// Settle waits until the browser has finished starting: its processes
// (the browser and all under it) using under a twentieth of a core over a
// quarter of a second, or at most max. A fresh chromium keeps both cores
// of a small machine busy for a second or more after its first blank tab
// (its GPU, network and storage services, the renderer's warm-up), which
// a benchmark's clock would otherwise count against whichever page loads
// first; a user's browser has long finished starting.
func (b *Browser) Settle(max time.Duration) {
	const window = 250 * time.Millisecond
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		pids, err := b.processes(false)
		if err != nil {
			return
		}
		before := processCPU(pids)
		time.Sleep(window)
		if processCPU(pids)-before < window/20 {
			return
		}
	}
}

// processCPU is the CPU time of pids (user + system, in clock ticks of
// 10 ms); an exited process counts nothing.
func processCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // exited
		}
		// After "(comm)": state is field 3; utime and stime fields 14 and 15.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		sum += time.Duration(u+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
	}
	return sum
}

// renderers are the pids of the renderer processes under this browser.
func (b *Browser) renderers() ([]int, error) {
	pids, err := b.processes(true)
	if err == nil && len(pids) == 0 {
		err = fmt.Errorf("no renderer process under the browser")
	}
	return pids, err
}

// processes are the pids of the browser and every process under it, or
// of its renderer processes only.
func (b *Browser) processes(renderersOnly bool) ([]int, error) {
	c := chromedp.FromContext(b.Ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return nil, fmt.Errorf("no browser process")
	}
	root := c.Browser.Process().Pid
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	var candidates []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		if renderersOnly {
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if !bytes.Contains(cmd, []byte("--type=renderer")) {
				continue
			}
		}
		candidates = append(candidates, pid)
	}
	var ours []int
	for _, pid := range candidates {
		for p, n := pid, 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				ours = append(ours, pid)
				break
			}
		}
	}
	return ours, nil
}

func vmHWM(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
