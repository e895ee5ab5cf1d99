package web_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web"
	"viewer/web/ingest/otlptest"
)

// BenchmarkOTLPIntake has 8 clients send OTLP profiles of 10,000 samples
// each (protobuf) to one server, as a fleet of eBPF profilers would, and
// reports profiles stored per second, the median and 99th-percentile
// latency, and the server's CPU time per profile and peak RSS (goals:
// ≥ 200/s and p99 ≤ 100 ms on 2 cores).
//
//	go test -run '^$' -bench OTLPIntake -benchtime 200x ./web/
//
// The server runs in a process of its own (this test binary again, as
// TestOTLPBenchServer), so that its CPU time is the server's alone: the
// request bodies are encoded before the timer, and the clients' CPU is
// reported apart (client-cpu-ms/profile).
func BenchmarkOTLPIntake(b *testing.B) {
	srv := startOTLPServer(b)
	bodies := make([][]byte, b.N+8)
	for i := range bodies {
		body, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.EBPFLike(10_000, i), map[string]string{"service.name": "app"})).MarshalProto()
		if err != nil {
			b.Fatal(err)
		}
		bodies[i] = body
	}
	post := func(body []byte) (time.Duration, error) {
		t0 := time.Now()
		resp, err := http.Post(srv.url+web.OTLPPath, "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("%s", resp.Status)
		}
		return time.Since(t0), nil
	}
	// Warm up the server (its heap, its connections) with 8 profiles
	// that are not counted.
	var wg sync.WaitGroup
	for _, body := range bodies[b.N:] {
		wg.Go(func() {
			if _, err := post(body); err != nil {
				b.Error("warm-up:", err)
			}
		})
	}
	wg.Wait()
	lat := make([]time.Duration, b.N)
	next := make(chan int, b.N)
	for i := range b.N {
		next <- i
	}
	close(next)
	b.ResetTimer()
	srv0, cli0 := srv.cpuTime(b), cpuTime()
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for i := range next {
				d, err := post(bodies[i])
				if err != nil {
					b.Errorf("request %d: %v", i, err)
					return
				}
				lat[i] = d
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	srvPer := (srv.cpuTime(b) - srv0) / time.Duration(b.N)
	cliPer := (cpuTime() - cli0) / time.Duration(b.N)
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/el.Seconds(), "profiles/s")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	// On a shared machine the wall-clock figures depend on the other
	// load; the server's CPU time per profile says what 2 idle cores
	// could take.
	b.ReportMetric(float64(srvPer.Microseconds())/1000, "server-cpu-ms/profile")
	b.ReportMetric(float64(cliPer.Microseconds())/1000, "client-cpu-ms/profile")
	b.ReportMetric(2/srvPer.Seconds(), "profiles/s-on-2-idle-cores")
	b.ReportMetric(float64(srv.peakRSS(b))/(1<<20), "server-peak-rss-MiB")
}

// benchServerEnv names the data directory of the server process
// BenchmarkOTLPIntake starts; TestOTLPBenchServer serves only when it is set.
const benchServerEnv = "VIEWER_OTLP_BENCH_SERVER"

// benchServerProfileEnv, when set, is where the server process writes
// its CPU profile (-test.cpuprofile).
const benchServerProfileEnv = "VIEWER_OTLP_BENCH_CPUPROFILE"

// benchServerMemProfileEnv, when set, is where the server process writes
// its allocation profile (-test.memprofile, every allocation sampled).
const benchServerMemProfileEnv = "VIEWER_OTLP_BENCH_MEMPROFILE"

// TestOTLPBenchServer is BenchmarkOTLPIntake's server process, not a
// test: with benchServerEnv set, it serves an OTLP-enabled viewer on
// 127.0.0.1, writes its address on stdout, and stops when its stdin
// closes (the benchmark ended or died).
func TestOTLPBenchServer(t *testing.T) {
	dir := os.Getenv(benchServerEnv)
	if dir == "" {
		t.Skip("the server process of BenchmarkOTLPIntake; run by it")
	}
	s, err := web.New(web.Config{DataDir: dir, OTLP: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s.Handler()}
	go hs.Serve(ln)
	defer hs.Close()
	fmt.Printf("http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
}

// otlpServer is the server process of BenchmarkOTLPIntake.
type otlpServer struct {
	url string
	pid int
}

// startOTLPServer starts this test binary as TestOTLPBenchServer on a
// fresh data directory, and stops it when b ends.
func startOTLPServer(b *testing.B) *otlpServer {
	dir := b.TempDir()
	args := []string{"-test.run=^TestOTLPBenchServer$", "-test.count=1"}
	if f := os.Getenv(benchServerProfileEnv); f != "" {
		args = append(args, "-test.cpuprofile="+f)
	}
	if f := os.Getenv(benchServerMemProfileEnv); f != "" {
		args = append(args, "-test.memprofile="+f, "-test.memprofilerate=1")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), benchServerEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("the server process: %v", err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		b.Fatalf("the server process did not say its address: %q, %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	return &otlpServer{url: strings.TrimSpace(line), pid: cmd.Process.Pid}
}

// cpuTime is the user and system CPU time the server process has used
// (/proc/PID/stat, in clock ticks of 10 ms).
func (s *otlpServer) cpuTime(b *testing.B) time.Duration {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// peakRSS is the server process's peak resident set (VmHWM), in bytes.
func (s *otlpServer) peakRSS(b *testing.B) int64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(st)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
