//go:build unix

package ingest

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only. evict drops the pages
// wholly inside data[lo:hi] from this process's memory (they fault back
// from the page cache or the file when read again), so reading a mapped
// file front to back keeps about a window of it resident; unmap ends the
// mapping, after which data must not be read.
func mapFile(f *os.File, size int64) (data []byte, evict func(lo, hi int), unmap func(), err error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, nil, syscall.EINVAL
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, nil, err
	}
	page := os.Getpagesize()
	evict = func(lo, hi int) {
		lo = (lo + page - 1) / page * page
		hi = min(hi, len(data)) / page * page
		if lo < hi {
			syscall.Madvise(data[lo:hi], syscall.MADV_DONTNEED)
		}
	}
	return data, evict, func() { syscall.Munmap(data) }, nil
}
