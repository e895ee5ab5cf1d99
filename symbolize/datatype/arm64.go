package datatype

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
)

// AArch64 attribution. The DWARF numbers x0–x30 as 0–30 and sp as 31
// (AAPCS64 DWARF supplement); x29 is the frame pointer. A memory operand
// is a base register plus an immediate (offset, pre-index, post-index) or
// an index register, or a PC-relative literal; globals are reached through
// adrp (the 4 KiB page) then an add or a load with the low 12 bits, which
// is followed back through the basic block. Register tracking (the second
// phase, a64Track) follows pointers through mov, add/sub of immediates,
// loads of pointer members and calls' return values, as on x86-64.

const (
	dwA64FP = 29
	dwA64SP = 31
)

// regName is the architecture's name for DWARF register n.
func (b *Binary) regName(n int) string {
	if !b.arm64 {
		return dwarfRegName(n)
	}
	switch {
	case n >= 0 && n <= 30:
		return "x" + strconv.Itoa(n)
	case n == dwA64SP:
		return "sp"
	}
	return "reg" + strconv.Itoa(n)
}

// frameReg reports whether a frame-base-relative variable can be addressed
// through DWARF register n (the stack or frame pointer).
func (b *Binary) frameReg(n int) bool {
	if b.arm64 {
		return n == dwA64SP || n == dwA64FP
	}
	return n == dwRSP || n == dwRBP
}

// a64Reg is the DWARF number of a general-purpose register or sp of any
// width (w3 is x3), or -1.
func a64Reg(a arm64asm.Arg) int {
	switch r := a.(type) {
	case arm64asm.Reg:
		switch {
		case r >= arm64asm.X0 && r <= arm64asm.X30:
			return int(r - arm64asm.X0)
		case r >= arm64asm.W0 && r <= arm64asm.W30:
			return int(r - arm64asm.W0)
		}
	case arm64asm.RegSP:
		rr := arm64asm.Reg(r)
		switch {
		case rr == arm64asm.SP || rr == arm64asm.WSP:
			return dwA64SP
		case rr >= arm64asm.X0 && rr <= arm64asm.X30:
			return int(rr - arm64asm.X0)
		case rr >= arm64asm.W0 && rr <= arm64asm.W30:
			return int(rr - arm64asm.W0)
		}
	}
	return -1
}

// a64Mem is an AArch64 memory operand.
type a64Mem struct {
	base  int // DWARF register; -1 for a PC-relative literal
	disp  int64
	scale int64 // index register's scale; 0 without one
	mode  arm64asm.AddrMode
	lit   uint64 // a literal's address
}

// a64MemArg returns the instruction's memory operand. MemImmediate keeps
// its immediate unexported, so it is read back from its text ("[x0,#8]!").
func a64MemArg(pc uint64, inst arm64asm.Inst) (a64Mem, bool) {
	for _, arg := range inst.Args {
		switch m := arg.(type) {
		case nil:
			return a64Mem{}, false
		case arm64asm.MemImmediate:
			out := a64Mem{base: a64Reg(m.Base), mode: m.Mode}
			s := m.String()
			if i := strings.IndexByte(s, '#'); i >= 0 && m.Mode != arm64asm.AddrPostIndex {
				j := i + 1
				for j < len(s) && (s[j] == '-' || s[j] >= '0' && s[j] <= '9') {
					j++
				}
				out.disp, _ = strconv.ParseInt(s[i+1:j], 10, 64)
			}
			return out, true
		case arm64asm.MemExtend:
			return a64Mem{base: a64Reg(m.Base), scale: 1 << m.Amount, mode: arm64asm.AddrOffset}, true
		case arm64asm.PCRel:
			if isA64Load(inst.Op) { // ldr x0, <literal>
				return a64Mem{base: -1, lit: uint64(int64(pc) + int64(m))}, true
			}
		}
	}
	return a64Mem{}, false
}

// isA64Load reports loads that take a PC-relative literal.
func isA64Load(op arm64asm.Op) bool {
	switch op {
	case arm64asm.LDR, arm64asm.LDRSW, arm64asm.PRFM:
		return true
	}
	return false
}

// a64Hint is the access size (and float-ness) of a load or store, from its
// mnemonic and its first register's width.
func a64Hint(inst arm64asm.Inst) accessHint {
	name := strings.ToLower(inst.Op.String())
	h := accessHint{}
	switch {
	case strings.HasSuffix(name, "b") && !strings.HasPrefix(name, "sub"):
		h.size = 1
	case strings.HasSuffix(name, "h"):
		h.size = 2
	case strings.HasSuffix(name, "sw"):
		h.size = 4
	}
	if r, ok := inst.Args[0].(arm64asm.Reg); ok && h.size == 0 {
		switch {
		case r >= arm64asm.W0 && r <= arm64asm.WZR:
			h.size = 4
		case r >= arm64asm.X0 && r <= arm64asm.XZR:
			h.size = 8
		case r >= arm64asm.B0 && r <= arm64asm.B31:
			h.size, h.float = 1, true
		case r >= arm64asm.H0 && r <= arm64asm.H31:
			h.size, h.float = 2, true
		case r >= arm64asm.S0 && r <= arm64asm.S31:
			h.size, h.float = 4, true
		case r >= arm64asm.D0 && r <= arm64asm.D31:
			h.size, h.float = 8, true
		case r >= arm64asm.Q0 && r <= arm64asm.Q31:
			h.size, h.float = 16, true
		}
	}
	return h
}

// isA64Branch reports instructions that end a basic block.
func isA64Branch(op arm64asm.Op) bool {
	switch op {
	case arm64asm.B, arm64asm.BR, arm64asm.RET, arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ,
		arm64asm.BRK:
		return true
	}
	return false
}

// a64Target is a direct branch's or call's target.
func a64Target(pc uint64, inst arm64asm.Inst) (uint64, bool) {
	switch inst.Op {
	case arm64asm.B, arm64asm.BL, arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ:
		for _, a := range inst.Args {
			if r, ok := a.(arm64asm.PCRel); ok {
				return uint64(int64(pc) + int64(r)), true
			}
		}
	}
	return 0, false
}

// attributeARM64 is attributeInst for AArch64.
func (b *Binary) attributeARM64(pc uint64, inst arm64asm.Inst) Access {
	m, ok := a64MemArg(pc, inst)
	name := strings.ToLower(inst.Op.String())
	if !ok {
		switch inst.Op {
		case arm64asm.BL, arm64asm.BLR, arm64asm.RET:
			// A call or return touches no memory on AArch64 (the return
			// address is in x30), but its cost is the call's: like x86's.
			return Access{Type: typeStackOp, Kind: KindStackOp, Reason: name + " calls or returns"}
		}
		return Access{Type: typeUnknown, Kind: KindUnknown, Reason: name + " has no memory operand", noMem: true}
	}
	if inst.Op == arm64asm.PRFM || inst.Op == arm64asm.PRFUM {
		return unknown("%s does not access data", name)
	}
	h := a64Hint(inst)
	if m.base < 0 {
		return b.global(m.lit, h, 0)
	}
	// Prologue and epilogue: saving and restoring the frame record or
	// callee-saved registers on the stack, pushed with pre-index and popped
	// with post-index (stp x29, x30, [sp, #-32]!).
	if m.base == dwA64SP && (m.mode == arm64asm.AddrPreIndex || m.mode == arm64asm.AddrPostIndex) {
		return Access{Type: typeStackOp, Kind: KindStackOp, Reason: name + " with sp write-back saves or restores registers"}
	}
	if (inst.Op == arm64asm.STP || inst.Op == arm64asm.LDP) && (m.base == dwA64SP || m.base == dwA64FP) &&
		(a64Reg(inst.Args[0]) == dwA64FP || a64Reg(inst.Args[1]) == 30 || a64Reg(inst.Args[0]) >= 19) {
		return Access{Type: typeStackOp, Kind: KindStackOp, Reason: name + " saves or restores callee-saved registers"}
	}
	if page, ok := b.a64Page(pc, m.base); ok {
		return b.global(uint64(int64(page)+m.disp), h, m.scale)
	}
	f, hasFunc := b.funcAt(pc)
	var fs *funcScope
	if hasFunc {
		fs, _ = b.funcScope(f)
	}
	if fs == nil {
		return unknown("no DWARF function covers the address (code without debug info)")
	}
	a := b.fromVariables(fs, pc, m.base, memRef{m.disp, m.scale}, h)
	if a.Kind != KindUnknown {
		return a
	}
	if t := b.a64Track(f, fs, pc, m.base); t.ok {
		ta := b.place(t.typ, t.off+m.disp, h, m.scale, t.desc, KindMember)
		if ta.Kind != KindUnknown {
			ta.Reason = "register tracking: " + t.desc
			ta.Func = a.Func
			return ta
		}
	}
	return a
}

// a64Regs is the state of x0–x30 and sp (DWARF 0–31) while a block is
// simulated.
type a64Regs [32]regState

// a64Track is track for AArch64: it simulates pc's basic block up to pc
// and returns what register reg holds there.
func (b *Binary) a64Track(f funcRange, fs *funcScope, pc uint64, reg int) regState {
	c := b.funcCodeAt(f.lo, f.hi)
	start, k, ok := c.block(pc)
	if !ok || reg < 0 || reg >= len(a64Regs{}) {
		return regState{}
	}
	var st a64Regs
	for i := start; i < k; i++ {
		ipc := f.lo + uint64(c.pcs[i])
		inst, err := arm64asm.Decode(b.insnBytes(ipc))
		if err != nil {
			return regState{}
		}
		b.a64Step(fs, ipc, inst, &st)
	}
	return st[reg]
}

// a64Step applies one instruction to the register states.
func (b *Binary) a64Step(fs *funcScope, pc uint64, inst arm64asm.Inst, st *a64Regs) {
	dst := a64Reg(inst.Args[0])
	wide := false // a 64-bit destination: only those hold pointers
	if r, ok := inst.Args[0].(arm64asm.Reg); ok && r >= arm64asm.X0 && r <= arm64asm.X30 {
		wide = true
	} else if r, ok := inst.Args[0].(arm64asm.RegSP); ok && arm64asm.Reg(r) >= arm64asm.X0 && arm64asm.Reg(r) <= arm64asm.SP {
		wide = true
	}
	switch inst.Op {
	case arm64asm.MOV:
		if src := a64Reg(inst.Args[1]); wide && dst >= 0 && src >= 0 {
			if st[src].ok {
				st[dst] = st[src]
			} else {
				st[dst] = b.regFromDWARF(fs, pc, src)
			}
			return
		}
	case arm64asm.ADD, arm64asm.SUB:
		src := a64Reg(inst.Args[1])
		if imm, ok := a64Imm(inst.Args[2]); ok && wide && dst >= 0 && src >= 0 {
			s := st[src]
			if !s.ok {
				s = b.regFromDWARF(fs, pc, src)
			}
			if s.ok {
				if inst.Op == arm64asm.SUB {
					imm = -imm
				}
				s.off += imm
				st[dst] = s
				return
			}
		}
	case arm64asm.LDR:
		if m, ok := a64MemArg(pc, inst); ok && wide && dst >= 0 && m.base >= 0 {
			if m.mode == arm64asm.AddrPreIndex || m.mode == arm64asm.AddrPostIndex {
				st[m.base] = regState{}
			} else {
				st[dst] = b.a64LoadedPointer(fs, pc, m, st)
				return
			}
		}
	case arm64asm.BL, arm64asm.BLR:
		for r := 0; r <= 18; r++ {
			st[r] = regState{} // caller-saved
		}
		st[30] = regState{}
		if t, ok := a64Target(pc, inst); ok {
			st[0] = b.returnedPointer(t)
		}
		return
	}
	name := inst.Op.String()
	switch {
	case strings.HasPrefix(name, "ST"), strings.HasPrefix(name, "CMP"), strings.HasPrefix(name, "CMN"),
		strings.HasPrefix(name, "TST"), strings.HasPrefix(name, "PRF"), isA64Branch(inst.Op):
		return // writes no register (a store's first operand is its source)
	}
	if dst >= 0 {
		st[dst] = regState{}
	}
	if inst.Op == arm64asm.LDP || inst.Op == arm64asm.LDPSW {
		if r := a64Reg(inst.Args[1]); r >= 0 {
			st[r] = regState{}
		}
	}
	if m, ok := a64MemArg(pc, inst); ok && m.base >= 0 && (m.mode == arm64asm.AddrPreIndex || m.mode == arm64asm.AddrPostIndex) {
		st[m.base] = regState{}
	}
}

// a64LoadedPointer is the register state after an 8-byte load through m:
// a pointer to the pointee when the loaded member is a pointer.
func (b *Binary) a64LoadedPointer(fs *funcScope, pc uint64, m a64Mem, st *a64Regs) regState {
	h := accessHint{size: 8}
	var a Access
	switch {
	case st[m.base].ok:
		a = b.place(st[m.base].typ, st[m.base].off+m.disp, h, m.scale, st[m.base].desc, KindMember)
	default:
		if page, ok := b.a64Page(pc, m.base); ok {
			a = b.global(uint64(int64(page)+m.disp), h, m.scale)
		} else {
			a = b.fromVariables(fs, pc, m.base, memRef{m.disp, m.scale}, h)
		}
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

// a64Page follows reg back through pc's basic block to an adrp (and an
// add of the low bits) that set it: the address of a global.
func (b *Binary) a64Page(pc uint64, reg int) (uint64, bool) {
	f, ok := b.funcAt(pc)
	if !ok {
		return 0, false
	}
	var add int64
	cur := pc
	for n := 0; n < 16; n++ {
		prev, ok := b.prevInBlock(cur)
		if !ok {
			return 0, false
		}
		cur = prev
		code := b.insnBytes(prev)
		if code == nil || prev < f.lo {
			return 0, false
		}
		inst, err := arm64asm.Decode(code)
		if err != nil || a64Reg(inst.Args[0]) != reg {
			continue
		}
		switch inst.Op {
		case arm64asm.ADRP:
			if r, ok := inst.Args[1].(arm64asm.PCRel); ok {
				return uint64(int64(prev&^0xfff)+int64(r)) + uint64(add), true
			}
			return 0, false
		case arm64asm.ADD:
			if a64Reg(inst.Args[1]) != reg {
				return 0, false
			}
			imm, ok := a64Imm(inst.Args[2])
			if !ok {
				return 0, false
			}
			add += imm
			continue
		}
		return 0, false // reg was set by something else
	}
	return 0, false
}

// a64Imm reads an immediate operand ("#0x10", "#16, LSL #12").
func a64Imm(a arm64asm.Arg) (int64, bool) {
	if a == nil {
		return 0, false
	}
	s := a.String()
	if !strings.HasPrefix(s, "#") {
		return 0, false
	}
	s = strings.TrimPrefix(s, "#")
	shift := 0
	if i := strings.Index(s, ", LSL #"); i >= 0 {
		shift, _ = strconv.Atoi(s[i+7:])
		s = s[:i]
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, false
	}
	return v << shift, true
}

// a64FuncCode is funcCodeAt's decoding of AArch64: fixed 4-byte
// instructions, blocks ending at branches and starting at their targets.
func (b *Binary) a64FuncCode(c *funcCode, lo, hi uint64) {
	targets := map[uint64]bool{}
	afterBranch := true
	for pc := lo; pc+4 <= hi; pc += 4 {
		code := b.insnBytes(pc)
		if len(code) < 4 {
			break
		}
		c.pcs = append(c.pcs, uint32(pc-lo))
		c.leader = append(c.leader, afterBranch)
		inst, err := arm64asm.Decode(code)
		if err != nil {
			afterBranch = true
			continue
		}
		afterBranch = isA64Branch(inst.Op)
		if t, ok := a64Target(pc, inst); ok && inst.Op != arm64asm.BL {
			targets[t] = true
		}
	}
	for i, off := range c.pcs {
		if targets[lo+uint64(off)] {
			c.leader[i] = true
		}
	}
}

// a64Text is the instruction in GNU syntax, with PC-relative operands as
// absolute hexadecimal addresses without 0x, as objdump prints them.
func a64Text(pc uint64, inst arm64asm.Inst) string {
	s := arm64asm.GNUSyntax(inst)
	for _, a := range inst.Args {
		r, ok := a.(arm64asm.PCRel)
		if !ok {
			continue
		}
		t := uint64(int64(pc) + int64(r))
		if inst.Op == arm64asm.ADRP {
			t = uint64(int64(pc&^0xfff) + int64(r))
		}
		s = strings.Replace(s, r.String(), fmt.Sprintf("%x", t), 1)
	}
	return s
}
