package elfsym

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Demangle returns the demangled form of a C++ or Rust symbol name, or name
// itself when it is not mangled. full keeps parameters (as addr2line -C
// prints them); otherwise parameters are dropped and template arguments
// kept, which reads better in a flame graph.
func Demangle(name string, full bool) string {
	if len(name) < 2 || (name[0] != '_' && name[0] != '.') {
		return name
	}
	var out string
	if full {
		out = demangle.Filter(name)
	} else {
		out = demangle.Filter(name, demangle.NoParams, demangle.NoEnclosingParams, demangle.NoClones)
	}
	if strings.HasPrefix(name, "_R") {
		out = dropEmptyRustSegments(out)
	}
	return out
}

// dropEmptyRustSegments removes the empty path segments the demangle
// package prints for a Rust v0 implementation-internal namespace without a
// name (thread_local!'s: THREAD_RNG_KEY::::{closure#0}), which rustc's own
// demangler, rustfilt and c++filt leave out (THREAD_RNG_KEY::{closure#0}).
// No Rust path has an empty segment otherwise, so "::::" is only that.
func dropEmptyRustSegments(s string) string {
	for strings.Contains(s, "::::") {
		s = strings.ReplaceAll(s, "::::", "::")
	}
	return s
}
