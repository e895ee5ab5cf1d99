package web_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/webtest"
)

// trapsC is a program whose debug info names, through #line, source files
// the server must not read: a FIFO and a symlink to /etc/shadow in its
// compile unit's directory, /proc/self/environ, and a file outside the
// directory. compute's source (hello.c) is fine.
const trapsC = `int compute(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * i;
	return s;
}
#line 1 "SRC/fifo.c"
int viafifo(int n) { return n * 3; }
#line 1 "SRC/link.c"
int vialink(int n) { return n * 5; }
#line 1 "/proc/self/environ"
int viaproc(int n) { return n * 7; }
#line 1 "OUT/outside.c"
int viaoutside(int n) { return n * 9; }
#line 20 "SRC/hello.c"
int main(void) { return (compute(10) + viafifo(1) + vialink(2) + viaproc(3) + viaoutside(4)) & 1; }
`

// traps is the built program and the paths its debug info names.
type traps struct {
	exe, src, out string // the binary; its compile unit's directory; a directory outside it
	fifo, link    string
	outside       string // out/outside.c, a regular file
	addr          map[string]uint64
}

func buildTraps(t *testing.T) traps {
	t.Helper()
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	dir := t.TempDir()
	tr := traps{src: filepath.Join(dir, "src"), out: filepath.Join(dir, "out"), exe: filepath.Join(dir, "traps")}
	for _, d := range []string{tr.src, tr.out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := strings.NewReplacer("SRC", tr.src, "OUT", tr.out).Replace(trapsC)
	if err := os.WriteFile(filepath.Join(tr.src, "hello.c"), []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gcc, "-g", "-O0", "-Wl,--build-id", "-o", tr.exe, "hello.c")
	cmd.Dir = tr.src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	tr.fifo, tr.link = filepath.Join(tr.src, "fifo.c"), filepath.Join(tr.src, "link.c")
	tr.outside = filepath.Join(tr.out, "outside.c")
	if err := syscall.Mkfifo(tr.fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/shadow", tr.link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr.outside, []byte("int viaoutside(int n) { return n * 9; } // OUTSIDE-LINE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(tr.exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	tr.addr = map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			tr.addr[s.Name] = s.Value + 4
		}
	}
	return tr
}

// trapsProfile is a symbolized profile of the traps binary: each function
// a leaf under main, with its address and the file its debug info names.
// The mapping starts at 0 so runtime and link-time addresses agree.
func (tr traps) profile(t *testing.T, files map[string]string) []byte {
	t.Helper()
	bid, err := debuginfodtest.BuildID(tr.exe)
	if err != nil {
		t.Fatal(err)
	}
	m := &profile.Mapping{ID: 1, Start: 0, Limit: 1 << 32, File: tr.exe, BuildID: bid, HasFunctions: true, HasFilenames: true}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1,
		Mapping: []*profile.Mapping{m},
	}
	loc := func(fn, file string) *profile.Location {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: fn, SystemName: fn, Filename: file}
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: tr.addr[fn], Line: []profile.Line{{Function: f, Line: 1}}}
		p.Location = append(p.Location, l)
		return l
	}
	main := loc("main", filepath.Join(tr.src, "hello.c"))
	for fn, file := range files {
		if tr.addr[fn] == 0 {
			t.Fatalf("%s has no symbol %s", tr.exe, fn)
		}
		p.Sample = append(p.Sample, &profile.Sample{Value: []int64{10}, Location: []*profile.Location{loc(fn, file), main}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// localSourceServer serves the source view on loopback with local paths
// on, checked against the debug info the symbolization engine finds.
func localSourceServer(t *testing.T, roots ...string) string {
	return localSourceServerWith(t, "", roots...)
}

func localSourceServerWith(t *testing.T, token string, roots ...string) string {
	engine := symbolize.New(symbolize.Config{SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"})
	return webtest.StartServerWith(t, web.Config{AuthToken: token, Source: &web.SourceConfig{
		LocalPaths: true, Units: web.EngineUnits{Engine: engine}, Roots: roots, Timeout: 5 * time.Second,
	}})
}

// TestSourceViewLocalFileRules checks the source view reads a local file a
// profile names only when the binary's debug info names it, it is under
// the unit's directory or a --source-dir, and it is a regular file outside
// /proc: a FIFO, a symlink to /etc/shadow and /proc/self/environ are never
// read, and a flood of requests for the FIFO holds no thread.
func TestSourceViewLocalFileRules(t *testing.T) {
	tr := buildTraps(t)
	hello := filepath.Join(tr.src, "hello.c")
	other := filepath.Join(tr.src, "other.c")
	os.WriteFile(other, []byte("int compute(int n) { return n; } // OTHER-LINE\n"), 0o644)
	base := localSourceServer(t)
	files := map[string]string{
		"compute": hello, "viafifo": tr.fifo, "vialink": tr.link,
		"viaproc": "/proc/self/environ", "viaoutside": tr.outside,
	}
	id := webtest.PostProfile(t, base, "traps.pb.gz", tr.profile(t, files))
	page := func(base, id, fn string) string {
		t.Helper()
		status, _, body := fetchURL(t, base+"/p/"+id+"/source?"+url.Values{"fn": {fn}}.Encode())
		if status != http.StatusOK {
			t.Fatalf("source of %s: %d", fn, status)
		}
		return body
	}
	if b := page(base, id, "compute"); !strings.Contains(b, "s += i * i;") || !strings.Contains(b, `id="source-origin">this machine: `+hello) {
		t.Fatalf("the file the debug info names in its unit's directory is not shown (the feature this guards):\n%s", excerpt(b, "source-problem"))
	}
	shadow, _ := os.ReadFile("/etc/shadow")
	for _, tc := range []struct{ fn, want, never string }{
		{"viafifo", "is not a regular file (a FIFO)", ""},
		{"vialink", "is a symbolic link", firstLine(shadow)},
		{"viaproc", "under /proc, which is never read", "PATH="},
		{"viaoutside", "outside its compile unit&#39;s directory", "OUTSIDE-LINE"},
	} {
		b := page(base, id, tc.fn)
		if !strings.Contains(b, tc.want) {
			t.Errorf("%s: the page does not say %q:\n%s", tc.fn, tc.want, excerpt(b, "source-problem"))
		}
		if tc.never != "" && strings.Contains(b, tc.never) {
			t.Errorf("%s: the page shows the file's content %q", tc.fn, tc.never)
		}
		if strings.Contains(b, `id="source-origin"`) {
			t.Errorf("%s: the page shows a source origin: the file was read", tc.fn)
		}
	}

	// A path the debug info does not name, though it sits in the unit's
	// directory.
	id2 := webtest.PostProfile(t, base, "other.pb.gz", tr.profile(t, map[string]string{"compute": other}))
	if b := page(base, id2, "compute"); !strings.Contains(b, "the binary&#39;s debug info does not name this file") || strings.Contains(b, "OTHER-LINE") {
		t.Errorf("a file the debug info does not name: not refused as such:\n%s", excerpt(b, "source-problem"))
	}

	// A --source-dir lets the file outside the unit's directory be read.
	withRoot := localSourceServer(t, tr.out)
	id3 := webtest.PostProfile(t, withRoot, "traps.pb.gz", tr.profile(t, files))
	if b := page(withRoot, id3, "viaoutside"); !strings.Contains(b, "OUTSIDE-LINE") {
		t.Errorf("--source-dir %s: the file under it is not shown:\n%s", tr.out, excerpt(b, "source-problem"))
	}

	// With a token set, local source needs it.
	const token = "src-token"
	guarded := localSourceServerWith(t, token)
	tokHdr := http.Header{"Authorization": {"Bearer " + token}}
	var body bytes.Buffer
	body.Write(tr.profile(t, map[string]string{"compute": hello}))
	up, _ := http.NewRequest(http.MethodPost, guarded+"/api/profiles", &body)
	up.Header = tokHdr.Clone()
	resp, err := http.DefaultClient.Do(up)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload with the token: %v %v", err, resp)
	}
	var created struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if b := page(guarded, created.ID, "compute"); !strings.Contains(b, "needs the server&#39;s token") || strings.Contains(b, "s += i * i;") {
		t.Errorf("token set, request without it: local source not refused as such:\n%s", excerpt(b, "source-problem"))
	}
	src, _ := http.NewRequest(http.MethodGet, guarded+"/p/"+created.ID+"/source?fn=compute", nil)
	src.Header = tokHdr.Clone()
	if resp, err := http.DefaultClient.Do(src); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "s += i * i;") {
			t.Errorf("token set, request with it: local source not shown:\n%s", excerpt(string(b), "source-problem"))
		}
	}

	// 300 requests at once for the FIFO all answer, and leave no thread or
	// goroutine behind (an open(2) blocked on a FIFO pins one thread each).
	threads := pprof.Lookup("threadcreate")
	runtime.GC()
	goBefore, thrBefore := runtime.NumGoroutine(), threads.Count()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 64}}
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(base + "/p/" + id + "/source?fn=viafifo")
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a request for the FIFO's source failed: %v", err)
	}
	client.CloseIdleConnections()
	poll.Wait(5*time.Second, func() bool { return runtime.NumGoroutine() <= goBefore+20 })
	if g := runtime.NumGoroutine(); g > goBefore+20 {
		t.Errorf("goroutines: %d before the FIFO requests, %d after", goBefore, g)
	}
	t.Logf("300 concurrent requests for a FIFO's source: goroutines %d → %d, threads created %d → %d", goBefore, runtime.NumGoroutine(), thrBefore, threads.Count())
	if n := threads.Count(); n > thrBefore+40 {
		t.Errorf("threads created: %d before the FIFO requests, %d after", thrBefore, n)
	}
}

func firstLine(b []byte) string {
	l, _, _ := strings.Cut(string(b), "\n")
	return l
}

// TestMappingPathTrapsHoldNoWorker checks a FIFO, a symlink to /etc/shadow
// and /proc/self/environ as a mapping's path fail that binary with a
// reason and leave the only symbolization worker free: the next profile
// is symbolized.
func TestMappingPathTrapsHoldNoWorker(t *testing.T) {
	tr := buildTraps(t)
	_, base := webtest.SymbolizingServer(t, nil, 1)
	for _, tc := range []struct{ path, want string }{
		{tr.fifo, "is not a regular file (a FIFO)"},
		{tr.link, "is a symbolic link"},
		{"/proc/self/environ", "under /proc"},
	} {
		p := &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
			Mapping:    []*profile.Mapping{{ID: 1, Start: 0x1000, Limit: 0x100000, File: tc.path}},
		}
		p.Location = []*profile.Location{{ID: 1, Mapping: p.Mapping[0], Address: 0x1234}}
		p.Sample = []*profile.Sample{{Value: []int64{1}, Location: p.Location}}
		var b bytes.Buffer
		p.Write(&b)
		id := webtest.UploadAPI(t, base, "", b.Bytes())
		st, _ := finalEvent(t, base, id)
		if len(st.Binaries) != 1 || st.Binaries[0].State == symbolize.StateSymbolized || !strings.Contains(st.Binaries[0].Reason, tc.want) {
			t.Errorf("mapping %s: binaries %+v, want one failed saying %q", tc.path, st.Binaries, tc.want)
		}
		if strings.Contains(fmt.Sprint(st.Binaries), "root:") || strings.Contains(fmt.Sprint(st.Binaries), "PATH=") {
			t.Errorf("mapping %s: the status quotes the file's content: %+v", tc.path, st.Binaries)
		}
	}
	// The worker is free: a real binary's profile is symbolized.
	bid, _ := debuginfodtest.BuildID(tr.exe)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Mapping:    []*profile.Mapping{{ID: 1, Start: 0, Limit: 1 << 32, File: tr.exe, BuildID: bid}},
	}
	p.Location = []*profile.Location{{ID: 1, Mapping: p.Mapping[0], Address: tr.addr["compute"]}}
	p.Sample = []*profile.Sample{{Value: []int64{1}, Location: p.Location}}
	var b bytes.Buffer
	p.Write(&b)
	id := webtest.UploadAPI(t, base, "", b.Bytes())
	if st, _ := finalEvent(t, base, id); len(st.Binaries) != 1 || st.Binaries[0].State != symbolize.StateSymbolized {
		t.Fatalf("the profile after the traps: %+v", st.Binaries)
	}
	if !webtest.FunctionNames(t, base, id)["compute"] {
		t.Errorf("the profile after the traps is not named")
	}
}
