// Package debuginfodtest runs Debian's real debuginfod server (elfutils) for
// tests, reachable only from this machine, and builds small ELF files with
// build IDs for it to serve.
//
// debuginfod 0.188 listens on every interface and has no listen-address
// option, so Start runs it in a private network namespace (unshare --net) and
// bridges it out with socat through a unix socket to a Go proxy listening on
// 127.0.0.1. The proxy counts requests per build ID and can slow responses
// down. Everything stops at test cleanup, and with the test process if it
// dies (the server runs in its own PID namespace too).
//
//	dir := t.TempDir()
//	_, id := debuginfodtest.BuildELF(t, dir, "prog", 1<<20)
//	srv := debuginfodtest.Start(t, dir)
//	// DEBUGINFOD_URLS=srv.URL ... then check srv.Requests(id)
package debuginfodtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"viewer/symbolize/debuginfod"
)

// Server is a running debuginfod reachable at URL.
type Server struct {
	// URL is the base URL to put in DEBUGINFOD_URLS, http://127.0.0.1:PORT.
	URL string

	t       testing.TB
	logPath string
	client  *http.Client // straight to the unix socket, not counted

	mu       sync.Mutex
	requests []Request
	rate     atomic.Int64 // bytes per second for response bodies; 0: unlimited
}

// Request is one request that reached the server through the proxy.
type Request struct {
	Method  string
	Path    string
	BuildID string // lowercase as sent, empty when the path has none
	Header  http.Header
	Status  int // 0 until the response headers came back
}

// tools Start needs, with the Debian package providing each.
var tools = [][2]string{
	{"debuginfod", "debuginfod"},
	{"unshare", "util-linux"},
	{"ip", "iproute2"},
	{"socat", "socat"},
}

// NeedTool fails the test when a command is missing, naming its package.
func NeedTool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (Debian package %s): run make deps", name, pkg)
	}
	return p
}

// Start runs debuginfod indexing the ELF files under dirs (its -F mode) and
// returns once the first scan has finished, so every file is served.
// With go test -short it skips the test instead (an integration test,
// which make test runs).
func Start(t testing.TB, dirs ...string) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Debian's debuginfod server: skipped with -short")
	}
	for _, tl := range tools {
		NeedTool(t, tl[0], tl[1])
	}
	if len(dirs) == 0 {
		t.Fatal("debuginfodtest.Start: give at least one directory to index")
	}
	var abs []string
	for _, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			t.Fatal(err)
		}
		abs = append(abs, a)
	}
	work := t.TempDir()
	// A unix socket path must stay under 108 bytes; test temp dirs can be long.
	sockDir, err := os.MkdirTemp("", "dfd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s")
	s := &Server{t: t, logPath: filepath.Join(work, "debuginfod.log")}

	script := `set -e
ip link set lo up
debuginfod -p 8002 -d "$DB" -t 0 -g 0 -F "$@" >"$LOG" 2>&1 &
exec socat UNIX-LISTEN:"$SOCK",fork,unlink-early TCP:127.0.0.1:8002`
	args := []string{"--net", "--pid", "--fork", "--kill-child"}
	if os.Geteuid() != 0 {
		args = append(args, "--map-root-user") // a user namespace grants the rights
	}
	args = append(append(args, "sh", "-c", script, "sh"), abs...)
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), "DB="+filepath.Join(work, "index.sqlite"), "LOG="+s.logPath, "SOCK="+sock, "TMPDIR="+work)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting debuginfod in a network namespace: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("debuginfod log:\n%s", s.Log())
		}
	})

	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	tr := &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 64, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	s.client = &http.Client{Transport: tr}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.URL = "http://" + ln.Addr().String()
	target, _ := url.Parse("http://debuginfod")
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport:     tr,
		FlushInterval: -1,
		BufferPool:    bufferPool{},
		ModifyResponse: func(resp *http.Response) error {
			s.noteStatus(resp.Request, resp.StatusCode)
			if rate := s.rate.Load(); rate > 0 {
				resp.Body = &slowBody{rc: resp.Body, rate: rate, ctx: resp.Request.Context()}
			}
			return nil
		},
		ErrorLog: nil,
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		proxy.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := s.Metrics()
		if err == nil && m[`thread_work_total{role="traverse"}`] >= 1 &&
			m[`thread_work_pending{role="scan"}`] == 0 && m[`thread_busy{role="scan"}`] == 0 {
			break
		}
		select {
		case <-exited:
			t.Fatalf("debuginfod exited before it was ready: %s\nlog:\n%s", stderr.String(), s.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("debuginfod did not finish indexing %v within 30s (last error: %v)\nlog:\n%s", abs, err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

var buildIDPath = regexp.MustCompile(`^/buildid/([^/]+)/`)

func (s *Server) record(r *http.Request) {
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
	if m := buildIDPath.FindStringSubmatch(r.URL.Path); m != nil {
		req.BuildID = m[1]
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
}

func (s *Server) noteStatus(r *http.Request, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.requests) - 1; i >= 0; i-- {
		if s.requests[i].Path == r.URL.Path && s.requests[i].Status == 0 {
			s.requests[i].Status = status
			return
		}
	}
}

// Requests counts the requests for buildID (any kind) that reached the
// server.
func (s *Server) Requests(buildID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.BuildID == buildID {
			n++
		}
	}
	return n
}

// AllRequests returns every request that reached the server, in order.
func (s *Server) AllRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SetRate slows every response body to about bytesPerSecond (0: full
// speed), for tests that must catch a download in the middle.
func (s *Server) SetRate(bytesPerSecond int64) { s.rate.Store(bytesPerSecond) }

// Metrics reads the server's /metrics (Prometheus text) into a map keyed by
// series, e.g. `http_responses_total{result="404"}`.
func (s *Server) Metrics() (map[string]float64, error) {
	resp, err := s.client.Get("http://debuginfod/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// Metric sums every series of the named metric, e.g. "http_responses_total".
func (s *Server) Metric(name string) float64 {
	s.t.Helper()
	m, err := s.Metrics()
	if err != nil {
		s.t.Fatalf("reading debuginfod /metrics: %v", err)
	}
	var sum float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// Log returns what debuginfod wrote to its log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// bufferPool gives the proxy 256 KiB copy buffers, so it is not the
// bottleneck of a large download (its default is 32 KiB).
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { return make([]byte, 256<<10) }}

func (bufferPool) Get() []byte  { return buffers.Get().([]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(b) }

// slowBody paces reads to about rate bytes per second.
type slowBody struct {
	rc    io.ReadCloser
	rate  int64
	ctx   context.Context
	start time.Time
	n     int64
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.start.IsZero() {
		b.start = time.Now()
	}
	chunk := max(b.rate/20, 1)
	if int64(len(p)) > chunk {
		p = p[:chunk]
	}
	due := b.start.Add(time.Duration(float64(b.n) / float64(b.rate) * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		select {
		case <-time.After(d):
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *slowBody) Close() error { return b.rc.Close() }

// BuildELF compiles, with gcc, a C program whose image holds a size-byte
// array, into dir/name (its C source stays beside it as dir/name.c, which
// its DWARF names, so debuginfod can serve it as a source). It returns the
// binary's path and lowercase build ID. Each (name, size) gives a distinct
// build ID.
func BuildELF(t testing.TB, dir, name string, size int) (path, buildID string) {
	t.Helper()
	gcc := NeedTool(t, "gcc", "gcc")
	src := filepath.Join(dir, name+".c")
	code := fmt.Sprintf(`/* %s: generated by debuginfodtest.BuildELF */
const unsigned char blob_%d[%d] = { 1 };

int main(int argc, char **argv)
{
	return blob_%d[argc] + (int)sizeof(argv);
}
`, name, size, max(size, 2), size)
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, name)
	out, err := exec.Command(gcc, "-g", "-O0", "-Wl,--build-id=sha1", "-o", path, src).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, out)
	}
	id, err := BuildID(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, id
}

// BuildID reads the GNU build ID of the ELF file at path, in lowercase hex.
func BuildID(path string) (string, error) { return debuginfod.FileBuildID(path) }
