package unwind

import (
	"errors"
	"fmt"
)

// errExpr wraps why a DWARF expression could not be evaluated.
var errExpr = errors.New("DWARF expression")

// maxExprStack bounds an expression's stack; CFI expressions use a handful.
const maxExprStack = 64

// eval evaluates a DWARF location expression of call frame information:
// the stack-machine subset compilers and glibc emit there (PLT stubs'
// CFA, signal frames' saved registers). push holds values pushed first
// (the CFA, for register rules); read fetches memory from the stack copy.
func eval(expr []byte, regs *Regs, read func(uint64) (uint64, bool), push ...uint64) (uint64, error) {
	st := make([]uint64, 0, 8)
	st = append(st, push...)
	r := reader{B: expr}
	pop := func() (uint64, bool) {
		if len(st) == 0 {
			return 0, false
		}
		v := st[len(st)-1]
		st = st[:len(st)-1]
		return v, true
	}
	for !r.Done() {
		op := r.U8()
		if len(st) > maxExprStack {
			return 0, fmt.Errorf("%w: stack overflow", errExpr)
		}
		switch {
		case op >= 0x30 && op <= 0x4f: // lit0..lit31
			st = append(st, uint64(op-0x30))
			continue
		case op >= 0x70 && op <= 0x8f: // breg0..breg31
			reg := int(op - 0x70)
			off := r.Sleb()
			if !regs.has(reg) {
				return 0, fmt.Errorf("%w: register %d unknown", errExpr, reg)
			}
			st = append(st, regs.V[reg]+uint64(off))
			continue
		}
		switch op {
		case 0x08: // const1u
			st = append(st, uint64(r.U8()))
		case 0x09: // const1s
			st = append(st, uint64(int64(int8(r.U8()))))
		case 0x0a: // const2u
			st = append(st, uint64(r.U16()))
		case 0x0b: // const2s
			st = append(st, uint64(int64(int16(r.U16()))))
		case 0x0c: // const4u
			st = append(st, uint64(r.U32()))
		case 0x0d: // const4s
			st = append(st, uint64(int64(int32(r.U32()))))
		case 0x0e, 0x0f: // const8u, const8s
			st = append(st, r.U64())
		case 0x10: // constu
			st = append(st, r.Uleb())
		case 0x11: // consts
			st = append(st, uint64(r.Sleb()))
		case 0x12: // dup
			v, ok := pop()
			if !ok {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st = append(st, v, v)
		case 0x13: // drop
			if _, ok := pop(); !ok {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
		case 0x14: // over
			if len(st) < 2 {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st = append(st, st[len(st)-2])
		case 0x16: // swap
			if len(st) < 2 {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st[len(st)-1], st[len(st)-2] = st[len(st)-2], st[len(st)-1]
		case 0x06: // deref
			a, ok := pop()
			if !ok {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			v, ok := read(a)
			if !ok {
				return 0, ErrStackEnd
			}
			st = append(st, v)
		case 0x1f: // neg
			v, ok := pop()
			if !ok {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st = append(st, -v)
		case 0x20: // not
			v, ok := pop()
			if !ok {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st = append(st, ^v)
		case 0x23: // plus_uconst
			v, ok := pop()
			if !ok {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st = append(st, v+r.Uleb())
		case 0x1a, 0x1c, 0x1e, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e:
			b, ok1 := pop()
			a, ok2 := pop()
			if !ok1 || !ok2 {
				return 0, fmt.Errorf("%w: stack underflow", errExpr)
			}
			st = append(st, binop(op, a, b))
		case 0x96: // nop
		default:
			return 0, fmt.Errorf("%w: op 0x%02x not supported", errExpr, op)
		}
		if r.Err {
			return 0, fmt.Errorf("%w: truncated", errExpr)
		}
	}
	v, ok := pop()
	if !ok {
		return 0, fmt.Errorf("%w: empty", errExpr)
	}
	return v, nil
}

func binop(op byte, a, b uint64) uint64 {
	bit := func(c bool) uint64 {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case 0x1a: // and
		return a & b
	case 0x1c: // minus
		return a - b
	case 0x1e: // mul
		return a * b
	case 0x21: // or
		return a | b
	case 0x22: // plus
		return a + b
	case 0x24: // shl
		if b >= 64 {
			return 0
		}
		return a << b
	case 0x25: // shr
		if b >= 64 {
			return 0
		}
		return a >> b
	case 0x26: // shra
		if b >= 64 {
			b = 63
		}
		return uint64(int64(a) >> b)
	case 0x27: // xor
		return a ^ b
	case 0x29: // eq
		return bit(a == b)
	case 0x2a: // ge
		return bit(int64(a) >= int64(b))
	case 0x2b: // gt
		return bit(int64(a) > int64(b))
	case 0x2c: // le
		return bit(int64(a) <= int64(b))
	case 0x2d: // lt
		return bit(int64(a) < int64(b))
	case 0x2e: // ne
		return bit(a != b)
	}
	return 0
}
