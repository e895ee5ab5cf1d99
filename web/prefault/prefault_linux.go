package prefault

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Range maps in the pages wholly inside the n bytes at p, writable, with
// one system call (madvise MADV_POPULATE_WRITE, Linux 5.14), where writing
// to them a page at a time faults on each: the pprof decoder's blocks of
// location pointers are fresh memory, 360 MB on the 2M-sample deep shape,
// and a fault each 4 KiB cost more than a third of building them, most of
// it the kernel's entry and exit. What the pages hold is unchanged; where
// the call is not supported it does nothing, and arrays under minBytes
// are left to fault.
func Range(p unsafe.Pointer, n uintptr) {
	if n < minBytes {
		return
	}
	page := uintptr(unix.Getpagesize())
	skip := (page - uintptr(p)%page) % page // to the first whole page
	if n <= skip {
		return
	}
	if size := (n - skip) &^ (page - 1); size > 0 {
		unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, skip)), size), unix.MADV_POPULATE_WRITE)
	}
}
