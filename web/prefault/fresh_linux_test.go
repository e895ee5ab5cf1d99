package prefault

import (
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// freshBytes is the memory each op of BenchmarkFreshMemory writes.
const freshBytes = 64 << 20

// BenchmarkFreshMemory is what this machine charges for memory a process
// has not touched before, against rewriting memory it has: the CPU of
// writing 64 MiB of a fresh anonymous mapping, page by page (fault),
// after Range mapped it in (populated), and again once written (rewrite).
// cpu-ms/MiB is the process's CPU per MiB, the figure to multiply a
// server's peak RSS by for what its first touch of that memory costs. On
// the shared virtual machine of BENCHMARKS.md a populated MiB cost about
// 40 times a rewritten one (1.6 against 0.04 ms): the hypervisor's work
// for a fresh page, charged to the process, which no prefault avoids.
//
//	go test -run '^$' -bench FreshMemory -benchtime 20x ./web/prefault
func BenchmarkFreshMemory(b *testing.B) {
	for _, c := range []struct {
		name            string
		populate, reuse bool
	}{{"fault", false, false}, {"populated", true, false}, {"rewrite", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			var kept []byte
			if c.reuse {
				kept = freshMapping(b)
				writeWords(kept)
				defer unix.Munmap(kept)
			}
			var cpu int64
			for b.Loop() {
				m := kept
				if !c.reuse {
					b.StopTimer()
					m = freshMapping(b)
					b.StartTimer()
				}
				t0 := cpuNanos()
				if c.populate {
					Range(unsafe.Pointer(&m[0]), uintptr(len(m)))
				}
				writeWords(m)
				cpu += cpuNanos() - t0
				if !c.reuse {
					unix.Munmap(m)
				}
			}
			b.ReportMetric(float64(cpu)/1e6/float64(b.N)/(freshBytes>>20), "cpu-ms/MiB")
		})
	}
}

func freshMapping(b *testing.B) []byte {
	m, err := unix.Mmap(-1, 0, freshBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	unix.Madvise(m, unix.MADV_NOHUGEPAGE) // 4 KiB pages, as the Go heap's arrays mostly are here
	return m
}

// writeWords writes every word of m, as filling an array does.
func writeWords(m []byte) {
	w := unsafe.Slice((*uintptr)(unsafe.Pointer(&m[0])), len(m)/8)
	for i := range w {
		w[i] = uintptr(i)
	}
}

func cpuNanos() int64 {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return r.Utime.Nano() + r.Stime.Nano()
}
