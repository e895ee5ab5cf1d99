package symbolize

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"viewer/symbolize/elfsym"
)

// TestKallsymsPaddingNamesItsFunction: system-fp's one sample that differed
// from perf script was an interrupt at native_set_pte's first instruction;
// CallSites moves a caller frame one byte back, onto the last byte of the
// __pfx_native_set_pte padding before it, which no call ends in. That byte
// is named by the function, as perf names the pc; any other padding byte,
// and the other symbols, by their own names.
func TestKallsymsPaddingNamesItsFunction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	os.WriteFile(path, []byte(`ffffffff81001000 T do_thing
ffffffff81001ff0 T __pfx_native_set_pte
ffffffff81002000 T native_set_pte
ffffffff81002000 t native_set_pte_alias
ffffffff81002040 T __pfx_next_fn
ffffffff81002050 T next_fn
ffffffff81003000 T end_marker
`), 0o644)
	k, err := loadKallsyms(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff81001fff, "native_set_pte_alias"}, // the padding's last byte: the function (its last alias, as perf)
		{0xffffffff81001ff5, "__pfx_native_set_pte"}, // inside the padding
		{0xffffffff81002000, "native_set_pte_alias"},
		{0xffffffff81002010, "native_set_pte_alias"},
		{0xffffffff8100204f, "next_fn"},
		{0xffffffff81001fef, "do_thing"},
	} {
		got, _ := k.Lookup(c.addr, []elfsym.Frame{})
		if len(got) != 1 || got[0].Name != c.want {
			t.Errorf("%#x: %v, want %s", c.addr, got, c.want)
		}
	}
}

// TestVmlinuxPaddingNamesItsFunction is TestKallsymsPaddingNamesItsFunction
// for a vmlinux read by build ID: a kernel-like ELF (built here from
// assembly: native_set_pte after its 16-byte __pfx_ padding) names the
// padding's last byte by the function and any other byte of it by the
// padding.
func TestVmlinuxPaddingNamesItsFunction(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "k.s")
	os.WriteFile(src, []byte(`	.text
	.globl _start
	.type _start, @function
_start:
	.fill 32, 1, 0x90
	.size _start, 32
	.globl __pfx_native_set_pte
	.type __pfx_native_set_pte, @function
__pfx_native_set_pte:
	.fill 16, 1, 0x90
	.size __pfx_native_set_pte, 16
	.globl native_set_pte
	.type native_set_pte, @function
native_set_pte:
	nop
	ret
	.size native_set_pte, 2
`), 0o644)
	bin := filepath.Join(dir, "vmlinux")
	if out, err := exec.Command("gcc", "-nostdlib", "-static", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc (Debian package gcc): %v\n%s", err, out)
	}
	f, err := elfsym.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fn, pfx uint64
	for _, s := range f.Symbols() {
		switch s.Name {
		case "native_set_pte":
			fn = s.Addr
		case "__pfx_native_set_pte":
			pfx = s.Addr
		}
	}
	if fn == 0 || pfx != fn-16 {
		t.Fatalf("native_set_pte at %#x, its padding at %#x", fn, pfx)
	}
	k := &kernelELF{File: f}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{fn - 1, "native_set_pte"},
		{fn - 8, "__pfx_native_set_pte"},
		{fn, "native_set_pte"},
		{fn - 17, "_start"},
	} {
		got, err := k.Lookup(c.addr, nil)
		if err != nil || len(got) == 0 || got[len(got)-1].Name != c.want {
			t.Errorf("%#x: %v %v, want %s", c.addr, got, err, c.want)
		}
	}
}
