package elfsym

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestPLTSymbols names each PLT stub of the fidelity test programs,
// python3.11 and libc (whose ifunc stubs objdump calls *ABS*+0x9f550@plt)
// as objdump -d labels them ("<strlen@plt>:"), in the way profiles are
// symbolized (UseSymbolTableNames); GNU addr2line's way keeps naming them
// "??". libc6-dbg's debug file of libc, which keeps no PLT names, names
// them too once given the library (UsePLTOf), as a profile's symbolization
// does when its debug file comes from debuginfod (main said _init).
func TestPLTSymbols(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Fatal("objdump is not installed (package binutils): run make deps")
	}
	label := regexp.MustCompile(`(?m)^([0-9a-f]+) <([^>]+@plt)>:$`)
	stubs := func(path string) [][]string {
		out, err := exec.Command(objdump, "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", path).Output()
		if err != nil {
			t.Fatalf("objdump -d %s: %v", path, err)
		}
		want := label.FindAllStringSubmatch(string(out), -1)
		if len(want) < 3 {
			t.Fatalf("%s: objdump labels %d PLT stubs", path, len(want))
		}
		return want
	}
	check := func(f *File, path string, want [][]string) {
		t.Helper()
		for i, w := range want {
			a, _ := strconv.ParseUint(w[1], 16, 64)
			// Up to the next stub: 16 bytes, 8 in .plt.got.
			size := uint64(8)
			if i+1 < len(want) {
				next, _ := strconv.ParseUint(want[i+1][1], 16, 64)
				if next > a && next-a <= 16 {
					size = next - a
				}
			}
			for _, pc := range []uint64{a, a + size/2, a + size - 1} {
				fr, err := f.Lookup(pc, nil)
				if err != nil || len(fr) == 0 || fr[len(fr)-1].Name != w[2] {
					t.Errorf("%s %#x: %v %v, want %s", path, pc, fr, err, w[2])
				}
			}
		}
	}
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	for _, path := range []string{"../../testdata/fidelity/libcwork", "../../testdata/fidelity/sorter-fp", "/usr/bin/python3.11", libc} {
		want := stubs(path)
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		f.UseSymbolTableNames(true)
		if !f.PLTNamed() {
			t.Errorf("%s: PLTNamed false for an unstripped object", path)
		}
		check(f, path, want)
		f.UseSymbolTableNames(false)
		if fr, _ := f.Lookup(0, nil); len(fr) > 0 {
			t.Errorf("address 0 named %v", fr)
		}
		a, _ := strconv.ParseUint(want[0][1], 16, 64)
		if fr, _ := f.Lookup(a, nil); len(fr) > 0 && fr[len(fr)-1].Name == want[0][2] {
			t.Errorf("%s: addr2line's way names a PLT stub %s; GNU addr2line prints ??", path, want[0][2])
		}
		f.Close()
	}

	dbg := libcDebug(t)
	df, err := Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	df.UseSymbolTableNames(true)
	want := stubs(libc)
	a, _ := strconv.ParseUint(want[0][1], 16, 64)
	if df.PLTNamed() || !df.InPLT(a) {
		t.Fatalf("%s: PLTNamed %v, InPLT(%#x) %v; want false, true (the debug file keeps .plt's header only)", dbg, df.PLTNamed(), a, df.InPLT(a))
	}
	exe, err := Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	df.UsePLTOf(exe)
	exe.Close()
	check(df, dbg, want)
}
