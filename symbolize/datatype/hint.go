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
	bits  *bitHint // nil: nothing known about the bits
}

// bitHint is the bit range an instruction uses, found only when a bitfield
// is actually at the accessed offset: looking ahead costs instruction
// decoding that most accesses do not need.
type bitHint struct {
	done         bool
	start, width int64 // start -1 if unknown; width 0 if unknown
	b            *Binary
	pc           uint64
	inst         x86asm.Inst
}

// noHint is a hint that says nothing.
var noHint = accessHint{}

// bitRange returns the first bit used (relative to the accessed address,
// -1 if unknown) and the number of bits (0 if unknown).
func (h accessHint) bitRange() (start, width int64) {
	if h.bits == nil {
		return -1, 0
	}
	if !h.bits.done {
		h.bits.start, h.bits.width = h.bits.b.lookAheadBits(h.bits.pc, h.bits.inst)
		h.bits.done = true
	}
	return h.bits.start, h.bits.width
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
				h.bits = &bitHint{done: true, start: int64(bits.TrailingZeros64(m)), width: int64(bits.Len64(m) - bits.TrailingZeros64(m))}
			}
		}
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD:
		h.bits = &bitHint{b: b, pc: pc, inst: inst}
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
		in, err := x86asm.Decode(code, 64)
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
