package datatype

import (
	"path/filepath"
	"sort"
	"testing"
)

// TestDisassembleMatchesObjdump lists every function of the x86-64 test
// binary and compares each instruction's address and text with objdump -d
// (after NormalizeAsm), and checks that attribution labels the listing.
func TestDisassembleMatchesObjdump(t *testing.T) {
	path := filepath.Join(testdataDir, "datatype-dw5-pie")
	funcs := disasm(t, path)
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"get_key", "sum_list", "use_local", "count_table", "make_node", "inl_keys", "main"}
	sort.Strings(names)
	for _, fn := range names {
		ins := funcs[fn]
		if len(ins) == 0 {
			t.Fatalf("objdump lists no %s", fn)
		}
		// The range ends at the next instruction objdump lists after fn.
		end := nextAddr(funcs, ins[len(ins)-1].addr)
		list, err := b.Disassemble(ins[0].addr, end)
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
	// sum_list's loop reads n->val and n->next through struct node.
	var labels []string
	for _, in := range mustList(t, b, funcs["sum_list"])[:len(funcs["sum_list"])-1] {
		labels = append(labels, in.Access.Label())
	}
	found := map[string]bool{}
	for _, l := range labels {
		found[l] = true
	}
	if !found["struct node +0x10 val"] || !found["struct node +0x0 next"] {
		t.Errorf("sum_list labels %q lack struct node's val and next", labels)
	}
}

func mustList(t *testing.T, b *Binary, ins []insn) []Insn {
	t.Helper()
	list, err := b.Disassemble(ins[0].addr, ins[len(ins)-1].addr+1)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// nextAddr is the lowest instruction address objdump lists above addr.
func nextAddr(funcs map[string][]insn, addr uint64) uint64 {
	best := addr + 16
	for _, ins := range funcs {
		for _, in := range ins {
			if in.addr > addr && in.addr < best {
				best = in.addr
			}
		}
	}
	return best
}
