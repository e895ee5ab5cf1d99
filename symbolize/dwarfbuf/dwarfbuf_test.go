package dwarfbuf

import (
	"encoding/binary"
	"testing"
)

// TestLEB128: the examples of the DWARF 5 standard (section 7.6), and
// reads past the end stop with Err instead of panicking.
func TestLEB128(t *testing.T) {
	for _, c := range []struct {
		in []byte
		u  uint64
		s  int64
	}{
		{[]byte{2}, 2, 2},
		{[]byte{0x7f}, 127, -1},
		{[]byte{0x80, 1}, 128, 128},
		{[]byte{0x81, 0x7f}, 0x3f81, -127},
		{[]byte{0x80, 0x7f}, 0x3f80, -128},
		{[]byte{0xe5, 0x8e, 0x26}, 624485, 624485},
	} {
		r := Reader{B: c.in}
		if got := r.Uleb(); got != c.u || r.Err || !r.Done() {
			t.Errorf("Uleb(% x) = %d (err %v), want %d", c.in, got, r.Err, c.u)
		}
		r = Reader{B: c.in}
		if got := r.Sleb(); got != c.s || r.Err || !r.Done() {
			t.Errorf("Sleb(% x) = %d (err %v), want %d", c.in, got, r.Err, c.s)
		}
	}
	r := Reader{B: []byte{0x80, 0x80}}
	if v := r.Uleb(); v != 0 || !r.Err {
		t.Errorf("unterminated Uleb = %d, err %v; want 0 and Err", v, r.Err)
	}
	r = Reader{B: []byte{1, 2, 3}}
	if v := r.U32(); v != 0 || !r.Err {
		t.Errorf("U32 of 3 bytes = %d, err %v; want 0 and Err", v, r.Err)
	}
	r = Reader{B: []byte{1, 2, 3}}
	if b := r.Bytes(1 << 40); b != nil || !r.Err {
		t.Errorf("Bytes(2^40) of 3 bytes = %v, err %v; want nil and Err", b, r.Err)
	}
	r = Reader{B: []byte{0x34, 0x12, 0xff}}
	if v := r.U16(); v != 0x1234 || r.Err || r.Pos != 2 {
		t.Errorf("U16 = %#x at %d, want 0x1234 at 2", v, r.Pos)
	}
}

// TestByteOrders reads the same bytes in both orders, and CStr and Skip
// stop at the end with Err.
func TestByteOrders(t *testing.T) {
	b := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	le := Reader{B: b}
	be := Reader{B: b, Order: binary.BigEndian}
	if v, w := le.U16(), be.U16(); v != 0x0201 || w != 0x0102 {
		t.Errorf("U16 = %#x / %#x, want 0x0201 / 0x0102", v, w)
	}
	if v, w := le.U32(), be.U32(); v != 0x06050403 || w != 0x03040506 {
		t.Errorf("U32 = %#x / %#x, want 0x06050403 / 0x03040506", v, w)
	}
	if v, w := le.U64(), be.U64(); v != 0x0e0d0c0b0a090807 || w != 0x0708090a0b0c0d0e {
		t.Errorf("U64 = %#x / %#x", v, w)
	}
	if !le.Done() || le.Err || le.Len() != 0 {
		t.Errorf("after 14 bytes: done %v, err %v, len %d", le.Done(), le.Err, le.Len())
	}
	r := Reader{B: []byte("ab\x00cd")}
	if s := r.CStr(); s != "ab" || r.Err || r.Len() != 2 {
		t.Errorf("CStr = %q (err %v, %d left), want \"ab\" and 2 left", s, r.Err, r.Len())
	}
	if s := r.CStr(); s != "" || !r.Err {
		t.Errorf("unterminated CStr = %q, err %v; want \"\" and Err", s, r.Err)
	}
	r = Reader{B: []byte{1, 2, 3}}
	if r.Skip(2); r.Pos != 2 || r.Err {
		t.Errorf("Skip(2) of 3: at %d, err %v", r.Pos, r.Err)
	}
	if r.Skip(2); r.Pos != 2 || !r.Err {
		t.Errorf("Skip(2) of 1 left: at %d, err %v; want Err, not moved", r.Pos, r.Err)
	}
}

// TestReadUnit: headers of DWARF 4, DWARF 5 (a skeleton unit's dwo_id
// skipped) and 64-bit DWARF, as GCC and clang write them; a unit longer
// than the section and an unknown version are errors naming the offset.
func TestReadUnit(t *testing.T) {
	le := binary.LittleEndian
	for _, c := range []struct {
		name string
		in   []byte
		want Unit
	}{
		{"dwarf4", []byte{11, 0, 0, 0, 4, 0, 0x20, 0, 0, 0, 8, 1, 2, 3, 4},
			Unit{Off: 0, End: 15, DIEOff: 11, Type: UnitCompile, AbbrevOff: 0x20, Encoding: Encoding{Version: 4, AddrSize: 8}}},
		{"dwarf5 skeleton", []byte{20, 0, 0, 0, 5, 0, UnitSkeleton, 8, 0x30, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0},
			Unit{Off: 0, End: 24, DIEOff: 20, Type: UnitSkeleton, AbbrevOff: 0x30, Encoding: Encoding{Version: 5, AddrSize: 8}}},
		{"dwarf64", []byte{0xff, 0xff, 0xff, 0xff, 12, 0, 0, 0, 0, 0, 0, 0, 5, 0, UnitCompile, 4, 0x40, 0, 0, 0, 0, 0, 0, 0},
			Unit{Off: 0, End: 24, DIEOff: 24, Type: UnitCompile, AbbrevOff: 0x40, Encoding: Encoding{Version: 5, AddrSize: 4, Dwarf64: true}}},
	} {
		got, err := ReadUnit(c.in, 0, uint64(len(c.in)), le)
		if err != nil || got != c.want {
			t.Errorf("%s: ReadUnit = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct {
		name, err string
		in        []byte
	}{
		{"past the section", "unit at 0x0 runs past the section", []byte{100, 0, 0, 0, 4, 0}},
		{"version 6", "unit at 0x0 has version 6", []byte{7, 0, 0, 0, 6, 0, 0, 0, 0, 0, 8}},
		{"header cut short", "bad unit header at 0x0", []byte{3, 0, 0, 0, 5, 0, 1}},
	} {
		if _, err := ReadUnit(c.in, 0, uint64(len(c.in)), le); err == nil || err.Error() != ".debug_info: "+c.err {
			t.Errorf("%s: error %v, want .debug_info: %s", c.name, err, c.err)
		}
	}
}

// TestParseAbbrevs: a table numbered 1, 2, then 7 (kept apart), with an
// implicit constant; Fixed sums fixed-size forms and is -1 with a LEB128
// or string one; a table cut short is an error.
func TestParseAbbrevs(t *testing.T) {
	sec := []byte{
		0xff,                                                // another table's byte: the table starts at 1
		1, 0x11, 1, 0x03, FormString, 0x13, FormData1, 0, 0, // compile_unit, children: name string, language data1
		2, 0x24, 0, 0x0b, FormData1, 0x3e, FormData1, 0x03, FormStrp, 0, 0, // base_type: byte_size, encoding, name strp
		7, 0x0d, 0, 0x38, FormImplicitConst, 0x7f, 0x49, FormRef4, 0, 0, // member: data_member_location implicit -1, type ref4
		0,
	}
	tab, err := ParseAbbrevs(sec, 1, Encoding{Version: 5, AddrSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	cu, bt, m := tab.Get(1), tab.Get(2), tab.Get(7)
	if cu == nil || cu.Tag != 0x11 || !cu.Children || len(cu.Attrs) != 2 || cu.Fixed != -1 {
		t.Errorf("code 1 = %+v", cu)
	}
	if bt == nil || bt.Tag != 0x24 || bt.Children || bt.Fixed != 1+1+4 || !bt.Has(0x03) || bt.Has(0x49) {
		t.Errorf("code 2 = %+v", bt)
	}
	if m == nil || m.Tag != 0x0d || m.Fixed != 4 || m.Attrs[0].Implicit != -1 {
		t.Errorf("code 7 = %+v", m)
	}
	if tab.Get(3) != nil || tab.Get(0) != nil {
		t.Error("codes the table does not have were found")
	}
	if _, err := ParseAbbrevs(sec[:8], 1, Encoding{}); err == nil {
		t.Error("a table cut short was parsed")
	}
	if _, err := ParseAbbrevs(sec, uint64(len(sec)), Encoding{}); err == nil {
		t.Error("an offset past the section was parsed")
	}
}

// TestForms: SkipForm moves past exactly one value of each form and
// FormUint reads the numbers, in the unit's encoding; an unknown form is
// refused without moving.
func TestForms(t *testing.T) {
	e4 := Encoding{Version: 4, AddrSize: 8}
	e2 := Encoding{Version: 2, AddrSize: 4}
	e64 := Encoding{Version: 5, AddrSize: 8, Dwarf64: true}
	for _, c := range []struct {
		form uint32
		enc  Encoding
		in   []byte
		n    int    // bytes the value takes
		v    uint64 // FormUint's value
		num  bool   // FormUint reads it
	}{
		{FormData1, e4, []byte{0x81}, 1, 0x81, true},
		{FormData2, e4, []byte{1, 2}, 2, 0x201, true},
		{FormStrx3, e4, []byte{1, 2, 3}, 3, 0x030201, true},
		{FormData4, e4, []byte{1, 2, 3, 4}, 4, 0x04030201, true},
		{FormRef8, e4, []byte{1, 0, 0, 0, 0, 0, 0, 2}, 8, 0x0200000000000001, true},
		{FormAddr, e2, []byte{1, 2, 3, 4}, 4, 0x04030201, true},
		{FormRefAddr, e2, []byte{1, 2, 3, 4}, 4, 0x04030201, true},
		{FormRefAddr, e4, []byte{1, 2, 3, 4}, 4, 0x04030201, true},
		{FormSecOffset, e64, []byte{1, 0, 0, 0, 0, 0, 0, 0}, 8, 1, true},
		{FormUdata, e4, []byte{0xe5, 0x8e, 0x26}, 3, 624485, true},
		{FormSdata, e4, []byte{0x7f}, 1, ^uint64(0), true},
		{FormGNUStrIndex, e4, []byte{0x80, 1}, 2, 128, true},
		{FormFlagPresent, e4, nil, 0, 1, true},
		{FormString, e4, []byte{'a', 'b', 0}, 3, 0, false},
		{FormExprloc, e4, []byte{2, 0x91, 0x70}, 3, 0, false},
		{FormBlock2, e4, []byte{1, 0, 9}, 3, 0, false},
		{FormData16, e4, make([]byte, 16), 16, 0, false},
		{FormGNURefAlt, e64, make([]byte, 8), 8, 0, false},
		{FormIndirect, e4, []byte{FormData2, 1, 2}, 3, 0, false},
	} {
		in := append(append([]byte(nil), c.in...), 0xee) // a byte of the next value
		r := Reader{B: in}
		if !r.SkipForm(c.form, c.enc) || r.Err || r.Pos != c.n {
			t.Errorf("form %#x: SkipForm moved %d bytes (err %v), want %d", c.form, r.Pos, r.Err, c.n)
		}
		r = Reader{B: in}
		v, ok := r.FormUint(c.form, -1, c.enc)
		if ok != c.num || (ok && (v != c.v || r.Pos != c.n)) || (!ok && r.Pos != 0) {
			t.Errorf("form %#x: FormUint = %#x, %v after %d bytes; want %#x, %v", c.form, v, ok, r.Pos, c.v, c.num)
		}
	}
	r := Reader{B: []byte{1, 2}}
	if r.SkipForm(0x99, e4) || r.Pos != 0 {
		t.Error("an unknown form was skipped")
	}
	if v, ok := r.FormUint(FormImplicitConst, -3, e4); !ok || int64(v) != -3 || r.Pos != 0 {
		t.Errorf("implicit_const = %d, %v", int64(v), ok)
	}
	r = Reader{B: []byte{2, 0xaa}}
	if r.SkipForm(FormExprloc, e4); !r.Err {
		t.Error("a block past the end did not set Err")
	}
}

// TestEntries walks a small DWARF 4 unit: a struct's members are skipped
// by its DW_AT_sibling link and, without the link, DIE by DIE, to the same
// place; a function's children (no link) DIE by DIE; Ref makes a
// unit-relative reference absolute.
func TestEntries(t *testing.T) {
	abbrev := []byte{
		1, 0x11, 1, 0x03, FormString, 0, 0, // compile_unit: name
		2, 0x13, 1, AttrSibling, FormRef4, 0x03, FormString, 0, 0, // structure_type: sibling, name
		3, 0x0d, 0, 0x38, FormData1, 0, 0, // member: data_member_location
		4, 0x2e, 1, 0x03, FormString, 0, 0, // subprogram: name
		5, 0x34, 0, 0x02, FormExprloc, 0, 0, // variable: location
		0,
	}
	const unitOff = 3 // the unit does not start the section
	dies := []byte{
		1, 'c', 'u', 0,
		2, 0, 0, 0, 0, 's', 0, // sibling filled in below
		3, 8,
		3, 16,
		0,
		4, 'f', 0,
		5, 2, 0x91, 0x70,
		0,
		5, 1, 0x50,
		0,
	}
	sibling := uint32(unitOff + 11 + 16) // header, then the struct's children end at dies[16]
	binary.LittleEndian.PutUint32(dies[5:], sibling-unitOff)
	info := append(make([]byte, unitOff), byte(7+len(dies)), 0, 0, 0, 4, 0, 0, 0, 0, 0, 8)
	info = append(info, dies...)
	u, err := ReadUnit(info, unitOff, uint64(len(info)), binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := ParseAbbrevs(abbrev, 0, u.Encoding)
	if err != nil {
		t.Fatal(err)
	}
	for _, useLink := range []bool{true, false} {
		d := NewEntries(info, &u, tab, binary.LittleEndian)
		cu, err := d.Next()
		if err != nil || cu == nil || cu.Tag != 0x11 {
			t.Fatalf("first DIE: %+v, %v", cu, err)
		}
		if _, err := d.SkipAttrs(cu); err != nil {
			t.Fatal(err)
		}
		st, _ := d.Next()
		if st == nil || st.Tag != 0x13 {
			t.Fatalf("second DIE: %+v", st)
		}
		sib, err := d.SkipAttrs(st)
		if err != nil || sib != uint64(sibling) {
			t.Fatalf("struct's sibling = %#x, %v; want %#x", sib, err, sibling)
		}
		if !useLink {
			sib = 0
		}
		if err := d.SkipChildren(sib); err != nil || d.Offset() != uint64(sibling) {
			t.Fatalf("past the members (link %v): at %#x, %v; want %#x", useLink, d.Offset(), err, sibling)
		}
		fn, _ := d.Next()
		if fn == nil || fn.Tag != 0x2e {
			t.Fatalf("third DIE: %+v", fn)
		}
		if sib, err := d.SkipAttrs(fn); err != nil || sib != 0 {
			t.Fatalf("function: sibling %#x, %v", sib, err)
		}
		if err := d.SkipChildren(0); err != nil {
			t.Fatal(err)
		}
		v, _ := d.Next()
		if v == nil || v.Tag != 0x34 {
			t.Fatalf("after the function: %+v, want the variable", v)
		}
		if _, err := d.SkipAttrs(v); err != nil {
			t.Fatal(err)
		}
		if end, err := d.Next(); end != nil || err != nil || !d.Done() {
			t.Fatalf("after the variable: %+v, %v; want the unit's null entry and its end", end, err)
		}
	}
	// The link is followed, not the children read: garbage among them is
	// not seen.
	bad := append([]byte(nil), info...)
	bad[u.DIEOff+11] = 99 // the first member's code
	d := NewEntries(bad, &u, tab, binary.LittleEndian)
	d.Seek(u.DIEOff + 4)
	st, _ := d.Next()
	if sib, err := d.SkipAttrs(st); err != nil || d.SkipChildren(sib) != nil || d.Offset() != uint64(sibling) {
		t.Errorf("the struct's link was not followed: at %#x", d.Offset())
	}
	d = NewEntries(info, &u, tab, binary.LittleEndian)
	if !d.Seek(u.DIEOff+4) || d.Seek(u.End) || d.Seek(u.DIEOff-1) {
		t.Error("Seek accepts only offsets of the unit's DIEs")
	}
	d.Next()
	if ref, err := d.Ref(&AttrSpec{Attr: AttrSibling, Form: FormRef4}); err != nil || ref != uint64(sibling) {
		t.Errorf("Ref = %#x, %v; want %#x", ref, err, sibling)
	}
	empty := NewEntries(info, &u, &Abbrevs{}, binary.LittleEndian)
	if _, err := empty.Next(); err == nil {
		t.Error("a code missing from the table was read")
	}
}
