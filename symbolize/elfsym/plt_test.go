package elfsym

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestPLTSymbols names each PLT stub of the fidelity test programs and
// python3.11 as objdump -d labels them ("<strlen@plt>:"), in the way
// profiles are symbolized (UseSymbolTableNames); GNU addr2line's way keeps
// naming them "??".
func TestPLTSymbols(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Fatal("objdump is not installed (package binutils): run make deps")
	}
	label := regexp.MustCompile(`(?m)^([0-9a-f]+) <([^>]+@plt)>:$`)
	for _, path := range []string{"../../testdata/fidelity/libcwork", "../../testdata/fidelity/sorter-fp", "/usr/bin/python3.11"} {
		out, err := exec.Command(objdump, "-d", "-j", ".plt", "-j", ".plt.sec", path).Output()
		if err != nil {
			t.Fatalf("objdump -d %s: %v", path, err)
		}
		want := label.FindAllStringSubmatch(string(out), -1)
		if len(want) < 3 {
			t.Fatalf("%s: objdump labels %d PLT stubs", path, len(want))
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		f.UseSymbolTableNames(true)
		for _, w := range want {
			a, _ := strconv.ParseUint(w[1], 16, 64)
			for _, pc := range []uint64{a, a + 6, a + 15} {
				fr, err := f.Lookup(pc, nil)
				if err != nil || len(fr) == 0 || fr[len(fr)-1].Name != w[2] {
					t.Errorf("%s %#x: %v %v, want %s", path, pc, fr, err, w[2])
				}
			}
		}
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
}
