package datatype

import (
	"fmt"

	"viewer/symbolize/dwarfbuf"
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

func (l location) String() string { return l.format(dwarfRegName) }

// format is String with the architecture's register names.
func (l location) format(regName func(int) string) string {
	switch l.kind {
	case locReg:
		return "reg " + regName(l.reg)
	case locBreg:
		return fmt.Sprintf("%d(%s)", l.off, regName(l.reg))
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
	opPlusUconst   = 0x23
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
	r := reader{B: b}
	op := r.U8()
	var l location
	switch {
	case op >= opReg0 && op <= opReg31:
		l = location{kind: locReg, reg: int(op - opReg0)}
	case op == opRegx:
		l = location{kind: locReg, reg: int(r.Uleb())}
	case op >= opBreg0 && op <= opBreg31:
		l = location{kind: locBreg, reg: int(op - opBreg0), off: r.Sleb()}
	case op == opBregx:
		reg := int(r.Uleb())
		l = location{kind: locBreg, reg: reg, off: r.Sleb()}
	case op == opFbreg:
		l = location{kind: locFbreg, off: r.Sleb()}
	case op == opAddr:
		l = location{kind: locAddr, addr: r.U64()}
	case op == opAddrx || op == opGNUAddrIndex:
		a, ok := addrx(r.Uleb())
		if !ok {
			return location{}
		}
		l = location{kind: locAddr, addr: a}
	case op == opCallFrameCFA:
		l = location{kind: locCFA}
	default:
		return location{}
	}
	if r.Err || !r.Done() {
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
	r := reader{B: sec, Pos: int(off)}
	var deflt []byte
	for i := 0; i < maxLocListEntries && !r.Err; i++ {
		kind := r.U8()
		var lo, hi uint64
		switch kind {
		case lleEndOfList:
			if deflt != nil {
				fn(0, ^uint64(0), deflt)
			}
			return
		case lleBaseAddressx:
			a, ok := addrx(r.Uleb())
			if !ok {
				return
			}
			base = a
			continue
		case lleBaseAddress:
			base = r.U64()
			continue
		case lleGNUViewPair:
			r.Uleb()
			r.Uleb()
			continue
		case lleStartxEndx:
			a, ok1 := addrx(r.Uleb())
			b, ok2 := addrx(r.Uleb())
			if !ok1 || !ok2 {
				return
			}
			lo, hi = a, b
		case lleStartxLength:
			a, ok := addrx(r.Uleb())
			if !ok {
				return
			}
			lo = a
			hi = a + r.Uleb()
		case lleOffsetPair:
			lo = base + r.Uleb()
			hi = base + r.Uleb()
		case lleDefaultLoc:
			n := r.Uleb()
			deflt = r.Bytes(n)
			continue
		case lleStartEnd:
			lo = r.U64()
			hi = r.U64()
		case lleStartLength:
			lo = r.U64()
			hi = lo + r.Uleb()
		default:
			return // unknown entry kind: the rest cannot be parsed
		}
		expr := r.Bytes(r.Uleb())
		if r.Err || !fn(lo, hi, expr) {
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
	r := reader{B: sec, Pos: int(off)}
	for i := 0; i < maxLocListEntries && !r.Err; i++ {
		lo, hi := r.U64(), r.U64()
		if lo == 0 && hi == 0 {
			return
		}
		if lo == ^uint64(0) { // base address selection entry
			base = hi
			continue
		}
		expr := r.Bytes(uint64(r.U16()))
		if r.Err || !fn(base+lo, base+hi, expr) {
			return
		}
	}
}

// reader is the shared DWARF cursor (symbolize/dwarfbuf).
type reader = dwarfbuf.Reader
