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

	"github.com/google/pprof/profile"

	"viewer/testdata/poll"
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
	if testing.Short() {
		t.Skip("builds and runs the viewer binary: skipped with -short")
	}
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
	if !poll.Wait(20*time.Second, func() bool {
		if m := servingRE.FindStringSubmatch(p.out.String()); m != nil {
			p.base = m[1]
			return true
		}
		select {
		case <-p.done:
			t.Fatalf("%v exited: %s", argv, p.out.String())
		default:
		}
		return false
	}) {
		t.Fatalf("%v printed no URL: %s", argv, p.out.String())
	}
	return p
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
