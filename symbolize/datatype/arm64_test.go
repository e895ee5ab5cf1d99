package datatype

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestARM64 attributes instructions of datatype.c cross-compiled for
// AArch64 (testdata/datatype/build.sh: aarch64-linux-gnu-gcc -O2 -g). The
// addresses come from aarch64-linux-gnu-objdump -d, the expected types and
// members from the DWARF (readelf --debug-dump=info: struct node's key is
// at 8, val at 16; struct outer's in.y at 12, name at 16; stats is a
// struct counters with misses at 8 and table at 16), by hand. head_key and
// new_val need register tracking: the pointer loaded from o->head, and
// make_node's return value, are in no variable's location.
func TestARM64(t *testing.T) {
	path := filepath.Join(testdataDir, "datatype-arm64")
	funcs := disasmWith(t, "aarch64-linux-gnu-objdump", "//", path)
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	if b.Arch() != "arm64" {
		t.Fatalf("Arch() = %q, want arm64", b.Arch())
	}
	cases := []struct {
		fn, insn string // the function and the start of its instruction's objdump text
		kind     string
		typ      string
		off      int64
		member   string
	}{
		{"get_key", "ldr x0, [x0, #8]", KindMember, "struct node", 8, "key"},           // pointer member load
		{"sum_list", "ldrsw x2, [x1, #16]", KindMember, "struct node", 16, "val"},      // loop variable in x1
		{"sum_list", "ldr x1, [x1]", KindMember, "struct node", 0, "next"},             // offset 0
		{"get_y", "ldr w0, [x0, #12]", KindMember, "struct outer", 12, "in.y"},         // nested member
		{"get_name3", "ldrb w0, [x0, #19]", KindMember, "struct outer", 19, "name[3]"}, // array element
		{"get_d", "ldr d0, [x0, #8]", KindMember, "struct tagged", 8, "v.d"},           // union: the float member
		{"get_mode", "ldr w0, [x0]", KindMember, "struct flags", 0, ""},                // bitfield word
		{"count_miss", "ldr x1, [x0, #8]", KindGlobal, "struct counters", 8, "misses"}, // adrp+add global
		{"count_table", "str x1, [x0, #32]", KindGlobal, "struct counters", 32, "table[2]"},
		{"use_local", "ldr x0, [sp, #16]", KindMember, "struct outer", 0, "a"},       // stack local via the frame base
		{"use_local", "ldrsw x1, [sp, #28]", KindMember, "struct outer", 12, "in.y"}, // stack local
		{"use_local", "stp x29, x30, [sp, #-48]!", KindStackOp, "(stack operation)", 0, ""},
		{"use_local", "ldp x29, x30, [sp], #48", KindStackOp, "(stack operation)", 0, ""},
		{"use_local", "bl ", KindStackOp, "(stack operation)", 0, ""},
		{"add3", "eor x1, x0, x1", KindUnknown, "(unknown)", 0, ""}, // no memory operand
		// Register tracking: o->head->key reloads x0, where o's location
		// ends; make_node(key)->val reads through bl's return value.
		{"head_key", "ldr x0, [x0, #8]", KindMember, "struct node", 8, "key"},
		{"new_val", "ldr w0, [x0, #16]", KindMember, "struct node", 16, "val"},
	}
	for _, c := range cases {
		var pc uint64
		for _, in := range funcs[c.fn] {
			if strings.HasPrefix(in.text, c.insn) {
				pc = in.addr
				break
			}
		}
		if pc == 0 {
			t.Errorf("%s: objdump shows no %q in %v", c.fn, c.insn, funcs[c.fn])
			continue
		}
		a := b.Attribute(pc)
		if a.Kind != c.kind || a.Type != c.typ || a.Kind != KindUnknown && a.Kind != KindStackOp && (a.Offset != c.off || c.member != "" && a.Member != c.member) {
			t.Errorf("%s %#x %q: got %s %q +%d %q (%s), want %s %q +%d %q", c.fn, pc, c.insn, a.Kind, a.Type, a.Offset, a.Member, a.Reason, c.kind, c.typ, c.off, c.member)
		}
	}
	// The listing's text is objdump's, instruction by instruction.
	for _, fn := range []string{"sum_list", "use_local", "count_table", "make_node"} {
		ins := funcs[fn]
		list, err := b.Disassemble(ins[0].addr, ins[len(ins)-1].addr+4)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(ins) {
			t.Fatalf("%s: %d instructions, objdump lists %d", fn, len(list), len(ins))
		}
		for i, in := range list {
			if got, want := NormalizeAsm(in.Text), NormalizeAsm(ins[i].text); in.PC != ins[i].addr || got != want {
				t.Errorf("%s: %#x %q, objdump %#x %q", fn, in.PC, got, ins[i].addr, want)
			}
		}
	}
}
