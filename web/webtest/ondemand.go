package webtest

import (
	"bytes"
	"debug/elf"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
	"viewer/web/ondemand"
)

// PIEBase is where the profiled process had the executable mapped.
const PIEBase = 0x555555554000

// OndemandProfile is a CPU profile of bin/ondemand holding only addresses
// and the build ID, as perf or an eBPF profiler records it. Stacks (root
// first) and sample counts, each 10 ms:
//
//	main > ondemand_run_workload > ondemand_hash_block     6
//	main > ondemand_run_workload > ondemand_render_frame   3
//	main > ondemand_parse_input                            1
//
// so ondemand_hash_block is 60% once named. seed changes the bytes (and so
// the profile's ID) without changing its shape.
func OndemandProfile(t testing.TB, exe, debugFile, file string, seed int) []byte {
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
			addr[s.Name] = PIEBase + s.Value + 4 // inside the function
		}
	}
	for _, fn := range []string{"main", "ondemand_run_workload", "ondemand_hash_block", "ondemand_render_frame", "ondemand_parse_input"} {
		if addr[fn] == 0 {
			t.Fatalf("%s has no symbol %s", debugFile, fn)
		}
	}
	m := &profile.Mapping{
		ID: 1, Start: PIEBase + text.Vaddr&^0xfff, Limit: PIEBase + (text.Vaddr+text.Memsz+0xfff)&^0xfff,
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

// SymbolizingServer is a viewer with on-demand symbolization asking the
// given debuginfod servers, with a fresh client cache and no system debug
// directories, so only debuginfod can name the test program.
func SymbolizingServer(t testing.TB, urls []string, workers int, adjust ...func(*symbolize.Config)) (*web.Server, string) {
	t.Helper()
	return SymbolizingServerWith(t, urls, workers, web.Config{}, adjust...)
}

// SymbolizingServerWith is symbolizingServer with cfg's other settings.
func SymbolizingServerWith(t testing.TB, urls []string, workers int, cfg web.Config, adjust ...func(*symbolize.Config)) (*web.Server, string) {
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
	return startSymbolizing(t, cfg)
}

// startSymbolizing serves a viewer configured by cfg on 127.0.0.1 until the
// test's end, when its symbolization is closed before the server.
func startSymbolizing(t testing.TB, cfg web.Config) (*web.Server, string) {
	t.Helper()
	s, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := LoopbackServer(t, s.Handler())
	ts.Config.RegisterOnShutdown(s.CloseSymbolization)
	ts.Start()
	t.Cleanup(func() {
		s.CloseSymbolization()
		ts.Close()
	})
	return s, ts.URL
}

// ServedProfile fetches and parses /p/ID/profile.pb.gz from the server at
// base.
func ServedProfile(t testing.TB, base, id string) *profile.Profile {
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
	return p
}

// FunctionNames fetches /p/ID/profile.pb.gz and lists its function names.
func FunctionNames(t testing.TB, base, id string) map[string]bool {
	t.Helper()
	p := ServedProfile(t, base, id)
	names := map[string]bool{}
	for _, f := range p.Function {
		names[f.Name] = true
	}
	return names
}

// OndemandDir is what the on-demand tests use, testdata/ondemand: a
// stripped PIE (bin/ondemand, no symbols at all) whose debug file
// (debuginfo/ondemand.debug) only the real debuginfod server has.
func OndemandDir() string { return Testdata("ondemand") }

// OndemandFiles are OndemandDir's program and its debug file.
func OndemandFiles(t testing.TB) (exe, debug string) {
	exe = filepath.Join(OndemandDir(), "bin", "ondemand")
	debug = filepath.Join(OndemandDir(), "debuginfo", "ondemand.debug")
	for _, f := range []string{exe, debug} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: rebuild with testdata/ondemand/build.sh", err)
		}
	}
	return exe, debug
}

// PadDebugFile copies a debug file adding a non-allocated section of size
// bytes, so fetching it costs something like a real library's debug info.
func PadDebugFile(tb testing.TB, src, dst string, size int) {
	tb.Helper()
	objcopy := debuginfodtest.NeedTool(tb, "objcopy", "binutils")
	pad := filepath.Join(tb.TempDir(), "pad")
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	if err := os.WriteFile(pad, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command(objcopy, "--add-section", ".viewer_pad="+pad, src, dst).CombinedOutput(); err != nil {
		tb.Fatalf("objcopy: %v: %s", err, out)
	}
}

// PaddedDebugDir copies the debug file into a new directory with an extra
// non-allocated section of size bytes (its build ID unchanged).
func PaddedDebugDir(t testing.TB, debugFile string, size int) string {
	t.Helper()
	dir := t.TempDir()
	PadDebugFile(t, debugFile, filepath.Join(dir, filepath.Base(debugFile)), size)
	return dir
}
