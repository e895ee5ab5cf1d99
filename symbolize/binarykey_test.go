package symbolize

import (
	"testing"

	"github.com/google/pprof/profile"
)

// TestBinaryKey: one key per binary, the same for every package: the
// kernel apart from an ELF file of the same build ID, build IDs in lower
// case, files without one by path.
func TestBinaryKey(t *testing.T) {
	for _, tt := range []struct {
		file, buildID, want string
	}{
		{"[kernel.kallsyms]_text", "ABCD", "kernel:abcd"},
		{"[kernel.kallsyms]", "", "kernel:"},
		{"/boot/vmlinux", "abcd", "abcd"},
		{"/usr/lib/libc.so.6", "1234EF", "1234ef"},
		{"/opt/app", "", "file:/opt/app"},
	} {
		if got := BinaryKey(&profile.Mapping{File: tt.file, BuildID: tt.buildID}); got != tt.want {
			t.Errorf("BinaryKey(%q, %q) = %q, want %q", tt.file, tt.buildID, got, tt.want)
		}
	}
}
