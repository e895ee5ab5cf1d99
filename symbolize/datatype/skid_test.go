package datatype

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSkid: with skid correction a sample on an instruction that touches no
// memory counts on the nearest access before it in its basic block, and
// never across a jump target; without it, and through Attribute, samples
// keep their own instruction. testdata/datatype/skid.c fixes the code with
// inline assembly; addresses come from objdump.
func TestSkid(t *testing.T) {
	path := filepath.Join(testdataDir, "skid")
	funcs := disasm(t, path)
	keyLoad := findInsn(t, funcs, "after_load", "0x8(%rdi)")
	test := findInsn(t, funcs, "after_load", "test ")
	jz := findInsn(t, funcs, "after_load", "je ")
	valLoad := findInsn(t, funcs, "after_load", "0x10(%rdi)")
	add := findInsn(t, funcs, "after_load", "add $0x1")

	type row struct {
		typ, member string
		skid        bool
		reason      string
	}
	attribute := func(skid bool, pc uint64) row {
		t.Helper()
		b, err := Open(path, path)
		if err != nil {
			t.Fatal(err)
		}
		agg := NewAggregator()
		agg.Skid = skid
		agg.KeepAccesses = true
		agg.Add("skid", b, []Sample{{PC: pc, Weight: 1}})
		a, ok := agg.Access("skid", pc)
		if !ok {
			t.Fatalf("no access kept for %#x", pc)
		}
		if p := agg.Profile(); (p.Skid == 1) != a.Skid {
			t.Errorf("%#x: Profile.Skid = %d but the access's Skid is %v", pc, p.Skid, a.Skid)
		}
		return row{a.Type, a.Member, a.Skid, a.Reason}
	}
	check := func(name string, got row, typ, member string, skid bool, reason string) {
		t.Helper()
		if got.typ != typ || got.member != member || got.skid != skid || !strings.Contains(got.reason, reason) {
			t.Errorf("%s: got %+v; want %s %q skid=%v, reason containing %q", name, got, typ, member, skid, reason)
		}
	}
	check("the load itself, skid on", attribute(true, keyLoad), "struct node", "key", false, "location of n")
	check("test after the load, skid on", attribute(true, test), "struct node", "key", true, "skid: sampled 1 instruction(s) later, where test has no memory operand")
	check("je two after the load, skid on", attribute(true, jz), "struct node", "key", true, "skid: sampled 2 instruction(s) later")
	check("add at a jump target, skid on", attribute(true, add), "(unknown)", "", false, "add has no memory operand")
	check("the load before the jump target", attribute(true, valLoad), "struct node", "val", false, "location of n")
	check("test after the load, skid off", attribute(false, test), "(unknown)", "", false, "test has no memory operand")

	// The engine's own answer is the sampled instruction's.
	b, err := Open(path, path)
	if err != nil {
		t.Fatal(err)
	}
	if a := b.Attribute(test); a.Kind != KindUnknown || a.Skid {
		t.Errorf("Attribute(test) = %+v; want the instruction's own (unknown)", a)
	}
}
