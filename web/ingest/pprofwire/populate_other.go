//go:build !linux

package pprofwire

import "unsafe"

// populate does nothing where madvise cannot populate pages (see the
// Linux version).
func populate(p unsafe.Pointer, n uintptr) {}
