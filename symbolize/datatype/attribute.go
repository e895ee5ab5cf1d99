package datatype

import (
	"debug/dwarf"
	"fmt"
	"sort"
	"strings"
	"sync"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// Access kinds.
const (
	KindMember  = "member"          // through a variable or parameter (pointer, register-based or stack object)
	KindGlobal  = "global"          // a variable at a fixed address (RIP-relative)
	KindStackOp = "stack operation" // push, pop, call, ret
	KindUnknown = "unknown"
)

// Access is what the instruction at a pc touches.
type Access struct {
	Type         string `json:"type"`     // C type name ("struct node", "rect_t"); "(stack operation)" or "(unknown)" otherwise
	TypeSize     int64  `json:"typeSize"` // bytes
	Offset       int64  `json:"offset"`   // byte offset of the access inside Type
	Member       string `json:"member"`   // member path at Offset ("in.y", "name[3]", "mode:3"); "" for the whole object or padding
	MemberOffset int64  `json:"memberOffset"`
	MemberSize   int64  `json:"memberSize"`
	Kind         string `json:"kind"`
	Reason       string `json:"reason,omitempty"` // for unknown: why; otherwise how it was found
	Var          string `json:"var,omitempty"`    // the variable, parameter or expression that located the object
	Func         string `json:"func,omitempty"`   // function (or inlined function) at pc
	Insn         string `json:"insn,omitempty"`   // for unknowns: the decoded instruction, GNU syntax
	// Skid says the sampled instruction accesses no memory and the access
	// is its predecessor's in the basic block (see Aggregator.Skid).
	Skid bool `json:"skid,omitempty"`

	typ   dwarf.Type // Type's DWARF type
	mtyp  dwarf.Type // the member's DWARF type
	noMem bool       // the instruction reads and writes no memory (skid may apply)
}

const (
	typeStackOp = "(stack operation)"
	typeUnknown = "(unknown)"
)

func unknown(why string, args ...any) Access {
	return Access{Type: typeUnknown, Kind: KindUnknown, Reason: fmt.Sprintf(why, args...)}
}

// Attribute returns the data type and member the instruction at pc (an
// object address, as in the ELF file) accesses. It never fails: anything it
// cannot attribute is Kind "unknown" with the Reason.
func (b *Binary) Attribute(pc uint64) Access {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trimMemo()
	a := b.distinct[b.attributeID(pc)]
	if a.Kind == KindUnknown {
		a.Insn = b.insnText(pc)
	}
	return a
}

// attributeID attributes pc and returns the index of the result in
// b.distinct, where equal results are stored once: aggregation then groups
// samples by a small integer instead of hashing strings. Callers hold b.mu.
func (b *Binary) attributeID(pc uint64) int32 {
	if id, ok := b.memo[pc]; ok {
		return id
	}
	return b.attributeNew(pc)
}

// attributeNew is attributeID for a pc known not to be in b.memo.
func (b *Binary) attributeNew(pc uint64) int32 {
	id := b.intern(b.attributeSafe(pc))
	b.memo[pc] = id
	return id
}

// intern returns the index of a in b.distinct, adding it if it is new.
// Callers hold b.mu.
func (b *Binary) intern(a Access) int32 {
	k := accessKey{a.Kind, a.Type, a.Member, a.Func, a.Reason, a.Var, a.TypeSize, a.Offset, a.MemberOffset, a.MemberSize}
	id, ok := b.distinctIdx[k]
	if !ok {
		id = int32(len(b.distinct))
		b.distinct = append(b.distinct, a)
		b.distinctIdx[k] = id
	}
	return id
}

// trimMemo forgets all results once there are maxMemo of them, bounding
// memory over a long-running server. It runs only between uses of ids
// (Attribute's caller holds no id; Aggregator.Add calls it first).
func (b *Binary) trimMemo() {
	if len(b.memo) >= maxMemo || len(b.distinct) >= maxMemo {
		clear(b.memo)
		clear(b.skidMemo)
		clear(b.distinctIdx)
		b.distinct = nil
	}
}

// accessKey identifies equal Access values.
type accessKey struct {
	kind, typ, member, fn, reason, v string
	size, off, moff, msize           int64
}

func (b *Binary) attributeSafe(pc uint64) (a Access) {
	defer func() {
		if r := recover(); r != nil {
			a = unknown("malformed debug info: %v", r)
		}
	}()
	return b.attribute(pc)
}

// maxMemo bounds how many attributed addresses a Binary remembers:
// profiles of the same binary are attributed again for other sample types
// and once symbolized copies arrive.
const maxMemo = 1 << 18

func (b *Binary) attribute(pc uint64) Access {
	code := b.insnBytes(pc)
	if code == nil {
		return unknown("the address is outside the executable's code")
	}
	b.ensurePC(pc) // a lazy index reads pc's unit: its declarations name the globals it reads
	var a Access
	if b.arm64 {
		inst, err := arm64asm.Decode(code)
		if err != nil {
			return unknown("cannot decode the instruction: %v", err)
		}
		a = b.attributeARM64(pc, inst)
	} else {
		inst, err := x86Decode(code)
		if err != nil {
			return unknown("cannot decode the instruction: %v", err)
		}
		a = b.attributeInst(pc, inst)
	}
	if a.Func == "" {
		if f, ok := b.funcAt(pc); ok {
			if e, err := b.entry(f.die); err == nil {
				a.Func, _ = b.attr(e, dwarf.AttrName).(string)
			}
		}
	}
	return a
}

// insnText is the instruction at pc in GNU syntax, for the debug view (it
// is formatted on demand: formatting every unattributed instruction costs
// more than attributing it).
func (b *Binary) insnText(pc uint64) string {
	code := b.insnBytes(pc)
	if code == nil {
		return ""
	}
	if b.arm64 {
		inst, err := arm64asm.Decode(code)
		if err != nil {
			return ""
		}
		return arm64asm.GNUSyntax(inst)
	}
	inst, err := x86Decode(code)
	if err != nil {
		return ""
	}
	return x86asm.GNUSyntax(inst, pc, nil)
}

// mnemonic is the instruction's name as objdump prints it ("add", "test").
func mnemonic(inst x86asm.Inst) string { return strings.ToLower(inst.Op.String()) }

// opReason holds, per opcode, the reasons that depend only on it: most
// sampled instructions get one of them, and formatting them for every
// address cost more than the rest of their attribution.
type opReason struct{ stack, noMem, noData string }

var opReasons = sync.OnceValue(func() []opReason {
	var rs []opReason
	for op := x86asm.Op(0); ; op++ {
		name := op.String()
		if op > 0 && strings.HasPrefix(name, "Op(") {
			break
		}
		m := strings.ToLower(name)
		rs = append(rs, opReason{m + " accesses the stack", m + " has no memory operand", m + " does not access data"})
	}
	return rs
})

// noVarReasons is, per DWARF register number, why an access through it
// found no variable (the commonest reason for a memory access).
var noVarReasons = sync.OnceValue(func() []string {
	rs := make([]string, dwRIP+1)
	for i := range rs {
		rs[i] = "no pointer variable or parameter is in " + dwarfRegName(i) + " here, and tracking the basic block found none"
	}
	return rs
})

func noVarReason(reg int) string {
	if rs := noVarReasons(); reg >= 0 && reg < len(rs) {
		return rs[reg]
	}
	return "no pointer variable or parameter is in " + dwarfRegName(reg) + " here, and tracking the basic block found none"
}

// reasonsOf returns the opcode-only reasons of inst.
func reasonsOf(inst x86asm.Inst) opReason {
	if rs := opReasons(); int(inst.Op) < len(rs) {
		return rs[inst.Op]
	}
	m := mnemonic(inst)
	return opReason{m + " accesses the stack", m + " has no memory operand", m + " does not access data"}
}

// memArg returns the instruction's explicit memory operand.
func memArg(inst x86asm.Inst) (x86asm.Mem, bool) {
	for _, arg := range inst.Args {
		if m, ok := arg.(x86asm.Mem); ok {
			return m, true
		}
	}
	return x86asm.Mem{}, false
}

func isStackOp(op x86asm.Op) bool {
	switch op {
	case x86asm.PUSH, x86asm.POP, x86asm.CALL, x86asm.RET, x86asm.PUSHF, x86asm.POPF,
		x86asm.LEAVE, x86asm.ENTER, x86asm.PUSHFQ, x86asm.POPFQ:
		return true
	}
	return false
}

func (b *Binary) attributeInst(pc uint64, inst x86asm.Inst) Access {
	if isStackOp(inst.Op) {
		return Access{Type: typeStackOp, Kind: KindStackOp, Reason: reasonsOf(inst).stack}
	}
	m, ok := memArg(inst)
	if !ok {
		return Access{Type: typeUnknown, Kind: KindUnknown, Reason: reasonsOf(inst).noMem, noMem: true}
	}
	if inst.Op == x86asm.LEA {
		a := unknown("lea computes an address without accessing memory")
		a.noMem = true
		return a
	}
	if inst.Op == x86asm.NOP || inst.Op >= x86asm.PREFETCHNTA && inst.Op <= x86asm.PREFETCHW {
		return Access{Type: typeUnknown, Kind: KindUnknown, Reason: reasonsOf(inst).noData}
	}
	if m.Segment == x86asm.FS || m.Segment == x86asm.GS {
		return unknown("%s-relative access (thread-local storage) is not attributed", m.Segment)
	}
	h := b.hintFor(pc, inst)
	base := dwarfReg(m.Base)
	if base == dwRIP {
		addr := pc + uint64(inst.Len) + uint64(m.Disp)
		if slot, ok := b.got[addr]; ok {
			name := slot.name
			if name == "" {
				name = fmt.Sprintf("%#x", slot.target)
			}
			return unknown("reads a GOT slot (the address of %s), not data", name)
		}
		return b.global(addr, h, indexScale(m))
	}
	if m.Base == 0 {
		// A fixed address, plus an index register when it is an array's
		// (table(,%rdi,4) in code that is not position-independent).
		return b.global(uint64(m.Disp), h, indexScale(m))
	}
	if base < 0 {
		return unknown("base register %s is not a general-purpose register", m.Base)
	}
	f, hasFunc := b.funcAt(pc)
	var fs *funcScope
	if hasFunc {
		fs, _ = b.funcScope(f)
	}
	if fs == nil {
		return unknown("no DWARF function covers the address (code without debug info)")
	}
	a := b.fromVariables(fs, pc, base, memOf(m), h)
	if a.Kind != KindUnknown {
		return a
	}
	// Second phase: follow the register back through the basic block.
	if t := b.track(f, fs, pc, base); t.ok {
		ta := b.place(t.typ, t.off+m.Disp, h, indexScale(m), t.desc, KindMember)
		if ta.Kind != KindUnknown {
			ta.Reason = "register tracking: " + t.desc
			ta.Func = a.Func
			return ta
		}
	}
	return a
}

// global attributes an access to a fixed address.
func (b *Binary) global(addr uint64, h accessHint, scale int64) Access {
	a := b.globalIndexed(addr, h, scale)
	if a.Kind == KindUnknown && b.externGlobal(addr) {
		return b.globalIndexed(addr, h, scale)
	}
	return a
}

// globalIndexed is global from the globals indexed so far.
func (b *Binary) globalIndexed(addr uint64, h accessHint, scale int64) Access {
	i := sort.Search(len(b.globals), func(i int) bool { return b.globals[i].addr > addr }) - 1
	for j := i; j >= 0 && j > i-8; j-- {
		g := b.globals[j]
		e, err := b.entry(g.die)
		if err != nil {
			continue
		}
		toff, ok := b.attr(e, dwarf.AttrType).(dwarf.Offset)
		if !ok {
			continue
		}
		t, err := b.typ(toff)
		if err != nil {
			continue
		}
		off := int64(addr - g.addr)
		if sz := typeSize(t); off >= sz {
			if j == i {
				name, _ := b.attr(e, dwarf.AttrName).(string)
				if off < sz+64 {
					return unknown("the address is %d bytes into %s (%s, size %d): past its end", off, name, typeName(t), sz)
				}
			}
			continue
		}
		name, _ := b.attr(e, dwarf.AttrName).(string)
		a := b.place(t, off, h, scale, name, KindGlobal)
		a.Reason = "global variable at a fixed address"
		return a
	}
	return unknown("no global variable at the fixed address (constants, PLT/GOT slots or data without debug info)")
}

// fromVariables is the first phase: find the variable or parameter whose
// location at pc is the base register, searching scopes innermost first.
func (b *Binary) fromVariables(fs *funcScope, pc uint64, base int, mem memRef, h accessHint) Access {
	var fail Access
	chain := fs.scopesAt(pc)
	fname := fs.name
	if len(chain) > 0 {
		for _, s := range chain {
			if s.inlined != "" {
				fname = s.inlined
				break
			}
		}
	}
	var cfa cfaRule
	cfaDone := false
	for _, s := range chain {
		for i := range s.vars {
			v := &s.vars[i]
			l := b.varLocation(fs.unit, v, pc)
			var typ dwarf.Type
			var off int64
			switch {
			case l.kind == locReg && l.reg == base:
				t, err := b.typ(v.typ)
				if err != nil {
					continue
				}
				p, ok := pointee(t)
				if !ok {
					if fail.Kind == "" {
						fail = unknown("%s holds %s (%s), not a pointer", b.regName(base), v.name, typeName(t))
					}
					continue
				}
				typ, off = p, mem.disp
			case l.kind == locBreg && l.reg == base:
				t, err := b.typ(v.typ)
				if err != nil {
					continue
				}
				typ, off = t, mem.disp-l.off
			case l.kind == locFbreg && b.frameReg(base):
				fb := b.varLocation(fs.unit, &fs.frameBase, pc)
				var regOff int64 // frame base = base register + regOff
				switch {
				case fb.kind == locCFA:
					if !cfaDone {
						cfa, cfaDone = b.frames.cfaAt(pc), true
					}
					if !cfa.ok || cfa.reg != base {
						continue
					}
					regOff = cfa.off
				case fb.kind == locBreg && fb.reg == base:
					regOff = fb.off
				default:
					continue
				}
				t, err := b.typ(v.typ)
				if err != nil {
					continue
				}
				typ, off = t, mem.disp-regOff-l.off
			default:
				continue
			}
			if fail.Kind != "" && !fits(typ, off) {
				continue
			}
			a := b.place(typ, off, h, mem.scale, v.name, KindMember)
			if a.Kind == KindUnknown {
				if fail.Kind == "" {
					fail = a
				}
				continue
			}
			a.Func = fname
			a.Reason = "location of " + v.name + ": " + l.format(b.regName)
			return a
		}
	}
	if fail.Kind != "" {
		fail.Func = fname
		return fail
	}
	a := Access{Type: typeUnknown, Kind: KindUnknown, Reason: noVarReason(base)}
	if b.arm64 {
		a.Reason = "no pointer variable or parameter is in " + b.regName(base) + " here"
	}
	a.Func = fname
	return a
}

// typeName is typeName(t), remembered per type: the name of a type is
// built anew on every call, and the same few types take most accesses.
// Callers hold b.mu.
func (b *Binary) typeName(t dwarf.Type) string {
	if n, ok := b.names[t]; ok {
		return n
	}
	if b.names == nil {
		b.names = map[dwarf.Type]string{}
	}
	n := typeName(t)
	b.names[t] = n
	return n
}

// fits says whether place(typ, off, ...) would name a member rather than
// explain why it cannot: fromVariables keeps only its first failure, so
// it formats a failure's reason only while it has none.
func fits(typ dwarf.Type, off int64) bool {
	sz := typeSize(typ)
	return sz > 0 && off >= 0 && off < sz
}

// place names the member at off inside typ, or explains why off is not
// inside it. scale is the index register's scale, 0 without one: an
// indexed access (base + index*scale + off) reaches an element of an array
// on the path that is not known, so member names it "[]" (see member).
func (b *Binary) place(typ dwarf.Type, off int64, h accessHint, scale int64, varName, kind string) Access {
	sz := typeSize(typ)
	if sz <= 0 {
		return unknown("%s points to %s, whose size is unknown", varName, typeName(typ))
	}
	if off < 0 || off >= sz {
		return unknown("offset %d is outside %s (size %d) located by %s", off, typeName(typ), sz, varName)
	}
	path, moff, msize, mt := member(typ, off, h, scale)
	return Access{
		Type: b.typeName(typ), TypeSize: sz, Offset: off,
		Member: path, MemberOffset: moff, MemberSize: msize,
		Kind: kind, Var: varName, typ: typ, mtyp: mt,
	}
}

// memRef is what attribution needs of a memory operand whatever the
// architecture: the displacement added to the base register and the
// index register's scale (0 without one).
type memRef struct{ disp, scale int64 }

func memOf(m x86asm.Mem) memRef { return memRef{m.Disp, indexScale(m)} }

// indexScale is the scale of m's index register, 0 when it has none.
func indexScale(m x86asm.Mem) int64 {
	if m.Index == 0 {
		return 0
	}
	return int64(max(m.Scale, 1))
}
