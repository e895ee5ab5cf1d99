package buildid

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, id := range []string{"", "abc", "zz", "../../etc/passwd", "ab/cd", strings.Repeat("ab", 65), "ab cd"} {
		_, err := Normalize(id)
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Reason == "" {
			t.Errorf("Normalize(%q): %v, want an InvalidError with a reason", id, err)
		}
	}
	for in, want := range map[string]string{"ABCDEF01": "abcdef01", strings.Repeat("Ab", 64): strings.Repeat("ab", 64)} {
		if got, err := Normalize(in); got != want || err != nil {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestPaths is the candidate list, as the locator (--debug-dir, the system
// tree, perf's cache, the debuginfod cache), the kernel search and
// --serve-local-debug ask for it.
func TestPaths(t *testing.T) {
	const id = "abcdef0123"
	for _, tc := range []struct {
		name    string
		dir     string
		layouts Layout
		kinds   Kind
		want    []string
	}{
		{"--debug-dir, a user binary", "/d", Tree | Bare | Debuginfod, Debuginfo | Executable, []string{
			"/d/.build-id/ab/cdef0123.debug", "/d/.build-id/ab/cdef0123",
			"/d/ab/cdef0123.debug", "/d/ab/cdef0123",
			"/d/abcdef0123/debuginfo", "/d/abcdef0123/executable"}},
		{"--debug-dir, the kernel", "/d", Tree | Bare | Debuginfod | Vmlinux, Debuginfo | Kernel, []string{
			"/d/.build-id/ab/cdef0123.debug", "/d/ab/cdef0123.debug", "/d/abcdef0123/debuginfo", "/d/vmlinux"}},
		{"system tree", "/usr/lib/debug", Tree, Debuginfo, []string{"/usr/lib/debug/.build-id/ab/cdef0123.debug"}},
		{"perf's cache, a user binary", "/home/u/.debug", Perf, Debuginfo | Executable | VDSO, []string{
			"/home/u/.debug/.build-id/ab/cdef0123/debug", "/home/u/.debug/.build-id/ab/cdef0123/elf", "/home/u/.debug/.build-id/ab/cdef0123/vdso"}},
		{"perf's cache, the kernel", "/c", Perf, Debuginfo | Executable, []string{"/c/.build-id/ab/cdef0123/debug", "/c/.build-id/ab/cdef0123/elf"}},
		{"perf's cache, kallsyms", "/c", Perf, Kallsyms, []string{"/c/.build-id/ab/cdef0123/kallsyms", "/c/[kernel.kallsyms]/abcdef0123/kallsyms"}},
		{"debuginfod cache", "/cache", Debuginfod, Debuginfo | Executable, []string{"/cache/abcdef0123/debuginfo", "/cache/abcdef0123/executable"}},
		{"served local debug dir, debug info", "/s", Tree | Bare | Perf | Debuginfod, Debuginfo, []string{
			"/s/.build-id/ab/cdef0123.debug", "/s/ab/cdef0123.debug", "/s/.build-id/ab/cdef0123/debug", "/s/abcdef0123/debuginfo"}},
		{"served local debug dir, executable", "/s", Tree | Bare | Perf | Debuginfod, Executable, []string{
			"/s/.build-id/ab/cdef0123", "/s/ab/cdef0123", "/s/.build-id/ab/cdef0123/elf", "/s/abcdef0123/executable"}},
	} {
		var got []string
		for _, c := range Paths(tc.dir, id, tc.layouts, tc.kinds) {
			got = append(got, c.Path)
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	if c := Paths("/d", "ab", Tree|Bare|Perf|Debuginfod, Debuginfo|Executable); len(c) != 0 {
		t.Errorf("a 2-digit build ID names %v; want none (it would name the directory itself)", c)
	}
	if got := KernelPaths("6.1.0-9-amd64"); len(got) != 4 || got[0] != "/usr/lib/debug/boot/vmlinux-6.1.0-9-amd64" {
		t.Errorf("KernelPaths = %q", got)
	}
	if KernelPaths("") != nil {
		t.Error("KernelPaths(\"\") lists paths")
	}
}
