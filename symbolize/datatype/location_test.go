package datatype

import (
	"encoding/binary"
	"reflect"
	"testing"
)

type entry struct {
	lo, hi uint64
	loc    location
}

func collect(walk func(fn func(lo, hi uint64, expr []byte) bool)) []entry {
	var out []entry
	walk(func(lo, hi uint64, expr []byte) bool {
		out = append(out, entry{lo, hi, decodeExpr(expr, func(i uint64) (uint64, bool) { return 0x9000 + i*8, true })})
		return true
	})
	return out
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// TestLoclists decodes a hand-built DWARF 5 list with every entry kind GCC
// and clang emit, including GCC's view pairs.
func TestLoclists(t *testing.T) {
	sec := cat(
		[]byte{0xff, 0xff}, // junk before the list: off points past it
		[]byte{lleGNUViewPair, 0x02, 0x00},
		[]byte{lleBaseAddress}, u64(0x1000),
		[]byte{lleOffsetPair, 0x10, 0x20, 1, opReg0 + 5},                    // [0x1010,0x1020) rdi
		[]byte{lleOffsetPair, 0x20, 0x30, 2, opBreg0 + 7, 0x78},             // rsp-8
		[]byte{lleStartLength}, u64(0x2000), []byte{0x08, 2, opFbreg, 0x50}, // [0x2000,0x2008) fbreg -48
		[]byte{lleStartEnd}, u64(0x3000), u64(0x3004), []byte{1, 0x9c}, // CFA
		[]byte{lleBaseAddressx, 0x01},                                  // base = 0x9008
		[]byte{lleOffsetPair, 0x00, 0x04, 2, opAddrx, 0x02},            // addr 0x9010
		[]byte{lleStartxLength, 0x03, 0x04, 3, opReg0 + 1, 0x9f, 0x00}, // not simple
		[]byte{lleDefaultLoc, 1, opReg0 + 3},
		[]byte{lleEndOfList},
	)
	got := collect(func(fn func(lo, hi uint64, expr []byte) bool) {
		walkLoclists(sec, 2, 0, func(i uint64) (uint64, bool) { return 0x9000 + i*8, true }, fn)
	})
	want := []entry{
		{0x1010, 0x1020, location{kind: locReg, reg: dwRDI}},
		{0x1020, 0x1030, location{kind: locBreg, reg: dwRSP, off: -8}},
		{0x2000, 0x2008, location{kind: locFbreg, off: -48}},
		{0x3000, 0x3004, location{kind: locCFA}},
		{0x9008, 0x900c, location{kind: locAddr, addr: 0x9010}},
		{0x9018, 0x901c, location{}},
		{0, ^uint64(0), location{kind: locReg, reg: dwRBX}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walkLoclists:\n got %+v\nwant %+v", got, want)
	}
	// Truncated input ends the walk without a panic.
	for i := range sec {
		collect(func(fn func(lo, hi uint64, expr []byte) bool) {
			walkLoclists(sec[:i], 2, 0, func(uint64) (uint64, bool) { return 0, true }, fn)
		})
	}
}

// TestLoc decodes a hand-built DWARF 4 .debug_loc list: entries relative to
// the unit's base, a base address selection entry, the end marker.
func TestLoc(t *testing.T) {
	sec := cat(
		u64(0x10), u64(0x20), []byte{1, 0}, []byte{opReg0 + 4},
		u64(^uint64(0)), u64(0x5000),
		u64(0x0), u64(0x8), []byte{2, 0}, []byte{opFbreg, 0x40},
		u64(0), u64(0),
		u64(0x0), u64(0x8), []byte{1, 0}, []byte{opReg0}, // after the end: not read
	)
	got := collect(func(fn func(lo, hi uint64, expr []byte) bool) { walkLoc(sec, 0, 0x1000, fn) })
	want := []entry{
		{0x1010, 0x1020, location{kind: locReg, reg: dwRSI}},
		{0x5000, 0x5008, location{kind: locFbreg, off: -64}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walkLoc:\n got %+v\nwant %+v", got, want)
	}
	for i := range sec {
		collect(func(fn func(lo, hi uint64, expr []byte) bool) { walkLoc(sec[:i], 0, 0x1000, fn) })
	}
}
