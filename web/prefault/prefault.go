// Package prefault maps in the pages of a large fresh array with one
// system call before it is written, where writing it would fault once per
// page: on the virtual machines viewer runs on, a fault costs several
// microseconds, and the arrays of a 2M-sample profile (its location
// pointers, its flame graph's frames, its hash tables) span hundreds of
// thousands of pages.
package prefault

import "unsafe"

// minBytes is the smallest array mapped in: a system call for a few
// pages, often mapped in already, costs more than their faults.
const minBytes = 64 << 10

// Slice maps in the pages of s's whole capacity (Range). What s holds is
// unchanged.
func Slice[E any](s []E) {
	if cap(s) == 0 {
		return
	}
	var e E
	Range(unsafe.Pointer(unsafe.SliceData(s)), uintptr(cap(s))*unsafe.Sizeof(e))
}

// Grow is slices.Grow: s with room for n more elements. A new array has
// its pages mapped in before s is copied into it.
func Grow[S ~[]E, E any](s S, n int) S {
	if n <= cap(s)-len(s) {
		return s
	}
	t := make(S, 0, len(s)+n)
	Slice(t)
	return append(t, s...)
}
