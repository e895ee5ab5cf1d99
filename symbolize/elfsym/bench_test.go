package elfsym

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkColdLibc opens libc's debug file and looks up 20,000 addresses
// inside its functions, decoding every unit they touch with the fast DWARF
// decoder (its DIE, abbreviation, range and line-table cursor) and reading
// the sections through localfile's deadline: the cost of a binary's first
// profile. It reports the process's CPU time per op too (cpu-ns/op), which
// a shared machine disturbs less than the wall time.
// go test -run '^$' -bench ColdLibc -benchtime 3x ./symbolize/elfsym
func BenchmarkColdLibc(b *testing.B) {
	path := libcDebug(b)
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	addrs := libcAddrs(b, f, 20000, 3)
	f.Close()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ResetTimer()
	start := cpu()
	for range b.N {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		var frames []Frame
		for _, a := range addrs {
			frames, _ = f.Lookup(a, frames[:0])
		}
		f.Close()
	}
	b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
}
