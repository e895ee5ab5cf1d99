package symbolize

import (
	"context"
	"debug/elf"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/elfsym"
)

// warmLibc opens libc's debug info through a Symbolizer, as the server does,
// and decodes what 100,000 addresses inside libc's functions need.
func warmLibc(b *testing.B) (*Handle, []uint64) {
	lib, err := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Fatalf("libc.so.6: %v", err)
	}
	ef, err := elf.Open(lib)
	if err != nil {
		b.Fatal(err)
	}
	var text elf.ProgHeader
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			text = p.ProgHeader
		}
	}
	ef.Close()
	lf, err := elfsym.Open(lib)
	if err != nil {
		b.Fatal(err)
	}
	bid := lf.BuildID()
	lf.Close()
	const base = 0x7f0000000000
	m := &profile.Mapping{Start: base + text.Vaddr&^0xfff, Limit: base + (text.Vaddr+text.Memsz+0xfff)&^0xfff, Offset: text.Off &^ 0xfff, File: lib, BuildID: bid}
	s := New(Config{})
	h, err := s.Open(context.Background(), m, Options{})
	if err != nil {
		b.Fatalf("libc debug info (libc6-dbg) not found: %v; run make deps", err)
	}
	// Addresses inside libc's functions, from its debug file's symbols.
	df, err := elfsym.Open(filepath.Join("/usr/lib/debug/.build-id", bid[:2], bid[2:]+".debug"))
	if err != nil {
		b.Fatal(err)
	}
	var fns []elfsym.Symbol
	for _, s := range df.Symbols() {
		if s.Size > 0 {
			fns = append(fns, s)
		}
	}
	df.Close()
	r := rand.New(rand.NewPCG(1, 2))
	addrs := make([]uint64, 100000)
	for i := range addrs {
		f := fns[r.IntN(len(fns))]
		addrs[i] = base + f.Addr + r.Uint64N(f.Size)
	}
	var frames []elfsym.Frame
	for _, a := range addrs { // warm: decode every unit they touch
		frames, _ = h.Lookup(a, frames)
	}
	return h, addrs
}

// BenchmarkWarmLookup measures lookups of addresses in libc once its debug
// info is loaded and decoded, as the server does for every profile after the
// first that touches libc. Reported as addresses per second.
func BenchmarkWarmLookup(b *testing.B) {
	h, addrs := warmLibc(b)
	defer h.Close()
	var frames []elfsym.Frame
	var err error
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		frames, err = h.Lookup(addrs[i%len(addrs)], frames)
		if err != nil || len(frames) == 0 {
			b.Fatalf("%#x: %v %v", addrs[i%len(addrs)], frames, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "addrs/s")
}

// BenchmarkWarmLookupParallel is BenchmarkWarmLookup from every CPU at once,
// as concurrent requests do.
func BenchmarkWarmLookupParallel(b *testing.B) {
	h, addrs := warmLibc(b)
	defer h.Close()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var frames []elfsym.Frame
		i := 0
		for pb.Next() {
			frames, _ = h.Lookup(addrs[i%len(addrs)], frames)
			i += 7
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "addrs/s")
}
