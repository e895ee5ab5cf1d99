package symbolize

import (
	"testing"

	"github.com/google/pprof/profile"
)

// TestIsPseudo: the mappings perf and Go profiles record that are no file
// with debug info, against real files (the kernel included) and a JIT's
// perf map, exactly /tmp/perf-<digits>.map, whose names are in that file;
// names merely like one stay pseudo.
func TestIsPseudo(t *testing.T) {
	for name, want := range map[string]bool{
		"[vdso]": true, "[vsyscall]": true, "[vvar]": true, "[stack]": true, "[heap]": true, "//anon": true, "": true,
		"[anon:libc_malloc]": true, "/tmp/perf-4242.map": false, "/tmp/perf-x.map": true, "/tmp/perf-04242.map": true, "/memfd:jit-cache (deleted)": true, "/dev/zero": true,
		"/usr/bin/gzip": false, "/lib/x86_64-linux-gnu/libc.so.6": false, "[kernel.kallsyms]": false, "[kernel.kallsyms]_text": false,
		"/tmp/perf-4242.so": false,
	} {
		if got := IsPseudo(name); got != want {
			t.Errorf("IsPseudo(%q) = %v, want %v", name, got, want)
		}
		l := &profile.Location{Mapping: &profile.Mapping{File: name}, Address: 0x1000}
		if got := NeedsName(l); got == want {
			t.Errorf("NeedsName(raw address in %q) = %v, want %v", name, got, !want)
		}
	}
}
