package datatype

import (
	"debug/elf"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"viewer/symbolize/elfsym"
)

// libcPaths returns this machine's libc and its separate debug file from
// libc6-dbg (matched by build ID): a large real binary whose debug info is
// split from its code, as debuginfod serves it.
func libcPaths(tb testing.TB) (exe, debug string) {
	tb.Helper()
	exe, err := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		tb.Fatalf("libc.so.6 not found: %v", err)
	}
	f, err := elfsym.Open(exe)
	if err != nil {
		tb.Fatal(err)
	}
	id := f.BuildID()
	f.Close()
	debug = filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(debug); err != nil {
		tb.Fatalf("libc debug info %s missing (package libc6-dbg): run make deps", debug)
	}
	return exe, debug
}

// cpuTime is the CPU time (user+system, all threads) used by this process
// so far. Benchmarks report it per op next to wall time because the
// machine they run on is shared: wall time inflates under load, CPU time
// much less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

var (
	libcSamplesOnce sync.Once
	libcSamples     []Sample // uniform over all instructions
	libcZipf        []Sample // Zipf over the hot instructions of a few functions
)

// libcProfile returns n samples at instruction boundaries spread uniformly
// over libc's functions (the worst case for caches: few repeats).
func libcProfile(tb testing.TB, exe, debug string, n int) []Sample {
	libcProfiles(tb, exe, debug, n)
	return libcSamples
}

// libcZipfProfile returns n samples shaped like a real profile: 300
// functions picked at random are hot, and samples fall on their
// instructions with Zipf-distributed frequency (s=1.1), so a few thousand
// distinct addresses take many samples each.
func libcZipfProfile(tb testing.TB, exe, debug string, n int) []Sample {
	libcProfiles(tb, exe, debug, n)
	return libcZipf
}

func libcProfiles(tb testing.TB, exe, debug string, n int) {
	libcSamplesOnce.Do(func() { libcSamples, libcZipf = benchProfiles(tb, exe, debug, n) })
}

// benchProfiles returns n samples at instruction boundaries of the functions
// in exe's .text (named by symFile's symbol table) two ways: uniform over
// every instruction, and Zipf (s=1.1) over the instructions of 300 functions
// picked at random.
func benchProfiles(tb testing.TB, exe, symFile string, n int) (uniform, zipf []Sample) {
	ef, err := elf.Open(exe)
	if err != nil {
		tb.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	code, err := text.Data()
	if err != nil {
		tb.Fatal(err)
	}
	sf, err := elf.Open(symFile)
	if err != nil {
		tb.Fatal(err)
	}
	defer sf.Close()
	syms, err := sf.Symbols()
	if err != nil {
		tb.Fatal(err)
	}
	var pcs []uint64
	var funcs [][]uint64 // each function's instructions
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Value < text.Addr || s.Value+s.Size > text.Addr+text.Size {
			continue
		}
		start := len(pcs)
		for pc := s.Value; pc < s.Value+s.Size; {
			inst, err := x86asm.Decode(code[pc-text.Addr:], 64)
			if err != nil {
				break
			}
			pcs = append(pcs, pc)
			pc += uint64(inst.Len)
		}
		if len(pcs) > start {
			funcs = append(funcs, pcs[start:len(pcs):len(pcs)])
		}
	}
	benchCode = struct {
		pcs   []uint64
		funcs [][]uint64
	}{pcs, funcs}
	r := rand.New(rand.NewPCG(7, 7))
	for range n {
		uniform = append(uniform, Sample{PC: pcs[r.IntN(len(pcs))], Weight: 1})
	}
	return uniform, zipfProfile(r, funcs, n, nil)
}

// benchCode is the last benchProfiles binary's instructions, by function.
var benchCode struct {
	pcs   []uint64
	funcs [][]uint64
}

// zipfProfile draws n samples over 300 functions picked at random (or the
// instructions hot gives), Zipf-distributed over their instructions.
func zipfProfile(r *rand.Rand, funcs [][]uint64, n int, hot []uint64) []Sample {
	if hot == nil {
		for range 300 {
			hot = append(hot, funcs[r.IntN(len(funcs))]...)
		}
		r.Shuffle(len(hot), func(i, j int) { hot[i], hot[j] = hot[j], hot[i] })
	}
	z := rand.NewZipf(r, 1.1, 1, uint64(len(hot)-1))
	var out []Sample
	for range n {
		out = append(out, Sample{PC: hot[z.Uint64()], Weight: 1})
	}
	return out
}

// BenchmarkAttribute attributes 100,000 samples over libc, including
// opening the binary and loading its DWARF.
func BenchmarkAttribute(b *testing.B) { benchAttribute(b, libcProfile) }

// BenchmarkAttributeZipf is BenchmarkAttribute with a realistic profile.
func BenchmarkAttributeZipf(b *testing.B) { benchAttribute(b, libcZipfProfile) }

// BenchmarkAttributeSkid is BenchmarkAttribute with skid correction, as
// the data-type page attributes by default.
func BenchmarkAttributeSkid(b *testing.B) { benchAttributeSkid(b, libcProfile, true) }

// BenchmarkAttributeZipfSkid is BenchmarkAttributeZipf with skid correction.
func BenchmarkAttributeZipfSkid(b *testing.B) { benchAttributeSkid(b, libcZipfProfile, true) }

// BenchmarkAttributeLazyZipf is BenchmarkAttributeZipf with libc's units
// indexed lazily, as a kernel's are (lazy.go): most of its time is the
// unit scanner of unitindex.go and dwarfbuf's abbreviation and form
// decoding, measured on a file every machine with libc6-dbg has
// (BenchmarkAttributeVmlinux needs a kernel).
// go test -run '^$' -bench AttributeLazyZipf -benchtime 3x ./symbolize/datatype
func BenchmarkAttributeLazyZipf(b *testing.B) {
	saved := lazyIndexBytes
	lazyIndexBytes = -1
	defer func() { lazyIndexBytes = saved }()
	benchAttribute(b, libcZipfProfile)
}

type profileFunc func(tb testing.TB, exe, debug string, n int) []Sample

func benchAttribute(b *testing.B, profile profileFunc) { benchAttributeSkid(b, profile, false) }

func benchAttributeSkid(b *testing.B, profile profileFunc, skid bool) {
	exe, debug := libcPaths(b)
	samples := profile(b, exe, debug, 100_000)
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		bin, err := Open(exe, debug)
		if err != nil {
			b.Fatal(err)
		}
		agg := NewAggregator()
		agg.Skid = skid
		agg.Add("libc.so.6", bin, samples)
		_ = agg.Profile()
	}
}

// BenchmarkAttributeLoaded attributes the same samples with the binary's
// DWARF loaded and its per-function caches built, but every address
// decoded and resolved again (the per-address memo cleared): attribution's
// own cost, comparable to BenchmarkSymbolizeWarm.
func BenchmarkAttributeLoaded(b *testing.B) { benchAttributeLoaded(b, libcProfile) }

// BenchmarkAttributeLoadedZipf is BenchmarkAttributeLoaded with a realistic profile.
func BenchmarkAttributeLoadedZipf(b *testing.B) { benchAttributeLoaded(b, libcZipfProfile) }

// BenchmarkAttributeLoadedSkid is BenchmarkAttributeLoaded with skid
// correction, as the data-type page attributes by default.
func BenchmarkAttributeLoadedSkid(b *testing.B) { benchAttributeLoadedSkid(b, libcProfile, true) }

// BenchmarkAttributeLoadedZipfSkid is BenchmarkAttributeLoadedZipf with skid correction.
func BenchmarkAttributeLoadedZipfSkid(b *testing.B) {
	benchAttributeLoadedSkid(b, libcZipfProfile, true)
}

func benchAttributeLoaded(b *testing.B, profile profileFunc) {
	benchAttributeLoadedSkid(b, profile, false)
}

func benchAttributeLoadedSkid(b *testing.B, profile profileFunc, skid bool) {
	exe, debug := libcPaths(b)
	samples := profile(b, exe, debug, 100_000)
	bin, err := Open(exe, debug)
	if err != nil {
		b.Fatal(err)
	}
	warm := NewAggregator()
	warm.Skid = skid // the same per-function caches as the timed runs
	warm.Add("libc.so.6", bin, samples)
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		bin.mu.Lock()
		clear(bin.memo)
		clear(bin.skidMemo)
		clear(bin.distinctIdx)
		bin.distinct = nil
		bin.mu.Unlock()
		agg := NewAggregator()
		agg.Skid = skid
		agg.Add("libc.so.6", bin, samples)
		_ = agg.Profile()
	}
}

// BenchmarkAttributeWarm attributes the same samples again: every address
// is remembered, as when a profile is re-attributed for another sample
// type or once its symbolized copy arrives.
func BenchmarkAttributeWarm(b *testing.B) { benchAttributeWarm(b, libcProfile) }

// BenchmarkAttributeWarmZipf is BenchmarkAttributeWarm with a realistic profile.
func BenchmarkAttributeWarmZipf(b *testing.B) { benchAttributeWarm(b, libcZipfProfile) }

func benchAttributeWarm(b *testing.B, profile profileFunc) {
	exe, debug := libcPaths(b)
	samples := profile(b, exe, debug, 100_000)
	bin, err := Open(exe, debug)
	if err != nil {
		b.Fatal(err)
	}
	NewAggregator().Add("libc.so.6", bin, samples)
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		agg := NewAggregator()
		agg.Add("libc.so.6", bin, samples)
		_ = agg.Profile()
	}
}

// BenchmarkDecodeOnly decodes, with x86asm (the decoder the issue names),
// the one instruction at each of the same samples' distinct addresses and
// does nothing else: the least any attribution of those addresses costs,
// to compare with BenchmarkSymbolizeWarm.
func BenchmarkDecodeOnly(b *testing.B) { benchDecodeOnly(b, libcProfile) }

// BenchmarkDecodeOnlyZipf is BenchmarkDecodeOnly with a realistic profile.
func BenchmarkDecodeOnlyZipf(b *testing.B) { benchDecodeOnly(b, libcZipfProfile) }

func benchDecodeOnly(b *testing.B, profile profileFunc) {
	exe, debug := libcPaths(b)
	samples := profile(b, exe, debug, 100_000)
	bin, err := Open(exe, debug)
	if err != nil {
		b.Fatal(err)
	}
	pcs := distinctPCs(samples)
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		for _, pc := range pcs {
			if _, err := x86asm.Decode(bin.insnBytes(pc), 64); err != nil {
				b.Fatalf("decoding %#x: %v", pc, err)
			}
		}
	}
	b.ReportMetric(float64(len(pcs)), "distinct-pcs")
}

// distinctPCs lists the samples' addresses once each, in first-seen order.
func distinctPCs(samples []Sample) []uint64 {
	seen := map[uint64]bool{}
	var pcs []uint64
	for _, s := range samples {
		if !seen[s.PC] {
			seen[s.PC] = true
			pcs = append(pcs, s.PC)
		}
	}
	return pcs
}

// BenchmarkSymbolizeWarm symbolizes the same samples' distinct addresses
// (function, file, line, inlined frames) with symbolize/elfsym once its
// DWARF is loaded: the yardstick for attribution's cost.
func BenchmarkSymbolizeWarm(b *testing.B) { benchSymbolizeWarm(b, libcProfile) }

// BenchmarkSymbolizeWarmZipf is BenchmarkSymbolizeWarm with a realistic profile.
func BenchmarkSymbolizeWarmZipf(b *testing.B) { benchSymbolizeWarm(b, libcZipfProfile) }

func benchSymbolizeWarm(b *testing.B, profile profileFunc) {
	exe, debug := libcPaths(b)
	samples := profile(b, exe, debug, 100_000)
	f, err := elfsym.Open(debug)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pcs := distinctPCs(samples)
	var frames []elfsym.Frame
	for _, pc := range pcs {
		if frames, err = f.Lookup(pc, frames); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		for _, pc := range pcs {
			frames, _ = f.Lookup(pc, frames)
		}
	}
	b.ReportMetric(float64(len(pcs)), "distinct-pcs")
}

// vmlinuxProfiles returns benchProfiles' samples over the kernel at
// $VIEWER_VMLINUX (testdata/datatype/vmlinux.sh fetches Debian's).
func vmlinuxProfiles(b *testing.B, n int) (path string, uniform, zipf []Sample) {
	path = os.Getenv("VIEWER_VMLINUX")
	if path == "" {
		b.Skip("set VIEWER_VMLINUX to a vmlinux with DWARF (testdata/datatype/vmlinux.sh fetches one)")
	}
	uniform, zipf = benchProfiles(b, path, path, n)
	return path, uniform, zipf
}

// BenchmarkAttributeVmlinux attributes 100,000 kernel samples with skid
// correction, including opening the vmlinux and indexing its DWARF, and
// reports the peak RSS of the process (the kernel's DWARF is ~170 MB of
// .debug_info, with its types repeated in every unit).
func BenchmarkAttributeVmlinux(b *testing.B) {
	path, uniform, zipf := vmlinuxProfiles(b, 100_000)
	for _, c := range []struct {
		name    string
		samples []Sample
	}{{"zipf", zipf}, {"uniform", uniform}} {
		b.Run(c.name, func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				bin, err := Open(path, path)
				if err != nil {
					b.Fatal(err)
				}
				agg := NewAggregator()
				agg.Skid = true
				agg.Add("vmlinux", bin, c.samples)
				_ = agg.Profile()
			}
			reportCPU(b, start)
			var ru syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
		})
	}
	// A second profile of the same kernel, with the Binary kept (as the
	// store keeps it): the same workload recorded again (the same hot
	// functions, another draw), and another workload (other functions).
	hotOf := func(samples []Sample) []uint64 {
		var hot []uint64
		for _, s := range samples {
			hot = append(hot, s.PC)
		}
		return hot
	}
	r := rand.New(rand.NewPCG(11, 11))
	for _, c := range []struct {
		name    string
		samples []Sample
	}{
		{"second-same-workload", zipfProfile(r, benchCode.funcs, 100_000, hotOf(zipf))},
		{"second-other-workload", zipfProfile(r, benchCode.funcs, 100_000, nil)},
	} {
		b.Run(c.name, func(b *testing.B) {
			bin, err := Open(path, path)
			if err != nil {
				b.Fatal(err)
			}
			first := NewAggregator()
			first.Skid = true
			first.Add("vmlinux", bin, zipf)
			_ = first.Profile()
			start := cpuTime()
			for b.Loop() {
				agg := NewAggregator()
				agg.Skid = true
				agg.Add("vmlinux", bin, c.samples)
				_ = agg.Profile()
			}
			reportCPU(b, start)
			// What the store counts against --symbol-cache-size.
			b.ReportMetric(float64(bin.Size())/(1<<20), "binary-MiB")
		})
	}
}
