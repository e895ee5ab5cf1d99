// Package dwarfbuf reads the encodings DWARF sections share (little-endian
// integers, LEB128, counted byte strings) through a bounds-checked cursor,
// for the parsers that debug/dwarf does not provide: location lists and
// expressions (symbolize/datatype) and call frame information
// (symbolize/unwind).
package dwarfbuf

import "encoding/binary"

// Reader is a cursor over B: any read past the end sets Err and returns
// zero, so malformed input ends a parse instead of panicking.
type Reader struct {
	B   []byte
	Pos int
	Err bool
}

// Done reports whether the cursor is at or past the end.
func (r *Reader) Done() bool { return r.Pos >= len(r.B) }

// Need reports whether n more bytes can be read, setting Err if not.
func (r *Reader) Need(n int) bool {
	if r.Err || n < 0 || r.Pos+n > len(r.B) || r.Pos+n < r.Pos {
		r.Err = true
		return false
	}
	return true
}

// U8 reads one byte.
func (r *Reader) U8() byte {
	if !r.Need(1) {
		return 0
	}
	v := r.B[r.Pos]
	r.Pos++
	return v
}

// U16 reads a little-endian uint16.
func (r *Reader) U16() uint16 {
	if !r.Need(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(r.B[r.Pos:])
	r.Pos += 2
	return v
}

// U32 reads a little-endian uint32.
func (r *Reader) U32() uint32 {
	if !r.Need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.B[r.Pos:])
	r.Pos += 4
	return v
}

// U64 reads a little-endian uint64.
func (r *Reader) U64() uint64 {
	if !r.Need(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.B[r.Pos:])
	r.Pos += 8
	return v
}

// Bytes returns the next n bytes (a slice of B, not a copy).
func (r *Reader) Bytes(n uint64) []byte {
	if n > uint64(len(r.B)) || !r.Need(int(n)) {
		r.Err = true
		return nil
	}
	v := r.B[r.Pos : r.Pos+int(n)]
	r.Pos += int(n)
	return v
}

// Uleb reads an unsigned LEB128 number; bits past 64 are dropped.
func (r *Reader) Uleb() uint64 {
	var v uint64
	var shift uint
	for {
		c := r.U8()
		if r.Err {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			return v
		}
	}
}

// Sleb reads a signed LEB128 number.
func (r *Reader) Sleb() int64 {
	var v int64
	var shift uint
	var c byte
	for {
		c = r.U8()
		if r.Err {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			break
		}
	}
	if shift < 64 && c&0x40 != 0 {
		v |= -1 << shift
	}
	return v
}
