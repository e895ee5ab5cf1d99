package dwarfbuf

import "testing"

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
