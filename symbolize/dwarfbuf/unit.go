package dwarfbuf

import (
	"encoding/binary"
	"fmt"
)

// Unit is the header of one unit of .debug_info: where it lies, where its
// first DIE starts, its type, its abbreviation table and the encoding of
// its values.
type Unit struct {
	Off, End  uint64 // extent in .debug_info, the header included
	DIEOff    uint64 // offset of its first DIE, after the header
	Type      uint8  // DW_UT_*; DW_UT_compile (1) before DWARF 5
	AbbrevOff uint64 // its abbreviation table in .debug_abbrev
	Encoding
}

// The unit types of DWARF 5 (DW_UT_*).
const (
	UnitCompile      = 1
	UnitType         = 2
	UnitPartial      = 3
	UnitSkeleton     = 4
	UnitSplitCompile = 5
	UnitSplitType    = 6
)

// ReadUnit reads the header of the unit at off of .debug_info. info holds
// at least the header (a prefix of a section still being inflated will
// do); size is the section's whole size, which the unit must fit in. A
// version other than 2 to 5 or a header cut short is an error; an unknown
// unit type or address size is left to the caller to judge.
func ReadUnit(info []byte, off, size uint64, order binary.ByteOrder) (Unit, error) {
	if off >= uint64(len(info)) {
		return Unit{}, fmt.Errorf(".debug_info: unit offset %#x out of range", off)
	}
	r := Reader{B: info[off:], Order: order}
	u := Unit{Off: off}
	length := uint64(r.U32())
	start := off + 4
	if length == 0xffffffff {
		u.Dwarf64 = true
		length = r.U64()
		start = off + 12
	}
	u.End = start + length
	if r.Err || u.End > size || u.End < start {
		return Unit{}, fmt.Errorf(".debug_info: unit at %#x runs past the section", off)
	}
	u.Version = r.U16()
	readOff := func() uint64 { return r.Uint(u.OffsetSize()) }
	switch {
	case u.Version >= 2 && u.Version <= 4:
		u.AbbrevOff = readOff()
		u.AddrSize = r.U8()
		u.Type = UnitCompile
	case u.Version == 5:
		u.Type = r.U8()
		u.AddrSize = r.U8()
		u.AbbrevOff = readOff()
		switch u.Type {
		case UnitSkeleton, UnitSplitCompile:
			r.U64() // dwo_id
		case UnitType, UnitSplitType:
			r.U64()   // type_signature
			readOff() // type_offset
		}
	default:
		return Unit{}, fmt.Errorf(".debug_info: unit at %#x has version %d", off, u.Version)
	}
	if r.Err {
		return Unit{}, fmt.Errorf(".debug_info: bad unit header at %#x", off)
	}
	u.DIEOff = off + uint64(r.Pos)
	return u, nil
}
