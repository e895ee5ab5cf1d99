package datatype

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLazyIndexMatchesFull opens every test binary twice, indexed in full
// and one compile unit at a time (as a kernel's DWARF is), and attributes
// every instruction of every function with both: the answers are the same.
func TestLazyIndexMatchesFull(t *testing.T) {
	for _, name := range []string{"datatype-dw5-pie", "datatype-dw4-pie", "datatype-dw5-nopie", "datatype-dw5-O0",
		"datatype-arm64", "datatype-vmlinux", "index", "index-nopie", "libdatatype.so", "skid", "extern"} {
		path := filepath.Join(testdataDir, name)
		full, err := Open(path, path)
		if err != nil {
			t.Fatal(err)
		}
		saved := lazyIndexBytes
		lazyIndexBytes = -1
		lazy, err := Open(path, path)
		lazyIndexBytes = saved
		if err != nil {
			t.Fatal(err)
		}
		if full.lazy || !lazy.lazy || len(lazy.funcs) != 0 {
			t.Fatalf("%s: full lazy=%v, lazy lazy=%v with %d functions indexed at open", name, full.lazy, lazy.lazy, len(lazy.funcs))
		}
		n := 0
		// Last function first: the lazy index meets units in another order
		// than the file's.
		for i := len(full.funcs) - 1; i >= 0; i-- {
			f := full.funcs[i]
			insns, err := full.Disassemble(f.lo, f.hi)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range insns {
				a, b := full.Attribute(in.PC), lazy.Attribute(in.PC)
				if a.Kind != b.Kind || a.Type != b.Type || a.Offset != b.Offset || a.Member != b.Member || a.Reason != b.Reason {
					t.Errorf("%s %#x %s: full %s %q +%d %q (%s), lazy %s %q +%d %q (%s)", name, in.PC, in.Text,
						a.Kind, a.Type, a.Offset, a.Member, a.Reason, b.Kind, b.Type, b.Offset, b.Member, b.Reason)
				}
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no instructions compared", name)
		}
	}
}

// TestLazyExternGlobal: get_level (extern-use.c) reads config.level, a
// global extern-def.c defines; that unit has no code, so a lazy index never
// reads it, and finds the global through extern-use.c's declaration and
// the symbol table: struct conf's level is at 8 (readelf
// --debug-dump=info), the load is objdump's mov 0x2ef2(%rip),%eax.
func TestLazyExternGlobal(t *testing.T) {
	path := filepath.Join(testdataDir, "extern")
	funcs := disasm(t, path)
	saved := lazyIndexBytes
	lazyIndexBytes = -1
	defer func() { lazyIndexBytes = saved }()
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	ins := funcs["get_level"]
	if len(ins) == 0 || !strings.HasPrefix(ins[0].text, "mov") || !strings.Contains(ins[0].text, "(%rip)") {
		t.Fatalf("objdump's get_level: %v", ins)
	}
	a := b.Attribute(ins[0].addr)
	if a.Kind != KindGlobal || a.Type != "struct conf" || a.Offset != 8 || a.Member != "level" {
		t.Errorf("config.level: %s %q +%d %q (%s)", a.Kind, a.Type, a.Offset, a.Member, a.Reason)
	}
}

// TestLazyIndexNotForGo: a Go binary's DWARF declares no other package's
// globals, so it is indexed in full however large it is.
func TestLazyIndexNotForGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "goprog")
	if out, err := exec.Command("go", "build", "-o", path, filepath.Join(testdataDir, "..", "symbolize", "goprog", "main.go")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	saved := lazyIndexBytes
	lazyIndexBytes = -1
	defer func() { lazyIndexBytes = saved }()
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	if b.lazy || len(b.funcs) == 0 {
		t.Errorf("goprog: lazy %v, %d functions indexed at open", b.lazy, len(b.funcs))
	}
}
