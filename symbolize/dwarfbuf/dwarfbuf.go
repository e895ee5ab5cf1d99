// Package dwarfbuf is the one fast DWARF reader of the project. Its cursor
// (Reader) reads the encodings DWARF sections share (integers of either
// byte order, LEB128, counted and NUL-terminated strings) bounds-checked;
// on it, the structure of .debug_info: unit headers (ReadUnit),
// abbreviation tables (ParseAbbrevs), attribute values of every form
// (SkipForm, FormUint) and a cursor over a unit's DIEs (Entries) that
// skips attributes and whole subtrees nobody asked for, which is what makes
// it faster than debug/dwarf for the few attributes symbolization and
// indexing read. Its users: elfsym's decoder of functions, inlined calls
// and line tables (fastdwarf.go, lineprog.go, linefiles.go), datatype's
// index of functions, globals and type definitions (unitindex.go), its
// reader of whole DIEs (dies.go: types, struct members, function scopes
// and the units its index leaves, as debug/dwarf's Entry and Type values),
// location lists and expressions (datatype) and call frame information
// (symbolize/unwind). Still read with debug/dwarf: datatype's types in
// type units (found by signature), and elfsym's fallback for files the
// fast decoder does not handle (relocatable objects, type units, dwz).
package dwarfbuf

import "encoding/binary"

// Reader is a cursor over B: any read past the end sets Err and returns
// zero, so malformed input ends a parse instead of panicking. Integers are
// read in Order, little-endian when it is nil.
type Reader struct {
	B     []byte
	Pos   int
	Err   bool
	Order binary.ByteOrder
}

func (r *Reader) order() binary.ByteOrder {
	if r.Order == nil {
		return binary.LittleEndian
	}
	return r.Order
}

// Len is the number of bytes left to read.
func (r *Reader) Len() int { return max(len(r.B)-r.Pos, 0) }

// Skip moves past n bytes, setting Err (and moving nowhere) if there are
// fewer.
func (r *Reader) Skip(n int) {
	if r.Need(n) {
		r.Pos += n
	}
}

// CStr reads a NUL-terminated string (without the NUL).
func (r *Reader) CStr() string {
	if r.Err {
		return ""
	}
	for i := r.Pos; i < len(r.B); i++ {
		if r.B[i] == 0 {
			s := string(r.B[r.Pos:i])
			r.Pos = i + 1
			return s
		}
	}
	r.Err = true
	return ""
}

// SkipCStr moves past a NUL-terminated string without copying it.
func (r *Reader) SkipCStr() {
	if r.Err {
		return
	}
	for i := r.Pos; i < len(r.B); i++ {
		if r.B[i] == 0 {
			r.Pos = i + 1
			return
		}
	}
	r.Err = true
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

// U16 reads a uint16.
func (r *Reader) U16() uint16 {
	if !r.Need(2) {
		return 0
	}
	v := r.order().Uint16(r.B[r.Pos:])
	r.Pos += 2
	return v
}

// U32 reads a uint32.
func (r *Reader) U32() uint32 {
	if !r.Need(4) {
		return 0
	}
	v := r.order().Uint32(r.B[r.Pos:])
	r.Pos += 4
	return v
}

// U64 reads a uint64.
func (r *Reader) U64() uint64 {
	if !r.Need(8) {
		return 0
	}
	v := r.order().Uint64(r.B[r.Pos:])
	r.Pos += 8
	return v
}

// Uint reads an unsigned number of n bytes (1, 2, 3, 4 or 8); any other
// n sets Err.
func (r *Reader) Uint(n int) uint64 {
	switch n {
	case 1:
		return uint64(r.U8())
	case 2:
		return uint64(r.U16())
	case 4:
		return uint64(r.U32())
	case 8:
		return r.U64()
	case 3:
		if !r.Need(3) {
			return 0
		}
		b := r.B[r.Pos : r.Pos+3]
		r.Pos += 3
		if r.order() == binary.ByteOrder(binary.LittleEndian) {
			return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16
		}
		return uint64(b[2]) | uint64(b[1])<<8 | uint64(b[0])<<16
	}
	r.Err = true
	return 0
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
