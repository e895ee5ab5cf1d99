//go:build unix

package perfdata

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// fileSpool is a Spool in a mapped file, as ingest's is.
type fileSpool struct {
	f    *os.File
	n    int
	data []byte
}

func newFileSpool(t *testing.T) *fileSpool {
	f, err := os.Create(filepath.Join(t.TempDir(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	return &fileSpool{f: f}
}

func (s *fileSpool) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	s.n += n
	return n, err
}

func (s *fileSpool) Map() ([]byte, func(lo, hi int), error) {
	data, err := syscall.Mmap(int(s.f.Fd()), 0, s.n, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	s.data = data
	page := os.Getpagesize()
	return data, func(lo, hi int) {
		lo, hi = (lo+page-1)/page*page, hi/page*page
		if lo < hi {
			syscall.Madvise(data[lo:hi], syscall.MADV_DONTNEED)
		}
	}, nil
}

func (s *fileSpool) close() {
	if s.data != nil {
		syscall.Munmap(s.data)
	}
	s.f.Close()
}

// TestCompressedMemoryBounded converts synthesized compressed recordings
// of 20,000 and 160,000 samples (3 and 24 MB of records decompressed) as
// TestScanMemoryBounded does plain ones: with a Spool, the live heap
// while the records are aggregated is the index plus what is kept,
// whatever the decompressed size; without one, it holds the decompressed
// records (what the test would see if they were kept in the heap).
func TestCompressedMemoryBounded(t *testing.T) {
	var beyondIndex []int64
	for _, n := range []int{20_000, 160_000} {
		plain := synthStream(n, 8)
		data := compressRecords(t, plain, 32<<10, true)
		for _, spooled := range []bool{true, false} {
			opt := Options{}
			var sp *fileSpool
			if spooled {
				sp = newFileSpool(t)
				opt.Spool = func() (Spool, error) { return sp, nil }
			}
			h := newHeapPeak()
			opt.Progress = h.progress
			f := mustScan(t, data, opt)
			ests := f.Estimates(0)
			p, err := Convert(f, ConvertOptions{})
			if err != nil {
				t.Fatal(err)
			}
			e, peak := ests[0], h.peak
			if e.Samples != int64(len(p.Sample)) || total(p) != int64(n) {
				t.Errorf("%d records: estimated %d samples, the conversion kept %d, of %d records", n, e.Samples, len(p.Sample), total(p))
			}
			bound := f.IndexMemory() + e.Memory() + 2<<20
			t.Logf("%d records, spooled %v: %d bytes compressed, %d decompressed; heap peak +%d KiB while aggregating, the index %d KiB, the estimate of what is kept %d KiB",
				n, spooled, len(data), len(f.plain), peak>>10, f.IndexMemory()>>10, e.Memory()>>10)
			if spooled {
				if peak == 0 || peak > bound {
					t.Errorf("%d records, spooled: live heap while aggregating peaked %d bytes over the start; the index is %d, the estimate of what is kept %d",
						n, peak, f.IndexMemory(), e.Memory())
				}
				beyondIndex = append(beyondIndex, peak-f.IndexMemory())
			} else if peak < int64(len(f.plain)) {
				t.Errorf("%d records in the heap: live heap peaked %d bytes over the start, less than the %d decompressed bytes it holds: the measure misses them",
					n, peak, len(f.plain))
			}
			if len(f.plain) < len(plain)*9/10 {
				t.Errorf("%d records: %d bytes decompressed, the plain recording has %d", n, len(f.plain), len(plain))
			}
			runtime.KeepAlive(data)
			if sp != nil {
				sp.close()
			}
		}
	}
	if beyondIndex[1] > beyondIndex[0]+2<<20 {
		t.Errorf("beyond the index, 8 times the records took %d bytes of heap, against %d", beyondIndex[1], beyondIndex[0])
	}
}
