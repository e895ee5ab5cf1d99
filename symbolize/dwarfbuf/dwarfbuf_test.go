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
