//go:build !linux

package elfsym

// sectionBuf returns a zeroed buffer of n bytes for a section owned by s.
func sectionBuf(s *lazySection, n uint64) []byte { return make([]byte, n) }
