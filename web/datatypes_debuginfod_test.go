package web

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/ondemand"
)

// typesSymbolizingServer is a viewer with symbolization configured as
// `viewer serve` configures it for uploads from other machines: the given
// debuginfod servers, a fresh client cache, no system debug directories and
// IgnoreMappingPaths, so only debuginfod can provide the test binary.
func typesSymbolizingServer(t *testing.T, urls []string, timeout time.Duration) string {
	t.Helper()
	cache := t.TempDir()
	client, err := debuginfod.New(debuginfod.Config{URLs: urls, CacheDir: cache, Timeout: 10 * time.Second, RetryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	gate := ondemand.NewGate(client)
	engine := symbolize.New(symbolize.Config{
		Fetcher: gate, DebuginfodCacheDir: cache, IgnoreMappingPaths: true,
		SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none",
	})
	s, err := New(Config{DataDir: t.TempDir(), Symbolization: &SymbolizationConfig{
		Engine: engine, Gate: gate, Servers: client.Servers(), Workers: 1, Queue: 8, Timeout: timeout,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.CloseSymbolization()
		ts.Close()
	})
	return ts.URL
}

// postProfileQuery uploads raw profile bytes to /api/profiles?query.
func postProfileQuery(t *testing.T, base, query string, data []byte) string {
	t.Helper()
	resp, err := http.Post(base+"/api/profiles"+query, "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &r) != nil {
		t.Fatalf("upload: %s %s", resp.Status, body)
	}
	return r.ID
}

// TestTypesFromDebuginfod: a profile of a binary this server must not read
// from its mapping's path (IgnoreMappingPaths) gets its data types from the
// same debuginfod the symbolizer uses: the separate debug file (DWARF, no
// code) and then the stripped executable, both by build ID. An upload that
// opted out of debuginfod sends nothing and the DSO list says why.
func TestTypesFromDebuginfod(t *testing.T) {
	full, err := filepath.Abs(filepath.Join(typesTestdata, "datatype-dw5-pie"))
	if err != nil {
		t.Fatal(err)
	}
	id := fileBuildID(t, full+".stripped")
	if id != fileBuildID(t, full+".debug") {
		t.Fatalf("%s.stripped and .debug have different build IDs: rerun build.sh", full)
	}
	// debuginfod indexes the split build: the stripped executable and its
	// debug file, as a distribution's archive holds them.
	served := t.TempDir()
	for _, f := range []string{".stripped", ".debug"} {
		data, err := os.ReadFile(full + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(served, "datatype"+f), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An unstripped fixed-address binary with a _text symbol stands in for
	// a vmlinux: debuginfod serves it as debuginfo, with its code.
	vmlinux, err := filepath.Abs(filepath.Join(typesTestdata, "datatype-vmlinux"))
	if err != nil {
		t.Fatal(err)
	}
	kid := fileBuildID(t, vmlinux)
	vdata, err := os.ReadFile(vmlinux)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(served, "vmlinux"), vdata, 0o755); err != nil {
		t.Fatal(err)
	}
	dsrv := debuginfodtest.Start(t, served)

	// The mapping names the unstripped binary's real path on this machine:
	// a server for uploads from elsewhere (IgnoreMappingPaths, as `viewer
	// serve` sets it off loopback) must not read it, only files found by
	// build ID.
	data := typesAddrProfile(t, full, full, id)

	// First the upload that opted out: not one request may reach the server.
	optOut := typesSymbolizingServer(t, []string{dsrv.URL}, 0)
	pid := postProfileQuery(t, optOut, "?debuginfod=0", data)
	r := getTypesJSON(t, optOut+"/p/"+pid+"/types.json")
	if len(r.DSOs) != 1 || !strings.Contains(r.DSOs[0].Error, "debuginfod not asked: the upload opted out") || r.DSOs[0].DebugSource != "" {
		t.Errorf("opted-out upload: DSOs = %+v, want the binary not found because debuginfod was not asked", r.DSOs)
	}
	for _, ty := range r.Types {
		if ty.Name != "(unknown)" {
			t.Errorf("opted-out upload: type %s attributed without debug info", ty.Name)
		}
	}
	t.Logf("opted out: %s", r.DSOs[0].Error)
	if n := dsrv.Requests(id); n != 0 {
		t.Fatalf("an upload with ?debuginfod=0 sent %d requests for its build ID to debuginfod", n)
	}

	// Then an ordinary upload on a fresh server: debuginfo and executable
	// come from debuginfod and the samples land on their members.
	// A download that outlives --symbolize-timeout is reported, and not
	// remembered: the next request fetches again.
	// The timeout bounds the successful requests below too, which take tens
	// of milliseconds even on a loaded machine: 3 s leaves a wide margin. The
	// slow server's 1000 bytes/s needs more than 11 s for the 11.7 kB debug
	// file alone, and load only makes that slower.
	const timeout = 3 * time.Second
	base2 := typesSymbolizingServer(t, []string{dsrv.URL}, timeout)
	pid = postProfileQuery(t, base2, "", data)
	dsrv.SetRate(1000)
	r = getTypesJSON(t, base2+"/p/"+pid+"/types.json")
	dsrv.SetRate(0)
	if len(r.DSOs) != 1 || !strings.Contains(r.DSOs[0].Error, fmt.Sprintf("timed out after %v", timeout)) {
		t.Errorf("slow debuginfod: DSOs = %+v, want the binary's search timed out after %v", r.DSOs, timeout)
	}
	r = getTypesJSON(t, base2+"/p/"+pid+"/types.json")
	if len(r.DSOs) != 1 || r.DSOs[0].Error != "" || !strings.Contains(r.DSOs[0].DebugSource, "debuginfod "+strings.TrimSuffix(dsrv.URL, "/")) {
		t.Fatalf("DSOs = %+v, want the debug info from debuginfod %s", r.DSOs, dsrv.URL)
	}
	t.Logf("source: %s", r.DSOs[0].DebugSource)
	if !strings.Contains(r.DSOs[0].DebugSource, "code: debuginfod ") {
		t.Errorf("DSO source %q does not say the code came from debuginfod too", r.DSOs[0].DebugSource)
	}
	checkTypes(t, r)
	if dsrv.Requests(id) == 0 {
		t.Errorf("debuginfod got no request for %s", id)
	}

	// Kernel samples of a kernel moved by KASLR: the vmlinux by build ID,
	// code and DWARF in one file, the samples moved back by the shift.
	pid = postProfileQuery(t, base2, "", typesKernelProfile(t, vmlinux, kid, 0x3a200000))
	r = getTypesJSON(t, base2+"/p/"+pid+"/types.json")
	if len(r.DSOs) != 1 || r.DSOs[0].Error != "" || !strings.HasPrefix(r.DSOs[0].DebugSource, "debuginfod "+strings.TrimSuffix(dsrv.URL, "/")) || strings.Contains(r.DSOs[0].DebugSource, "code:") {
		t.Fatalf("kernel DSOs = %+v, want the vmlinux (debuginfo) from debuginfod %s", r.DSOs, dsrv.URL)
	}
	checkTypes(t, r)
}

// checkTypes checks the attribution of typesAddrProfile's samples.
func checkTypes(t *testing.T, r typesResponse) {
	t.Helper()
	want := map[string]string{"struct node": "key", "struct outer": "in.y"}
	wantW := map[string]int64{"struct node": 5, "struct outer": 2}
	got := 0
	for _, ty := range r.Types {
		member := ""
		for _, mb := range ty.Members {
			if mb.Weight > 0 {
				member = mb.Name
			}
		}
		if want[ty.Name] != member || wantW[ty.Name] != ty.Weight {
			t.Errorf("type %s weight %d member %q; want %v %v", ty.Name, ty.Weight, member, wantW, want)
			continue
		}
		got++
	}
	if got != 2 {
		t.Errorf("types = %+v, want struct node.key (5) and struct outer.in.y (2)", r.Types)
	}
}

// typesAddrProfile is a profile of binary (whose code is read with objdump
// here) mapped from file with build ID id: 5 samples in get_key loading
// struct node's key and 2 in get_y loading struct outer's in.y.
func typesAddrProfile(t *testing.T, binary, file, id string) []byte {
	t.Helper()
	const base = 0x555555554000
	return typesProfileAt(t, binary, &profile.Mapping{ID: 1, Start: base, Limit: base + 0x100000, File: file, BuildID: id}, base)
}

// typesKernelProfile is typesAddrProfile's samples in vmlinux, a kernel
// moved by KASLR: its mapping records where _text was, as perf's does.
func typesKernelProfile(t *testing.T, vmlinux, id string, shift uint64) []byte {
	t.Helper()
	text, ok := kernelText(t, vmlinux)
	if !ok {
		t.Fatalf("%s has no _text", vmlinux)
	}
	m := &profile.Mapping{ID: 1, Start: text + shift, Limit: text + shift + 0x100000, Offset: text + shift, File: "[kernel.kallsyms]_text", BuildID: id}
	return typesProfileAt(t, vmlinux, m, shift)
}

// typesProfileAt builds typesAddrProfile's samples in mapping m, whose
// addresses are binary's plus bias.
func typesProfileAt(t *testing.T, binary string, m *profile.Mapping, bias uint64) []byte {
	t.Helper()
	getKey := objdumpAddr(t, binary, "get_key", "mov 0x8(%rdi),%rax")
	getY := objdumpAddr(t, binary, "get_y", "0xc(%rdi)")
	base := bias
	// Named locations: no symbolization job runs, so every request that
	// reaches debuginfod is the data-type page's own, and the debug info is
	// fetched by it rather than found in the cache after a job's download.
	fn := &profile.Function{ID: 1, Name: "get_key"}
	fn2 := &profile.Function{ID: 2, Name: "get_y"}
	l1 := &profile.Location{ID: 1, Mapping: m, Address: base + getKey, Line: []profile.Line{{Function: fn}}}
	l2 := &profile.Location{ID: 2, Mapping: m, Address: base + getY, Line: []profile.Line{{Function: fn2}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l1}, Value: []int64{5}},
			{Location: []*profile.Location{l2}, Value: []int64{2}},
		},
		Mapping: []*profile.Mapping{m}, Location: []*profile.Location{l1, l2}, Function: []*profile.Function{fn, fn2},
	}
	return encodeProfile(t, p, true)
}

// TestTypesDebuginfodOff: with debuginfod off on the server (--no-debuginfod)
// and the binary not on this machine, the DSO list says both.
func TestTypesDebuginfodOff(t *testing.T) {
	full, err := filepath.Abs(filepath.Join(typesTestdata, "datatype-dw5-pie"))
	if err != nil {
		t.Fatal(err)
	}
	base := typesSymbolizingServer(t, nil, 0)
	pid := postProfileQuery(t, base, "", typesAddrProfile(t, full, full, fileBuildID(t, full)))
	r := getTypesJSON(t, base+"/p/"+pid+"/types.json")
	if len(r.DSOs) != 1 || !strings.HasPrefix(r.DSOs[0].Error, "not found: ") || !strings.Contains(r.DSOs[0].Error, "debuginfod is off on this server") {
		t.Errorf("DSOs = %+v, want not found with debuginfod off", r.DSOs)
	}
	t.Logf("reason: %s", r.DSOs[0].Error)
}

// kernelText is the address of vmlinux's _text symbol.
func kernelText(t *testing.T, vmlinux string) (uint64, bool) {
	t.Helper()
	f, err := elf.Open(vmlinux)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == "_text" {
			return s.Value, true
		}
	}
	return 0, false
}
