package datatype

import (
	"debug/dwarf"
	"math/bits"

	"golang.org/x/arch/x86/x86asm"
)

// accessHint is what the instruction tells about the accessed member beyond
// its offset: the access size, whether it is a floating-point access (to
// choose among union members), and which bits of it are used (to choose
// among bitfields sharing a byte).
type accessHint struct {
	size  int64
	float bool
	bits  bitHint
}

// bitHint is the bit range an instruction uses. For loads it is found only
// when a bitfield is actually at the accessed offset, by looking ahead in
// the basic block: most accesses never need that decoding.
type bitHint struct {
	kind         bitHintKind
	start, width int64 // bitsKnown: start -1 if unknown; width 0 if unknown
	b            *Binary
	pc           uint64
	inst         x86asm.Inst // bitsLoad: the load to look ahead from
}

type bitHintKind uint8

const (
	bitsNone  bitHintKind = iota // nothing known about the bits
	bitsKnown                    // start and width hold them
	bitsLoad                     // look ahead from inst at pc when asked
)

// noHint is a hint that says nothing.
var noHint = accessHint{}

// bitRange returns the first bit used (relative to the accessed address,
// -1 if unknown) and the number of bits (0 if unknown); done is true. For a
// load it decodes ahead, so callers ask once.
func (h *accessHint) bitRange() (start, width int64, done bool) {
	switch h.bits.kind {
	case bitsKnown:
		return h.bits.start, h.bits.width, true
	case bitsLoad:
		start, width = h.bits.b.lookAheadBits(h.bits.pc, h.bits.inst)
		return start, width, true
	}
	return -1, 0, true
}

// hintFor derives the hint for inst at pc. For loads, the bits used are
// found later, if needed, by looking ahead in the basic block.
func (b *Binary) hintFor(pc uint64, inst x86asm.Inst) accessHint {
	h := accessHint{size: int64(inst.MemBytes)}
	for _, a := range inst.Args {
		if r, ok := a.(x86asm.Reg); ok && r >= x86asm.X0 && r <= x86asm.X31 {
			h.float = true
		}
	}
	switch inst.Op {
	case x86asm.TEST, x86asm.AND, x86asm.OR, x86asm.XOR, x86asm.BTS, x86asm.BTR:
		if imm, ok := inst.Args[1].(x86asm.Imm); ok {
			if m := uint64(imm); m != 0 {
				h.bits = bitHint{kind: bitsKnown, start: int64(bits.TrailingZeros64(m)), width: int64(bits.Len64(m) - bits.TrailingZeros64(m))}
			}
		}
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD:
		h.bits = bitHint{kind: bitsLoad, b: b, pc: pc, inst: inst}
	}
	return h
}

// lookAheadBits follows the register a load writes through the next
// instructions of the basic block for the shr/and that extract a bitfield.
func (b *Binary) lookAheadBits(pc uint64, inst x86asm.Inst) (start, width int64) {
	reg := anyRegOf(inst.Args[0])
	if reg < 0 {
		return -1, 0
	}
	var shift int64
	var mask uint64
	next := pc + uint64(inst.Len)
loop:
	for i := 0; i < 6; i++ {
		code := b.insnBytes(next)
		if code == nil {
			break
		}
		in, err := x86Decode(code)
		if err != nil || isBranch(in.Op) || in.Op == x86asm.CALL {
			break
		}
		next += uint64(in.Len)
		if anyRegOf(in.Args[0]) != reg {
			if anyRegOf(in.Args[1]) == reg {
				break // the loaded value moves elsewhere: stop guessing
			}
			continue
		}
		switch in.Op {
		case x86asm.SHR, x86asm.SAR:
			switch c := in.Args[1].(type) {
			case nil:
				shift++
			case x86asm.Imm:
				shift += int64(c)
			default:
				break loop
			}
			continue
		case x86asm.AND, x86asm.TEST:
			if imm, ok := in.Args[1].(x86asm.Imm); ok && mask == 0 {
				mask = uint64(imm) << uint(shift)
			}
		}
		break
	}
	switch {
	case mask != 0:
		start = int64(bits.TrailingZeros64(mask))
		return start, int64(bits.Len64(mask)) - start
	case shift > 0:
		return shift, 0
	}
	return -1, 0
}

// isFloat reports whether t is a floating-point base type.
func isFloat(t dwarf.Type) bool {
	switch strip(t).(type) {
	case *dwarf.FloatType, *dwarf.ComplexType:
		return true
	}
	return false
}
