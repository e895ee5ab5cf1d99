package browsertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/web/browsertest"
)

// BenchmarkVsSpeedscope measures, side by side in one run, the time to
// the first flame graph and the peak memory of viewer and of speedscope
// in headless chromium on the same JSON profiles (issue 31: a 100 MB
// Chrome trace and a 1M-sample .cpuprofile, testdata/bench/genv8):
//
//   - viewer: a `viewer serve` process (VIEWER_BIN) is sent the file
//     (POST /api/profiles) and the browser opens its flame graph page
//     until drawn (body data-ready); memory is the server's peak RSS
//     plus the renderer's, CPU the server's and the renderer's;
//   - speedscope: its release build (VIEWER_SPEEDSCOPE_DIR, the npm
//     package's dist/release) served on loopback with the file, opened
//     at #profileURL= until it has named the profile in the title and
//     drawn the next two frames; memory is the renderer's peak RSS.
//
// Each side's browser is started and left to settle (Browser.Settle), and
// its renderer's peak RSS reset to its present, before the clock starts: a
// fresh chromium's own start-up work and memory are neither tool's.
// Viewer's side also logs when its upload ended and its page's marks
// (pageMarks). VIEWER_BENCH_FILES is a comma-separated list of files;
// VIEWER_BENCH_VIEWER_ONLY=1 measures viewer's side alone (two viewer
// builds against each other). Speedscope is
// given VIEWER_SPEEDSCOPE_TIMEOUT (default 20m) to draw; past it, its
// figures so far are reported, and the ratios are upper bounds. It reports the
// ratios viewer ÷ speedscope (time/speedscope, mem/speedscope; the
// issue's goals are 0.25 and 0.5), and mem-above-blank/speedscope: the
// same memory less what each browser's blank tab held before the page
// (chromium's own ~120 MiB a renderer, which viewer's side pays beside its
// server and speedscope's does not). testdata/bench/speedscope.sh runs it.
func BenchmarkVsSpeedscope(b *testing.B) {
	bin, ssDir, files := os.Getenv("VIEWER_BIN"), os.Getenv("VIEWER_SPEEDSCOPE_DIR"), os.Getenv("VIEWER_BENCH_FILES")
	if bin == "" || ssDir == "" || files == "" {
		b.Skip("set VIEWER_BIN, VIEWER_SPEEDSCOPE_DIR and VIEWER_BENCH_FILES (testdata/bench/speedscope.sh)")
	}
	for _, file := range strings.Split(files, ",") {
		b.Run(filepath.Base(file), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				v := viewerFirstFlame(b, bin, file)
				b.Logf("%s: viewer %v (server %d MiB peak RSS, %.2f CPU s; renderer %d MiB, blank tab %d MiB, %.2f CPU s)",
					filepath.Base(file), v.time.Round(time.Millisecond), v.serverRSS>>20, v.serverCPU.Seconds(), v.rendererRSS>>20, v.blankRSS>>20, v.rendererCPU.Seconds())
				if os.Getenv("VIEWER_BENCH_VIEWER_ONLY") != "" {
					continue
				}
				s := speedscopeFirstFlame(b, ssDir, file)
				drew := "drew"
				if !s.drawn {
					// The ratios are then upper bounds.
					drew = "had NOT drawn (ratios below are upper bounds)"
				}
				b.Logf("%s: speedscope %s after %v (renderer %d MiB, blank tab %d MiB, %.2f CPU s)",
					filepath.Base(file), drew, s.time.Round(time.Millisecond), s.rendererRSS>>20, s.blankRSS>>20, s.rendererCPU.Seconds())
				b.ReportMetric(v.time.Seconds(), "viewer-s")
				b.ReportMetric(s.time.Seconds(), "speedscope-s")
				b.ReportMetric(v.time.Seconds()/s.time.Seconds(), "time/speedscope")
				b.ReportMetric(float64(v.serverRSS+v.rendererRSS)/float64(s.rendererRSS), "mem/speedscope")
				b.ReportMetric(float64(v.serverRSS+v.rendererRSS-v.blankRSS)/float64(s.rendererRSS-s.blankRSS), "mem-above-blank/speedscope")
				b.ReportMetric(v.serverCPU.Seconds(), "server-cpu-s")
				b.ReportMetric((v.serverCPU+v.rendererCPU).Seconds()/s.rendererCPU.Seconds(), "cpu/speedscope")
			}
		})
	}
}

// firstFlame is one side's figures.
type firstFlame struct {
	drawn                  bool // speedscope's: false when it had not drawn by the timeout
	time                   time.Duration
	serverRSS, rendererRSS int64
	blankRSS               int64 // the renderer's peak RSS with the blank tab, before the page
	serverCPU, rendererCPU time.Duration
}

func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// procCPU is a process's user + system CPU time (/proc/PID/stat).
func procCPU(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// procHWM is a process's peak RSS (VmHWM).
func procHWM(pid int) int64 {
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func viewerFirstFlame(b *testing.B, bin, file string) firstFlame {
	addr := freeAddr(b)
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data", b.TempDir(), "--no-debuginfod", "--no-local-files")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	base := "http://" + addr
	for i := 0; ; i++ {
		if r, err := http.Get(base + "/"); err == nil {
			r.Body.Close()
			break
		}
		if i == 300 {
			b.Fatal("viewer serve did not answer")
		}
		time.Sleep(100 * time.Millisecond)
	}
	br := browsertest.Start(b, browsertest.Options{Width: 1400, Height: 900})
	defer br.Close()
	br.Settle(10 * time.Second)
	br.ResetRendererPeakRSS()
	cpu0, rcpu0 := procCPU(cmd.Process.Pid), time.Duration(0)
	if c, err := br.RendererCPU(); err == nil {
		rcpu0 = c
	}
	blank, _ := br.RendererPeakRSS()
	f, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	resp, err := http.Post(base+"/api/profiles", "application/octet-stream", f)
	if err != nil {
		b.Fatal(err)
	}
	var created struct{ URL string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		b.Fatalf("upload: HTTP %d, %v", resp.StatusCode, err)
	}
	uploaded := time.Since(start)
	ctx, cancel := context.WithTimeout(br.Ctx, 10*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+created.URL), chromedp.WaitReady(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		b.Fatalf("viewer's page never drew: %v; problems %q", err, br.Problems())
	}
	out := firstFlame{time: time.Since(start), serverRSS: procHWM(cmd.Process.Pid), serverCPU: procCPU(cmd.Process.Pid) - cpu0, blankRSS: blank}
	if marks, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](pageMarks)); err == nil {
		b.Logf("viewer: uploaded in %v; the page's marks (ms since its navigation): %v", uploaded.Round(time.Millisecond), marks)
	}
	out.rendererRSS, _ = br.RendererPeakRSS()
	if c, err := br.RendererCPU(); err == nil {
		out.rendererCPU = c - rcpu0
	}
	return out
}

func speedscopeFirstFlame(b *testing.B, dir, file string) firstFlame {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	mux.HandleFunc("/profile/", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, file) })
	srv := &http.Server{Handler: mux}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	br := browsertest.Start(b, browsertest.Options{Width: 1400, Height: 900})
	defer br.Close()
	br.Settle(10 * time.Second)
	br.ResetRendererPeakRSS()
	var rcpu0 time.Duration
	if c, err := br.RendererCPU(); err == nil {
		rcpu0 = c
	}
	blank, _ := br.RendererPeakRSS()
	name := filepath.Base(file)
	u := "http://" + ln.Addr().String() + "/index.html#profileURL=" + url.QueryEscape("http://"+ln.Addr().String()+"/profile/"+name)
	start := time.Now()
	wait := 20 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("VIEWER_SPEEDSCOPE_TIMEOUT")); err == nil {
		wait = d
	}
	ctx, cancel := context.WithTimeout(br.Ctx, wait)
	defer cancel()
	err = chromedp.Do(ctx, chromedp.Navigate(u))
	if err == nil {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.title.endsWith(" - speedscope") || document.body.innerText.includes("went wrong")`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait)))
	}
	drawn := false
	if err == nil {
		drawn, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(document.title.endsWith(" - speedscope")))))`, chromedp.EvalAwaitPromise))
	}
	if err != nil && ctx.Err() == nil || err == nil && !drawn {
		b.Fatalf("speedscope failed on %s: %v; problems %q", name, err, br.Problems())
	}
	out := firstFlame{time: time.Since(start), drawn: err == nil, blankRSS: blank}
	out.rendererRSS, _ = br.RendererPeakRSS()
	if c, err := br.RendererCPU(); err == nil {
		out.rendererCPU = c - rcpu0
	}
	return out
}
