package elfsym

import (
	"runtime"
	"syscall"
)

// offHeapMin is the size from which a section's buffer lives outside the Go
// heap.
const offHeapMin = 256 << 10

// sectionBuf returns a zeroed buffer of n bytes for a section owned by s.
// A large one is an anonymous mapping outside the Go heap, unmapped once s
// is unreachable: decoded DWARF sections are the largest thing a File keeps,
// hold no pointers and never become garbage before the File does, yet in the
// heap they would raise the collector's goal by their own size again (GOGC
// 100), so a batch's peak resident memory would count them twice. Pages are
// only resident once written, as with make.
func sectionBuf(s *lazySection, n uint64) []byte {
	if n < offHeapMin || n > 1<<40 {
		return make([]byte, n)
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, n)
	}
	// Every slice of b is taken through s (ready, all) by code that keeps
	// the fastLiner, and so s, reachable while it reads.
	runtime.AddCleanup(s, func(b []byte) { syscall.Munmap(b) }, b)
	return b
}
