package datatype

import (
	"debug/dwarf"
	"sort"

	"golang.org/x/arch/x86/x86asm"
)

// funcCode lists the instruction boundaries of one function range and
// which of them start a basic block, for the second phase (register
// tracking). Instructions are decoded again when a block is simulated:
// keeping decoded instructions for every function would cost far more memory.
type funcCode struct {
	pcs    []uint32 // instruction offsets from lo
	leader []bool   // leader[i]: pcs[i] starts a basic block
	lo     uint64
}

// regState says what a register holds: a pointer to typ, off bytes into it.
type regState struct {
	ok   bool
	typ  dwarf.Type
	off  int64
	desc string
}

// maxTrackedFunc bounds the size of functions the second phase decodes.
const maxTrackedFunc = 1 << 18

// funcCodeAt decodes [lo, hi) once and caches its block structure.
func (b *Binary) funcCodeAt(lo, hi uint64) *funcCode {
	if c, ok := b.code[lo]; ok {
		return c
	}
	c := &funcCode{lo: lo}
	b.code[lo] = c
	if hi-lo > maxTrackedFunc {
		return c
	}
	if b.arm64 {
		b.a64FuncCode(c, lo, hi)
		return c
	}
	targets := map[uint64]bool{}
	afterBranch := true
	for pc := lo; pc < hi; {
		code := b.insnBytes(pc)
		if code == nil {
			break
		}
		inst, err := x86Decode(code)
		if err != nil || inst.Len == 0 {
			pc++
			afterBranch = true
			continue
		}
		c.pcs = append(c.pcs, uint32(pc-lo))
		c.leader = append(c.leader, afterBranch)
		afterBranch = isBranch(inst.Op)
		if afterBranch {
			if rel, ok := inst.Args[0].(x86asm.Rel); ok {
				targets[uint64(int64(pc)+int64(inst.Len)+int64(rel))] = true
			}
		}
		pc += uint64(inst.Len)
	}
	for i, off := range c.pcs {
		if targets[lo+uint64(off)] {
			c.leader[i] = true
		}
	}
	return c
}

func isBranch(op x86asm.Op) bool {
	switch op {
	case x86asm.JMP, x86asm.RET, x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JCXZ, x86asm.JE,
		x86asm.JECXZ, x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP,
		x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JRCXZ, x86asm.JS, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.UD2:
		return true
	}
	return false
}

// track is the second phase: it simulates the basic block containing pc up
// to pc, following pointers through mov, lea, add/sub of immediates, loads
// of pointer members and calls' return values, and returns what register
// reg holds at pc.
func (b *Binary) track(f funcRange, fs *funcScope, pc uint64, reg int) regState {
	c := b.funcCodeAt(f.lo, f.hi)
	start, k, ok := c.block(pc)
	if !ok {
		return regState{}
	}
	var st [numGPR]regState
	for i := start; i < k; i++ {
		ipc := f.lo + uint64(c.pcs[i])
		inst, err := x86Decode(b.insnBytes(ipc))
		if err != nil {
			return regState{}
		}
		b.step(fs, ipc, inst, &st)
	}
	if reg < 0 || reg >= numGPR {
		return regState{}
	}
	return st[reg]
}

// block returns the index of the instruction at pc and of the first
// instruction of its basic block (ok false when pc is not an instruction
// boundary of the function).
func (c *funcCode) block(pc uint64) (start, k int, ok bool) {
	if pc < c.lo {
		return 0, 0, false
	}
	k = sort.Search(len(c.pcs), func(i int) bool { return uint64(c.pcs[i]) >= pc-c.lo })
	if k >= len(c.pcs) || uint64(c.pcs[k]) != pc-c.lo {
		return 0, 0, false
	}
	start = k
	for start > 0 && !c.leader[start] {
		start--
	}
	return start, k, true
}

// regOf returns the DWARF number of a 64-bit general-purpose register
// argument, or -1 (narrower registers do not hold pointers).
func regOf(a x86asm.Arg) int {
	r, ok := a.(x86asm.Reg)
	if !ok || r < x86asm.RAX || r > x86asm.R15 {
		return -1
	}
	return dwarfReg(r)
}

// anyRegOf returns the DWARF number of the general-purpose register that a
// register argument of any width is part of, or -1.
func anyRegOf(a x86asm.Arg) int {
	r, ok := a.(x86asm.Reg)
	if !ok {
		return -1
	}
	if n := dwarfReg(r); n >= 0 && n < numGPR {
		return n
	}
	return -1
}

// step applies one instruction to the register states.
func (b *Binary) step(fs *funcScope, pc uint64, inst x86asm.Inst, st *[numGPR]regState) {
	dst := regOf(inst.Args[0])
	switch inst.Op {
	case x86asm.MOV:
		if dst < 0 {
			break
		}
		if src := regOf(inst.Args[1]); src >= 0 {
			if st[src].ok {
				st[dst] = st[src]
			} else {
				st[dst] = b.regFromDWARF(fs, pc, src)
			}
			return
		}
		if m, ok := inst.Args[1].(x86asm.Mem); ok {
			if dwarfReg(m.Base) == dwRIP && m.Index == 0 && inst.MemBytes == 8 {
				// A GOT load puts the address of a global in dst.
				if slot, ok := b.got[pc+uint64(inst.Len)+uint64(m.Disp)]; ok && slot.target != 0 {
					a := b.global(slot.target, noHint, 0)
					if a.Kind != KindUnknown && a.typ != nil {
						st[dst] = regState{ok: true, typ: a.typ, off: a.Offset, desc: "&" + a.Var + " (GOT)"}
						return
					}
				}
			}
			st[dst] = b.loadedPointer(fs, pc, inst, m, st)
			return
		}
	case x86asm.LEA:
		if dst < 0 {
			break
		}
		if m, ok := inst.Args[1].(x86asm.Mem); ok && m.Index == 0 {
			if dwarfReg(m.Base) == dwRIP {
				// The address of a global (lea table(%rip), an array
				// indexed next).
				a := b.global(pc+uint64(inst.Len)+uint64(m.Disp), noHint, 0)
				if a.Kind != KindUnknown && a.typ != nil {
					st[dst] = regState{ok: true, typ: a.typ, off: a.Offset, desc: "&" + a.Var}
					return
				}
			}
			if base := dwarfReg(m.Base); base >= 0 && base < numGPR {
				if st[base].ok {
					s := st[base]
					s.off += m.Disp
					st[dst] = s
					return
				}
				a := b.fromVariables(fs, pc, base, memOf(m), noHint)
				if a.Kind != KindUnknown && a.typ != nil {
					st[dst] = regState{ok: true, typ: a.typ, off: a.Offset, desc: "&" + a.Var}
					return
				}
			}
		}
	case x86asm.ADD, x86asm.SUB:
		if dst < 0 {
			break
		}
		if imm, ok := inst.Args[1].(x86asm.Imm); ok && st[dst].ok {
			if inst.Op == x86asm.ADD {
				st[dst].off += int64(imm)
			} else {
				st[dst].off -= int64(imm)
			}
			return
		}
	case x86asm.CALL:
		for _, r := range []int{dwRAX, dwRCX, dwRDX, dwRSI, dwRDI, 8, 9, 10, dwR11} {
			st[r] = regState{}
		}
		if rel, ok := inst.Args[0].(x86asm.Rel); ok {
			st[dwRAX] = b.returnedPointer(uint64(int64(pc) + int64(inst.Len) + int64(rel)))
		}
		return
	case x86asm.XCHG:
		r0, r1 := regOf(inst.Args[0]), regOf(inst.Args[1])
		if r0 >= 0 && r1 >= 0 {
			st[r0], st[r1] = st[r1], st[r0]
			return
		}
	case x86asm.CDQE, x86asm.CWDE, x86asm.CBW:
		st[dwRAX] = regState{}
	case x86asm.CQO, x86asm.CDQ, x86asm.CWD:
		st[dwRDX] = regState{}
	case x86asm.MUL, x86asm.DIV, x86asm.IDIV, x86asm.RDTSC, x86asm.RDTSCP, x86asm.CPUID, x86asm.SYSCALL,
		x86asm.CMPXCHG, x86asm.CMPXCHG8B, x86asm.CMPXCHG16B:
		st[dwRAX], st[dwRDX], st[dwRCX], st[dwR11] = regState{}, regState{}, regState{}, regState{}
	case x86asm.IMUL:
		if inst.Args[1] == nil {
			st[dwRAX], st[dwRDX] = regState{}, regState{}
		}
	case x86asm.CMP, x86asm.TEST, x86asm.PUSH:
		return
	}
	// Any other write to a register loses what it held.
	if r := anyRegOf(inst.Args[0]); r >= 0 {
		st[r] = regState{}
	}
	if inst.Op == x86asm.XCHG || inst.Op == x86asm.XADD {
		if r := anyRegOf(inst.Args[1]); r >= 0 {
			st[r] = regState{}
		}
	}
}

// returnedPointer is what a call to the function at target leaves in the
// return register: a pointer to its return type's pointee, when it
// returns a pointer.
func (b *Binary) returnedPointer(target uint64) regState {
	b.ensurePC(target) // the callee's unit, when indexed lazily
	die, ok := b.funcByEnt[target]
	if !ok {
		return regState{}
	}
	e, err := b.entry(die)
	if err != nil {
		return regState{}
	}
	toff, ok := b.attr(e, dwarf.AttrType).(dwarf.Offset)
	if !ok {
		return regState{}
	}
	t, err := b.typ(toff)
	if err != nil {
		return regState{}
	}
	p, ok := pointee(t)
	if !ok {
		return regState{}
	}
	name, _ := b.attr(e, dwarf.AttrName).(string)
	return regState{ok: true, typ: p, desc: "return value of " + name + "()"}
}

// regFromDWARF is what DWARF says register reg holds at pc, if it is a
// pointer variable.
func (b *Binary) regFromDWARF(fs *funcScope, pc uint64, reg int) regState {
	for _, s := range fs.scopesAt(pc) {
		for i := range s.vars {
			v := &s.vars[i]
			l := b.varLocation(fs.unit, v, pc)
			if l.kind != locReg || l.reg != reg {
				continue
			}
			t, err := b.typ(v.typ)
			if err != nil {
				continue
			}
			if p, ok := pointee(t); ok && typeSize(p) > 0 {
				return regState{ok: true, typ: p, desc: v.name}
			}
		}
	}
	return regState{}
}

// loadedPointer is the register state after loading from memory m: a
// pointer to the pointee when the loaded member is a pointer.
func (b *Binary) loadedPointer(fs *funcScope, pc uint64, inst x86asm.Inst, m x86asm.Mem, st *[numGPR]regState) regState {
	if inst.MemBytes != 8 {
		return regState{}
	}
	var a Access
	h := accessHint{size: 8}
	base := dwarfReg(m.Base)
	switch {
	case base == dwRIP:
		a = b.global(pc+uint64(inst.Len)+uint64(m.Disp), h, indexScale(m))
	case base >= 0 && base < numGPR && st[base].ok:
		a = b.place(st[base].typ, st[base].off+m.Disp, h, indexScale(m), st[base].desc, KindMember)
	case base >= 0 && base < numGPR:
		a = b.fromVariables(fs, pc, base, memOf(m), h)
	default:
		return regState{}
	}
	if a.Kind == KindUnknown || a.mtyp == nil || a.MemberOffset != a.Offset {
		return regState{}
	}
	p, ok := pointee(a.mtyp)
	if !ok || typeSize(p) <= 0 {
		return regState{}
	}
	desc := a.Var
	if a.Member != "" {
		desc += "->" + a.Member
	}
	return regState{ok: true, typ: p, desc: desc}
}
