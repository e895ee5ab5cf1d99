package main

// Tests that run the real viewer binary as a separate process: a kill -9
// during uploads, a full disk, and a load test measuring the server's memory.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	webprofiles "viewer/web/profiles"

	"github.com/google/pprof/profile"

	"viewer/web"
)

// builtViewer is the viewer binary the tests run as a separate process,
// built once per test run (each link costs seconds of CPU) into a
// directory TestMain removes.
var builtViewer struct {
	once      sync.Once
	dir, path string
	err       error
	// goCaches are GOCACHE and GOMODCACHE as this test process started:
	// tests that point HOME at a temporary directory (for perf's build-ID
	// cache) would otherwise build the binary with an empty cache, from
	// scratch.
	goCaches []string
}

// buildViewer returns the viewer binary, building it on first use.
func buildViewer(t *testing.T) string {
	t.Helper()
	builtViewer.once.Do(func() {
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			goBin = "go"
		}
		dir, err := os.MkdirTemp("", "viewer-bin-")
		if err != nil {
			builtViewer.err = err
			return
		}
		builtViewer.dir = dir
		bin := filepath.Join(dir, "viewer")
		build := exec.Command(goBin, "build", "-o", bin, ".")
		build.Env = append(os.Environ(), builtViewer.goCaches...)
		if out, err := build.CombinedOutput(); err != nil {
			builtViewer.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		builtViewer.path = bin
	})
	if builtViewer.err != nil {
		t.Fatal(builtViewer.err)
	}
	return builtViewer.path
}

func TestMain(m *testing.M) {
	if out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "env", "GOCACHE", "GOMODCACHE").Output(); err == nil {
		if v := strings.Fields(string(out)); len(v) == 2 {
			builtViewer.goCaches = []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1]}
		}
	}
	code := m.Run()
	if builtViewer.dir != "" {
		os.RemoveAll(builtViewer.dir)
	}
	os.Exit(code)
}

// viewerProc is a running `viewer serve`.
type viewerProc struct {
	cmd  *exec.Cmd
	base string
	out  *syncBuffer
	done chan struct{}
}

var servingRE = regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)/`)

// startViewer runs prefix... bin serve --addr 127.0.0.1:0 args... and waits
// for its URL. The process is killed when the test ends.
func startViewer(t *testing.T, env []string, prefix []string, bin string, args ...string) *viewerProc {
	t.Helper()
	serve := []string{bin, "serve", "--addr", "127.0.0.1:0", "--no-debuginfod"}
	for _, e := range env {
		if strings.HasPrefix(e, "DEBUGINFOD_URLS=") && e != "DEBUGINFOD_URLS=" {
			serve = serve[:len(serve)-1] // the test gives the servers
		}
	}
	argv := append(append(append([]string{}, prefix...), serve...), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "DEBUGINFOD_URLS=", "DEBUGINFOD_CACHE_PATH="+t.TempDir()), env...)
	p := &viewerProc{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := servingRE.FindStringSubmatch(p.out.String()); m != nil {
			p.base = m[1]
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("%v exited: %s", argv, p.out.String())
		default:
		}
	}
	t.Fatalf("%v printed no URL: %s", argv, p.out.String())
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *viewerProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// peakRSS is the process's peak resident memory (VmHWM) in bytes.
func (p *viewerProc) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// randomProfile is a gzipped pprof profile with n functions of random names,
// so its bytes (and ID) are unique and compress poorly: about 20 bytes per
// function.
func randomProfile(rng *rand.Rand, n int) []byte {
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x900000, File: "/bin/app", HasFunctions: true}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Mapping:    []*profile.Mapping{m},
	}
	for i := range n {
		f := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("pkg.f%016x%08x", rng.Uint64(), rng.Uint32())}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, &profile.Location{ID: uint64(i + 1), Mapping: m, Address: 0x400000 + uint64(i)*16, Line: []profile.Line{{Function: f}}})
	}
	for i := 0; i+4 <= n; i += 4 {
		p.Sample = append(p.Sample, &profile.Sample{Location: p.Location[i : i+4], Value: []int64{int64(rng.IntN(1e7) + 1)}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// profileSet makes unique profiles cheaply (the race detector makes
// encoding thousands of profiles in the test slow): each size is encoded
// once, uncompressed, with a placeholder name that each copy overwrites
// with a fresh counter.
type profileSet struct {
	bases [][]byte
	marks []int
	n     atomic.Uint64
}

const profileMark = "pkg.uniqXXXXXXXXXXXXXXXX"

// newProfileSet encodes one profile per function count.
func newProfileSet(seed uint64, funcs ...int) *profileSet {
	s := &profileSet{}
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, n := range funcs {
		p, err := profile.Parse(bytes.NewReader(randomProfile(rng, n)))
		if err != nil {
			panic(err)
		}
		p.Function[0].Name = profileMark
		var b bytes.Buffer
		if err := p.WriteUncompressed(&b); err != nil {
			panic(err)
		}
		s.bases = append(s.bases, b.Bytes())
		s.marks = append(s.marks, bytes.Index(b.Bytes(), []byte(profileMark))+len("pkg.uniq"))
	}
	return s
}

// next is a new profile of the i-th size, different from every other.
func (s *profileSet) next(i int) []byte {
	b := bytes.Clone(s.bases[i])
	copy(b[s.marks[i]:], fmt.Sprintf("%016x", s.n.Add(1)))
	return b
}

// postProfile uploads data as a raw body and returns the status, the ID on
// 201, and the error message otherwise.
func postProfile(ctx context.Context, base string, data []byte) (int, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/profiles", bytes.NewReader(data))
	if err != nil {
		return 0, "", nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	var r struct{ ID, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return resp.StatusCode, "", resp.Header, fmt.Errorf("status %d, body not JSON: %v", resp.StatusCode, err)
	}
	if resp.StatusCode == http.StatusCreated {
		return resp.StatusCode, r.ID, resp.Header, nil
	}
	return resp.StatusCode, r.Error, resp.Header, nil
}

// checkReadable fails unless the profile's page answers 200 and its
// download is the uploaded profile: the same bytes when they were gzipped
// pprof, else the same profile re-encoded.
func checkReadable(t *testing.T, base, id string, want []byte) {
	t.Helper()
	if st, _ := fetch(t, base+"/p/"+id); st != 200 {
		t.Errorf("acknowledged profile %s: page status %d", id, st)
		return
	}
	st, body := fetch(t, base+"/p/"+id+"/profile.pb.gz")
	if st != 200 {
		t.Errorf("acknowledged profile %s: download status %d", id, st)
		return
	}
	if body == string(want) {
		return
	}
	if zr, err := gzip.NewReader(strings.NewReader(body)); err == nil {
		if raw, err := io.ReadAll(zr); err == nil && bytes.Equal(raw, want) {
			return // re-encoded byte for byte
		}
	}
	got, err1 := profile.ParseData([]byte(body))
	exp, err2 := profile.ParseData(want)
	if err1 != nil || err2 != nil || len(got.Sample) != len(exp.Sample) || len(got.Function) != len(exp.Function) || got.Function[0].Name != exp.Function[0].Name {
		t.Errorf("acknowledged profile %s: the download (%d bytes, %v) is not the uploaded profile (%d bytes, %v)", id, len(body), err1, len(want), err2)
	}
}

// TestKillDuringUploads kills the server with SIGKILL while uploads stream
// in, restarts it on the same data directory, and checks every acknowledged
// upload is there and whole, and that nothing half-written is served.
func TestKillDuringUploads(t *testing.T) {
	if testing.Short() {
		t.Skip("kills viewer processes mid-upload: make test runs it")
	}
	bin := buildViewer(t)
	data := t.TempDir()
	p := startViewer(t, nil, nil, bin, "--data", data)

	var mu sync.Mutex
	acked := map[string][]byte{}
	var inflight, started atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	profiles := newProfileSet(1, 500, 5000, 20000) // about 20 KB, 200 KB, 800 KB
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i++ {
				b := profiles.next(i % 3)
				inflight.Add(1)
				started.Add(1)
				st, id, _, err := postProfile(ctx, p.base, b)
				inflight.Add(-1)
				if err == nil && st == http.StatusCreated {
					mu.Lock()
					acked[id] = b
					mu.Unlock()
				}
			}
		}()
	}
	// One upload sends half its body and stalls: it is mid-stream when the
	// server dies, and must not be visible after the restart.
	half := randomProfile(rand.New(rand.NewPCG(99, 99)), 20000)
	pr, pw := io.Pipe()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/api/profiles", pr)
		req.ContentLength = int64(len(half))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write(half[:len(half)/2])
	defer pw.Close()
	// Let uploads pile up, then kill the server while some are in flight.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 20 && inflight.Load() >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	inFlightAtKill := inflight.Load()
	p.kill()
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 20 {
		t.Fatalf("only %d uploads acknowledged before the kill", len(acked))
	}
	tempsAtKill := countTemps(t, data)

	q := startViewer(t, nil, nil, bin, "--data", data)
	for id, b := range acked {
		checkReadable(t, q.base, id, b)
	}
	if st, _ := fetch(t, q.base+"/p/"+webprofiles.NewID(half)); st != 404 {
		t.Errorf("the upload cut off mid-body answers %d after the restart, want 404", st)
	}
	// Whatever is on disk is either whole or not served.
	dirs, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	var whole, partial, temps int
	for _, d := range dirs {
		if !d.IsDir() || !webprofiles.ValidID(d.Name()) {
			continue
		}
		id := d.Name()
		ents, _ := os.ReadDir(filepath.Join(data, id))
		have := map[string]bool{}
		for _, e := range ents {
			have[e.Name()] = true
			if strings.HasPrefix(e.Name(), ".tmp-") {
				temps++
			}
		}
		st, _ := fetch(t, q.base+"/p/"+id)
		if have[webprofiles.KeyOriginal] {
			b, err := os.ReadFile(filepath.Join(data, id, webprofiles.KeyOriginal))
			if err != nil || webprofiles.NewID(b) != id {
				t.Errorf("%s/original is not the uploaded bytes (%d bytes, ID %s)", id, len(b), webprofiles.NewID(b))
			}
			if st != 200 {
				t.Errorf("stored profile %s: status %d", id, st)
			}
			whole++
			continue
		}
		partial++
		if have[webprofiles.KeyMeta] {
			t.Errorf("%s has meta.json without its original", id)
		}
		if st != 404 {
			t.Errorf("half-written profile %s is served with status %d, want 404", id, st)
		}
	}
	if after := countTemps(t, data); temps > 0 || after > 0 {
		temps = max(temps, after)
		t.Errorf("%d temp files of interrupted writes remain after the restart (%d at the kill); the store should sweep them when it opens", temps, tempsAtKill)
	}
	t.Logf("kill -9 with %d uploads in flight (and one stalled mid-body) (%d started): %d acknowledged, all readable after restart; %d profiles whole on disk, %d directories without an original; %d temp files of interrupted writes at the kill, %d after the restart",
		inFlightAtKill, started.Load(), len(acked), whole, partial, tempsAtKill, temps)
}

// countTemps counts the store's temporary files (.tmp-*) under data.
func countTemps(t *testing.T, data string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(data, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasPrefix(e.Name(), ".tmp-") {
			n++
		}
		return nil
	})
	return n
}

// TestFullDisk runs the server on a 3 MiB tmpfs (in its own mount
// namespace) and uploads until the disk is full: the upload that does not
// fit gets 507 and leaves no profile; earlier ones stay whole.
func TestFullDisk(t *testing.T) {
	for _, tool := range []string{"unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("TestFullDisk needs %s (%v): run make deps", tool, err)
		}
	}
	bin := buildViewer(t)
	data := t.TempDir()
	script := `mount -t tmpfs -o size=3m viewer-test "$1" && shift && exec "$@"`
	p := startViewer(t, nil, []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", data}, bin, "--data", data)
	profiles := newProfileSet(7, 15000) // about 600 KB
	stored := map[string][]byte{}
	var full bool
	for i := 0; i < 20 && !full; i++ {
		b := profiles.next(0)
		st, msg, _, err := postProfile(context.Background(), p.base, b)
		if err != nil {
			t.Fatal(err)
		}
		switch st {
		case http.StatusCreated:
			stored[msg] = b
		case http.StatusInsufficientStorage:
			full = true
			if !strings.Contains(msg, "disk is full") {
				t.Errorf("507 message %q does not say the disk is full", msg)
			}
			id := webprofiles.NewID(b)
			// The original either did not land, or landed whole (only its
			// meta.json did not fit).
			if st, body := fetch(t, p.base+"/p/"+id+"/profile.pb.gz"); st != 404 && (st != 200 || body != string(b)) {
				t.Errorf("after 507, the refused profile answers %d with %d bytes", st, len(body))
			}
		default:
			t.Fatalf("upload %d: status %d %q", i, st, msg)
		}
	}
	if !full || len(stored) == 0 {
		t.Fatalf("full=%v after %d stored uploads: want some stored, then a 507", full, len(stored))
	}
	for id, b := range stored {
		checkReadable(t, p.base, id, b)
	}
	t.Logf("3 MiB disk: %d uploads stored, then 507; stored ones intact", len(stored))
}

// TestLoad drives the server over loopback with 2,000 requests at
// concurrency 32, a quarter of them uploads of fresh profiles and the rest
// page views, with at most 4 uploads parsed at once and GOMEMLIMIT 192MiB.
// Only 503 (busy) may fail a request; every acknowledged upload must be
// readable; the server's peak RSS must stay under 320 MiB.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: 2,000 requests to a real server (about a minute): skipped with -short")
	}
	const (
		requests    = 2000
		concurrency = 32
		budget      = 320 << 20
	)
	bin := buildViewer(t)
	p := startViewer(t, []string{"GOMEMLIMIT=192MiB"}, nil, bin, "--data", t.TempDir(),
		"--max-upload", "4MiB", "--max-concurrent-uploads", "4", "--upload-wait", "2s")
	var mu sync.Mutex
	acked := map[string][]byte{}
	var ids []string
	profiles := newProfileSet(2, 200, 1000, 4000, 8000) // about 8 KB to 320 KB
	for range 8 {
		b := profiles.next(1)
		st, id, _, err := postProfile(context.Background(), p.base, b)
		if err != nil || st != 201 {
			t.Fatalf("seed upload: %d %v", st, err)
		}
		acked[id] = b
		ids = append(ids, id)
	}
	var next atomic.Int64
	var busy, uploads, views atomic.Int64
	var failures []string
	start := time.Now()
	// No wall-clock budget (a loaded machine is slower, not wrong): the
	// run stops only when no request has started for a minute, the sign of
	// a server that stopped answering.
	const stall = time.Minute
	var progress atomic.Int64
	progress.Store(start.UnixNano())
	var wg sync.WaitGroup
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for {
				i := next.Add(1)
				if i > requests || time.Since(time.Unix(0, progress.Load())) > stall {
					return
				}
				progress.Store(time.Now().UnixNano())
				if i%4 == 0 {
					b := profiles.next(rng.IntN(4))
					st, id, h, err := postProfile(context.Background(), p.base, b)
					uploads.Add(1)
					mu.Lock()
					switch {
					case err != nil:
						failures = append(failures, fmt.Sprintf("upload: %v", err))
					case st == 201:
						acked[id] = b
						ids = append(ids, id)
					case st == 503 && h.Get("Retry-After") != "":
						busy.Add(1)
					default:
						failures = append(failures, fmt.Sprintf("upload: status %d %q", st, id))
					}
					mu.Unlock()
					continue
				}
				mu.Lock()
				id := ids[rng.IntN(len(ids))]
				mu.Unlock()
				path := "/p/" + id + []string{"", "/flame.json", "/top", "/flame.svg", "/types", "/profile.pb.gz"}[rng.IntN(6)]
				resp, err := http.Get(p.base + path)
				views.Add(1)
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("GET %s: %v", path, err))
					mu.Unlock()
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("GET %s: %d", path, resp.StatusCode))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := next.Load(); n <= requests {
		t.Errorf("only %d of %d requests done in %v: the server answered none for %v", n-1, requests, elapsed, stall)
	}
	for i, f := range failures {
		if i == 20 {
			t.Errorf("… and %d more", len(failures)-20)
			break
		}
		t.Errorf("request failed: %s", f)
	}
	for id, b := range acked {
		checkReadable(t, p.base, id, b)
	}
	rss := p.peakRSS(t)
	if rss > budget {
		t.Errorf("server peak RSS %d MiB, over the %d MiB budget", rss>>20, budget>>20)
	}
	t.Logf("load: %d requests (%d uploads, %d views) at concurrency %d in %v: %d failed, %d busy (503), %d uploads acknowledged and readable; server peak RSS %d MiB",
		uploads.Load()+views.Load(), uploads.Load(), views.Load(), concurrency, elapsed.Round(time.Millisecond), len(failures), busy.Load(), len(acked), rss>>20)
}

// TestServeUploadToken starts serve with --auth-token-file and checks
// `viewer upload` needs --token or $VIEWER_TOKEN while links stay open.
func TestServeUploadToken(t *testing.T) {
	tmp := t.TempDir()
	file := writeTestProfile(t, tmp)
	tokFile := filepath.Join(tmp, "token")
	os.WriteFile(tokFile, []byte("  tea-and-biscuits\n# ignored\n"), 0o600)
	base, out, _ := startServe(t, "--data", filepath.Join(tmp, "data"), "--auth-token-file", tokFile)
	if !strings.Contains(out.String(), "uploads need the token") {
		t.Errorf("serve does not say uploads need a token: %q", out.String())
	}
	t.Setenv("VIEWER_TOKEN", "")
	quiet := stdio{out: io.Discard, err: io.Discard}
	err := runUpload(context.Background(), []string{file, "--server", base}, quiet)
	if err == nil || !strings.Contains(err.Error(), "need its token") {
		t.Fatalf("upload without a token: %v; want the server's explanation", err)
	}
	if err := runUpload(context.Background(), []string{file, "--server", base, "--token", "wrong"}, quiet); err == nil {
		t.Fatal("upload with a wrong token succeeded")
	}
	var link bytes.Buffer
	if err := runUpload(context.Background(), []string{file, "--server", base, "--token", "tea-and-biscuits"}, stdio{out: &link, err: io.Discard}); err != nil {
		t.Fatalf("upload with --token: %v", err)
	}
	if code, _ := fetch(t, strings.TrimSpace(link.String())); code != 200 {
		t.Errorf("link without a token: %d", code)
	}
	t.Setenv("VIEWER_TOKEN", "tea-and-biscuits")
	if err := runUpload(context.Background(), []string{file, "--server", base}, quiet); err != nil {
		t.Fatalf("upload with $VIEWER_TOKEN: %v", err)
	}
}

// TestServeLimitFlags checks bad limit and token flags are usage errors
// that say what to fix.
func TestServeLimitFlags(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-concurrent-uploads", "0"}, "--max-concurrent-uploads must be at least 1"},
		{[]string{"--max-samples", "-1"}, "must be 0 (no limit) or more"},
		{[]string{"--auth-token", "a", "--auth-token-file", empty}, "not both"},
		{[]string{"--auth-token-file", empty}, "is empty"},
		{[]string{"--auth-token-file", empty + ".missing"}, "reading --auth-token-file"},
		{[]string{"--upload-wait", "0s"}, "--upload-wait and --upload-idle must be positive"},
		{[]string{"--upload-idle", "-1s"}, "--upload-idle must be positive"},
	} {
		err := runServe(context.Background(), append([]string{"--addr", "127.0.0.1:0", "--data", t.TempDir()}, tc.args...), stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v; want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestBehindProxyReadsNoLocalPaths checks --behind-proxy and
// --no-local-files turn off reading paths a profile names (mappings,
// source, unwinding) even on a loopback --addr.
func TestBehindProxyReadsNoLocalPaths(t *testing.T) {
	for _, args := range [][]string{{"--addr", "127.0.0.1:8080"}, {"--addr", "127.0.0.1:8080", "--behind-proxy"}, {"--addr", "127.0.0.1:8080", "--no-local-files"}} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.String("addr", "", "")
		f := registerSymbolizeFlags(fs)
		registerLimitFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		want := len(args) == 2
		if got, wantLoop := f.loopback(), !slices.Contains(args, "--behind-proxy"); got != wantLoop {
			t.Errorf("%v: counts as loopback %v, want %v", args, got, wantLoop)
		}
		if got := f.localFiles(); got != want {
			t.Errorf("%v: opens the files profiles name %v, want %v", args, got, want)
		}
		if sc := f.sourceConfig(nil); sc.LocalPaths != want {
			t.Errorf("%v: source view reads local paths %v, want %v", args, sc.LocalPaths, want)
		}
		var lim web.Limits
		if f.unwinding(&lim, nil); (lim.Binaries != nil) != want {
			t.Errorf("%v: unwinds with local binaries %v, want %v", args, lim.Binaries != nil, want)
		}
	}
}
