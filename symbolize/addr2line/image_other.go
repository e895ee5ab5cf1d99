//go:build !linux

package addr2line

// ReleaseStartupPages does nothing outside Linux.
func ReleaseStartupPages() {}
