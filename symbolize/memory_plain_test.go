package symbolize

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// memoryBinaries are the test binaries the memory test opens, each with its
// own build ID, besides libc's debug file and the Go binaries it builds.
var memoryBinaries = []string{
	"../testdata/datatype/datatype-dw4-nopie", "../testdata/datatype/datatype-dw4-pie",
	"../testdata/datatype/datatype-dw5-O0", "../testdata/datatype/datatype-dw5-nopie",
	"../testdata/datatype/datatype-dw5-pie", "../testdata/datatype/index",
	"../testdata/datatype/index-nopie", "../testdata/datatype/libdatatype.so",
	"../testdata/datatype/skid", "../testdata/symbolize/c-nopie-dwarf4",
	"../testdata/symbolize/c-pie-dwarf5", "../testdata/symbolize/cxx-dwarf5",
	"../testdata/symbolize/c-zlib", "../testdata/perf/threads",
	"../testdata/perf/deep",
}

// memoryGoPrograms is how many Go programs (DWARF on, as go build leaves
// it) the memory test builds: with libc and memoryBinaries, 20 binaries.
const memoryGoPrograms = 4

// buildGoPrograms builds n distinct small Go programs into dir.
func buildGoPrograms(t *testing.T, dir string, n int) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is required to build the test's Go binaries: %v", err)
	}
	var out []string
	for i := range n {
		src := filepath.Join(dir, fmt.Sprintf("prog%d", i))
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		code := fmt.Sprintf(`package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

type record%[1]d struct {
	name  string
	count int
	next  *record%[1]d
}

func walk%[1]d(r *record%[1]d) (n int) {
	for ; r != nil; r = r.next {
		n += r.count + len(r.name)
	}
	return n
}

func main() {
	var head *record%[1]d
	for _, a := range os.Args {
		head = &record%[1]d{name: strings.ToUpper(a), count: %[1]d, next: head}
	}
	s := []int{walk%[1]d(head), %[1]d}
	sort.Ints(s)
	fmt.Println(s)
}
`, i)
		if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(fmt.Sprintf("module prog%d\n\ngo 1.21\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, fmt.Sprintf("goprog%d", i))
		cmd := exec.Command(goTool, "build", "-o", bin, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0", "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", src, err, b)
		}
		out = append(out, bin)
	}
	return out
}

// functionProfile is a profile of binary (mapped as a process maps it,
// with build ID bid) with one sample at the start and one in the middle of
// each of up to max functions of symsFrom.
func functionProfile(t *testing.T, file, bid, symsFrom string, max int) *profile.Profile {
	t.Helper()
	ef, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	var base uint64
	if ef.Type == elf.ET_DYN {
		base = 0x7f0000000000
	}
	ef.Close()
	m := mapBinary(t, file, bid, base)
	p := newProfile(m)
	sf, err := elf.Open(symsFrom)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	syms, _ := sf.Symbols()
	n := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Value == 0 {
			continue
		}
		for _, a := range []uint64{s.Value, s.Value + s.Size/2} {
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: base + a}
			p.Location = append(p.Location, l)
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{1}})
		}
		if n++; n == max {
			break
		}
	}
	if n == 0 {
		t.Fatalf("no function symbols in %s", symsFrom)
	}
	return p
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// rss is this process's resident set and its peak, from /proc/self/status.
func rss() (cur, peak uint64) {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			cur = v << 10
		case "VmHWM:":
			peak = v << 10
		}
	}
	return
}

// TestMemoryWithinBudget symbolizes and attributes to data types profiles
// of 20 distinct binaries (libc's debug file from libc6-dbg, the test
// binaries, Go binaries built here) with a 128 MiB budget
// (--symbol-cache-size): the live heap stays within the budget plus 64 MiB,
// the store's bytes match the heap it holds within 20%, and each binary is
// opened once per facet while it stays in the budget: a second pass loads
// again only what was evicted. VIEWER_MEMORY_BUDGET (bytes) changes the
// budget, for the memory table in BENCHMARKS.md.
func TestMemoryWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 20 binaries: skipped with -short")
	}
	if raceDetector {
		t.Skip("measures the heap: the race detector's instrumentation would be measured too (run without -race)")
	}
	budget := int64(128 << 20)
	if v := os.Getenv("VIEWER_MEMORY_BUDGET"); v != "" {
		b, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		budget = b
	}
	libc := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	libcID := buildID(t, libc)
	libcDebug := "/usr/lib/debug/.build-id/" + libcID[:2] + "/" + libcID[2:] + ".debug"
	if _, err := os.Stat(libcDebug); err != nil {
		t.Fatalf("libc's debug file (libc6-dbg) is required: %v", err)
	}
	type bin struct{ file, syms string }
	bins := []bin{{libc, libcDebug}}
	for _, b := range memoryBinaries {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatal(err)
		}
		bins = append(bins, bin{abs, abs})
	}
	goDir := t.TempDir()
	if dir := os.Getenv("VIEWER_MEMORY_PROFILES"); dir != "" {
		goDir = dir // the binaries must outlive the test for memory.sh's server
	}
	for _, g := range buildGoPrograms(t, goDir, memoryGoPrograms) {
		bins = append(bins, bin{g, g})
	}
	var profiles []*profile.Profile
	seen := map[string]bool{}
	for _, b := range bins {
		id := buildID(t, b.file)
		if id == "" || seen[id] {
			t.Fatalf("%s: build ID %q is missing or not distinct", b.file, id)
		}
		seen[id] = true
		profiles = append(profiles, functionProfile(t, b.file, id, b.syms, 2000))
	}
	if len(profiles) != 20 {
		t.Fatalf("%d binaries, want 20", len(profiles))
	}
	if dir := os.Getenv("VIEWER_MEMORY_PROFILES"); dir != "" {
		// For testdata/bench/memory.sh, which uploads them to a server.
		for i, p := range profiles {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("bin%02d.pb.gz", i))) // memory.sh uploads *.pb.gz
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Write(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		t.Skipf("wrote the %d profiles to %s", len(profiles), dir)
	}

	base := liveHeap()
	cfg := Config{SystemDebugDir: "/usr/lib/debug", BuildIDCacheDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", CacheBytes: budget}
	s := New(cfg)
	ctx := context.Background()
	var peakHeap uint64
	pass := func(name string, dataTypes bool) {
		for i, p := range profiles {
			rep, err := s.Symbolize(ctx, p, Options{NoDebuginfod: true})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Mappings; name == "first" && (len(r) != 1 || r[0].State != StateSymbolized) {
				t.Errorf("%s: %+v, want it symbolized", bins[i].file, r)
			}
			if dataTypes {
				r := s.DataTypes(ctx, p, 0, DataTypeOptions{Skid: true, NoDebuginfod: true})
				if len(r.Profile.DSOs) != 1 || (name == "first" && r.Profile.DSOs[0].Error != "") {
					t.Errorf("%s: data types: %+v", bins[i].file, r.Profile.DSOs)
				}
			}
			if h := liveHeap(); h > peakHeap {
				peakHeap = h
			}
		}
	}
	// Symbolize all, then reset the locations so the second pass has work.
	pass("first", false)
	symHeap := liveHeap()
	symRSS, symPeak := rss()
	for _, p := range profiles {
		for _, l := range p.Location {
			l.Line = nil
		}
		for _, m := range p.Mapping {
			m.HasFunctions, m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames = false, false, false, false
		}
		p.Function = nil
	}
	pass("first", true)
	loads1, evicted1 := s.Loads(), s.store.evicted.Load()
	held, bytes := s.CacheStats()
	heldHeap := liveHeap()
	typesRSS, typesPeak := rss()
	pass("second", true)
	loads2, evicted2 := s.Loads(), s.store.evicted.Load()

	// What the store holds, measured as the heap freed by dropping it
	// once the profiles are gone (their names may share its strings).
	profiles = nil
	_, bytesNow := s.CacheStats()
	var facetBytes [nFacets]int64
	s.store.mu.Lock()
	for _, e := range s.store.entries {
		for f, p := range e.parts {
			if p != nil {
				facetBytes[f] += p.Size()
			}
		}
	}
	s.store.mu.Unlock()
	t.Logf("counted: symbols %d MiB, data types %d MiB", facetBytes[facetSymbols]>>20, facetBytes[facetTypes]>>20)
	beforeDrop := liveHeap()
	if f := os.Getenv("VIEWER_MEMORY_HEAPPROFILE"); f != "" {
		w, _ := os.Create(f)
		pprof.WriteHeapProfile(w)
		w.Close()
	}
	runtime.KeepAlive(s) // live until here
	s = nil
	afterDrop := liveHeap()
	freed := int64(beforeDrop) - int64(afterDrop)

	t.Logf("budget %d MiB: after symbolizing: live heap %d MiB, RSS %d MiB (peak %d MiB); after the data types: live heap %d MiB (peak %d MiB), RSS %d MiB (peak %d MiB); %d binaries held, %d MiB counted (%d MiB freed by dropping the store, counted %d MiB at that time); loads %d then %d, facets evicted %d then %d",
		budget>>20, (symHeap-base)>>20, symRSS>>20, symPeak>>20, (heldHeap-base)>>20, (peakHeap-base)>>20, typesRSS>>20, typesPeak>>20, held, bytes>>20, freed>>20, bytesNow>>20, loads1, loads2, evicted1, evicted2)

	if limit := uint64(budget) + 64<<20; peakHeap > limit {
		t.Errorf("live heap reached %d MiB, over the budget %d MiB + 64 MiB", peakHeap>>20, budget>>20)
	}
	// Symbols once and data types once per binary in the first pass, and
	// in the second only what had been evicted is loaded again.
	if want := int64(2 * len(bins)); loads1 < want || loads1 > want+evicted1 {
		t.Errorf("first pass: %d loads for %d binaries with %d facets evicted, want %d (symbols and data types once each) plus at most one per eviction", loads1, len(bins), evicted1, want)
	}
	if again := loads2 - loads1; again > evicted2 {
		t.Errorf("second pass: %d binaries loaded again, but only %d facets had been evicted", again, evicted2)
	}
	if bytesNow > 0 {
		if ratio := float64(freed) / float64(bytesNow); ratio < 0.8 || ratio > 1.2 {
			t.Errorf("the store counts %d bytes but holds %d bytes of heap (ratio %.2f), want within 20%%", bytesNow, freed, ratio)
		}
	}
}
