package datatype

import (
	"encoding/binary"
	"fmt"
)

// location is the decoded form of a simple DWARF location expression: the
// only shapes data-type attribution trusts (a register, a register plus
// offset, the frame base plus offset, or a fixed address).
type location struct {
	kind locKind
	reg  int   // DWARF register number for locReg, locBreg
	off  int64 // offset for locBreg, locFbreg
	addr uint64
}

type locKind uint8

const (
	locNone  locKind = iota // absent, or not a simple expression
	locReg                  // DW_OP_regN: the value is in register N
	locBreg                 // DW_OP_bregN off: the object is at reg N + off
	locFbreg                // DW_OP_fbreg off: the object is at frame base + off
	locAddr                 // DW_OP_addr / DW_OP_addrx: the object is at a fixed address
	locCFA                  // DW_OP_call_frame_cfa (frame bases only)
)

func (l location) String() string {
	switch l.kind {
	case locReg:
		return "reg " + dwarfRegName(l.reg)
	case locBreg:
		return fmt.Sprintf("%d(%s)", l.off, dwarfRegName(l.reg))
	case locFbreg:
		return fmt.Sprintf("fbreg %d", l.off)
	case locAddr:
		return fmt.Sprintf("addr %#x", l.addr)
	case locCFA:
		return "CFA"
	}
	return "complex"
}

// DWARF expression opcodes used here.
const (
	opAddr         = 0x03
	opReg0         = 0x50
	opReg31        = 0x6f
	opBreg0        = 0x70
	opBreg31       = 0x8f
	opRegx         = 0x90
	opFbreg        = 0x91
	opBregx        = 0x92
	opCallFrameCFA = 0x9c
	opAddrx        = 0xa1
	opGNUAddrIndex = 0xfb
)

// decodeExpr decodes a one-operation location expression. Anything longer
// (pieces, stack_value, entry_value, arithmetic) is locNone: the engine only
// attributes what it can state with certainty. addrx resolves DW_OP_addrx.
func decodeExpr(b []byte, addrx func(uint64) (uint64, bool)) location {
	if len(b) == 0 {
		return location{}
	}
	r := reader{b: b}
	op := r.u8()
	var l location
	switch {
	case op >= opReg0 && op <= opReg31:
		l = location{kind: locReg, reg: int(op - opReg0)}
	case op == opRegx:
		l = location{kind: locReg, reg: int(r.uleb())}
	case op >= opBreg0 && op <= opBreg31:
		l = location{kind: locBreg, reg: int(op - opBreg0), off: r.sleb()}
	case op == opBregx:
		reg := int(r.uleb())
		l = location{kind: locBreg, reg: reg, off: r.sleb()}
	case op == opFbreg:
		l = location{kind: locFbreg, off: r.sleb()}
	case op == opAddr:
		l = location{kind: locAddr, addr: r.u64()}
	case op == opAddrx || op == opGNUAddrIndex:
		a, ok := addrx(r.uleb())
		if !ok {
			return location{}
		}
		l = location{kind: locAddr, addr: a}
	case op == opCallFrameCFA:
		l = location{kind: locCFA}
	default:
		return location{}
	}
	if r.err || !r.done() {
		return location{}
	}
	return l
}

// DWARF 5 location list entry kinds (DW_LLE_*), plus GCC's view pairs.
const (
	lleEndOfList      = 0x00
	lleBaseAddressx   = 0x01
	lleStartxEndx     = 0x02
	lleStartxLength   = 0x03
	lleOffsetPair     = 0x04
	lleDefaultLoc     = 0x05
	lleBaseAddress    = 0x06
	lleStartEnd       = 0x07
	lleStartLength    = 0x08
	lleGNUViewPair    = 0x09
	maxLocListEntries = 1 << 16
)

// walkLoclists calls fn for each entry of the DWARF 5 .debug_loclists list
// at off until fn returns false. A default location is reported last as
// covering every address.
func walkLoclists(sec []byte, off uint64, base uint64, addrx func(uint64) (uint64, bool), fn func(lo, hi uint64, expr []byte) bool) {
	if off >= uint64(len(sec)) {
		return
	}
	r := reader{b: sec, pos: int(off)}
	var deflt []byte
	for i := 0; i < maxLocListEntries && !r.err; i++ {
		kind := r.u8()
		var lo, hi uint64
		switch kind {
		case lleEndOfList:
			if deflt != nil {
				fn(0, ^uint64(0), deflt)
			}
			return
		case lleBaseAddressx:
			a, ok := addrx(r.uleb())
			if !ok {
				return
			}
			base = a
			continue
		case lleBaseAddress:
			base = r.u64()
			continue
		case lleGNUViewPair:
			r.uleb()
			r.uleb()
			continue
		case lleStartxEndx:
			a, ok1 := addrx(r.uleb())
			b, ok2 := addrx(r.uleb())
			if !ok1 || !ok2 {
				return
			}
			lo, hi = a, b
		case lleStartxLength:
			a, ok := addrx(r.uleb())
			if !ok {
				return
			}
			lo = a
			hi = a + r.uleb()
		case lleOffsetPair:
			lo = base + r.uleb()
			hi = base + r.uleb()
		case lleDefaultLoc:
			n := r.uleb()
			deflt = r.bytes(n)
			continue
		case lleStartEnd:
			lo = r.u64()
			hi = r.u64()
		case lleStartLength:
			lo = r.u64()
			hi = lo + r.uleb()
		default:
			return // unknown entry kind: the rest cannot be parsed
		}
		expr := r.bytes(r.uleb())
		if r.err || !fn(lo, hi, expr) {
			return
		}
	}
}

// walkLoc calls fn for each entry of the DWARF 2-4 .debug_loc list at off
// until fn returns false.
func walkLoc(sec []byte, off uint64, base uint64, fn func(lo, hi uint64, expr []byte) bool) {
	if off >= uint64(len(sec)) {
		return
	}
	r := reader{b: sec, pos: int(off)}
	for i := 0; i < maxLocListEntries && !r.err; i++ {
		lo, hi := r.u64(), r.u64()
		if lo == 0 && hi == 0 {
			return
		}
		if lo == ^uint64(0) { // base address selection entry
			base = hi
			continue
		}
		expr := r.bytes(uint64(r.u16()))
		if r.err || !fn(base+lo, base+hi, expr) {
			return
		}
	}
}

// reader is a bounds-checked little-endian cursor over DWARF section data:
// any read past the end sets err and returns zero, so malformed input ends a
// parse instead of panicking.
type reader struct {
	b   []byte
	pos int
	err bool
}

func (r *reader) done() bool { return r.pos >= len(r.b) }

func (r *reader) need(n int) bool {
	if r.err || n < 0 || r.pos+n > len(r.b) || r.pos+n < r.pos {
		r.err = true
		return false
	}
	return true
}

func (r *reader) u8() byte {
	if !r.need(1) {
		return 0
	}
	v := r.b[r.pos]
	r.pos++
	return v
}

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.pos:])
	r.pos += 2
	return v
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.pos:])
	r.pos += 4
	return v
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.pos:])
	r.pos += 8
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) || !r.need(int(n)) {
		r.err = true
		return nil
	}
	v := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return v
}

func (r *reader) uleb() uint64 {
	var v uint64
	var shift uint
	for {
		c := r.u8()
		if r.err {
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

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	var c byte
	for {
		c = r.u8()
		if r.err {
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
