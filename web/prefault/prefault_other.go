//go:build !linux

package prefault

import "unsafe"

// Range does nothing where madvise cannot populate pages (see the Linux
// version).
func Range(p unsafe.Pointer, n uintptr) {}
