package elfsym

import "github.com/ianlancetaylor/demangle"

// Demangle returns the demangled form of a C++ or Rust symbol name, or name
// itself when it is not mangled. full keeps parameters (as addr2line -C
// prints them); otherwise parameters are dropped and template arguments
// kept, which reads better in a flame graph.
func Demangle(name string, full bool) string {
	if len(name) < 2 || (name[0] != '_' && name[0] != '.') {
		return name
	}
	if full {
		return demangle.Filter(name)
	}
	return demangle.Filter(name, demangle.NoParams, demangle.NoEnclosingParams, demangle.NoClones)
}
