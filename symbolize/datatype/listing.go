package datatype

import (
	"fmt"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// Insn is one decoded instruction of a function listing (the annotate
// view): its text as objdump -d prints it and what it accesses.
type Insn struct {
	PC    uint64
	Bytes []byte
	// Text is the instruction in GNU (AT&T for x86-64) syntax, direct
	// branch and call targets as absolute hexadecimal addresses without
	// 0x, as objdump -d prints them (before its "<symbol+off>").
	Text string
	// Target is a direct jump's or call's destination (HasTarget).
	Target    uint64
	HasTarget bool
	Call      bool // a call (its target is another function)
	// Access is what the instruction reads or writes (Binary.Attribute).
	Access Access
	// SkidFrom is, with skid correction, the earlier instruction a sample
	// on this one is counted on (Aggregator.Skid); 0 when none.
	SkidFrom uint64
}

// maxListing bounds the bytes of code one listing decodes.
const maxListing = 1 << 20

// Disassemble decodes the instructions of [lo, hi) (object addresses, a
// function's symbol range) and attributes each. An undecodable byte is
// listed as "(bad)", as objdump does, and decoding resumes after it.
func (b *Binary) Disassemble(lo, hi uint64) ([]Insn, error) {
	if hi <= lo {
		return nil, fmt.Errorf("empty address range %#x-%#x", lo, hi)
	}
	if hi-lo > maxListing {
		return nil, fmt.Errorf("the function is %d bytes long, over the %d-byte listing limit", hi-lo, maxListing)
	}
	if b.insnBytes(lo) == nil {
		return nil, fmt.Errorf("address %#x is outside the executable's code", lo)
	}
	var out []Insn
	for pc := lo; pc < hi; {
		code := b.insnBytes(pc)
		if code == nil {
			break
		}
		if n := hi - pc; uint64(len(code)) > n {
			code = code[:n]
		}
		in := Insn{PC: pc}
		n := 1
		if b.arm64 {
			n = 4
			if len(code) < 4 {
				break
			}
			inst, err := arm64asm.Decode(code)
			if err != nil {
				in.Text = fmt.Sprintf(".inst\t%#08x ; undefined", uint32(code[0])|uint32(code[1])<<8|uint32(code[2])<<16|uint32(code[3])<<24)
			} else {
				in.Text = a64Text(pc, inst)
				in.Target, in.HasTarget = a64Target(pc, inst)
				in.Call = inst.Op == arm64asm.BL
			}
		} else {
			inst, err := x86Decode(code)
			if err == nil && inst.Op == x86asm.NOP && inst.Len == 3 && code[0] == 0xc5 {
				in.Text = map[byte]string{0xf8: "vzeroupper", 0xfc: "vzeroall"}[code[1]]
				n = 3
			} else if err != nil || inst.Len == 0 {
				in.Text = "(bad)"
			} else {
				n = inst.Len
				in.Text = objdumpText(inst, pc, code)
				if rel, ok := inst.Args[0].(x86asm.Rel); ok {
					in.Target, in.HasTarget = uint64(int64(pc)+int64(inst.Len)+int64(rel)), true
					if i := strings.LastIndex(in.Text, fmt.Sprintf("%#x", in.Target)); i >= 0 {
						in.Text = in.Text[:i] + in.Text[i+2:] // objdump's "jne 1139"
					}
				}
				in.Call = inst.Op == x86asm.CALL
			}
		}
		in.Bytes = append([]byte(nil), code[:n]...)
		out = append(out, in)
		pc += uint64(n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trimMemo()
	for i := range out {
		in := &out[i]
		id := b.attributeID(in.PC)
		in.Access = b.distinct[id]
		if in.Access.Kind == KindUnknown {
			in.Access.Insn = in.Text
		}
		if sid := b.skidID(in.PC, id); sid != id {
			if from, ok := b.skidSource(in.PC); ok {
				in.SkidFrom = from
			}
		}
	}
	return out, nil
}

// skidSource is the instruction skidID counted pc's sample on: the first
// one before pc in its basic block that touches memory, within maxSkid.
// Callers hold b.mu.
func (b *Binary) skidSource(pc uint64) (uint64, bool) {
	cur := pc
	for n := 1; n <= maxSkid; n++ {
		prev, ok := b.prevInBlock(cur)
		if !ok {
			return 0, false
		}
		if !b.distinct[b.attributeID(prev)].noMem {
			return prev, true
		}
		cur = prev
	}
	return 0, false
}

// Label is an Access as perf annotate --code-with-type labels an
// instruction: "struct node +0x8 key", or the pseudo type with its reason.
func (a Access) Label() string {
	switch a.Kind {
	case KindMember, KindGlobal:
		var sb strings.Builder
		sb.WriteString(a.Type)
		fmt.Fprintf(&sb, " +%#x", a.Offset)
		if a.Member != "" {
			sb.WriteString(" " + a.Member)
		}
		return sb.String()
	}
	return a.Type
}

// Arch is the binary's architecture: "x86-64" or "arm64".
func (b *Binary) Arch() string {
	if b.arm64 {
		return "arm64"
	}
	return "x86-64"
}

// NormalizeAsm makes instruction text from objdump and from Disassemble
// comparable: spacing collapsed (also after commas), the "<symbol+off>"
// after a target dropped, lower case.
func NormalizeAsm(s string) string {
	if i := strings.Index(s, " <"); i >= 0 {
		if j := strings.Index(s[i:], ">"); j >= 0 {
			s = s[:i] + s[i+j+1:]
		}
	}
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	s = strings.ReplaceAll(s, ", ", ",")
	return s
}

// x86Renames maps x86asm's GNU mnemonics to the ones binutils 2.40's
// objdump prints (x86asm follows an older objdump).
var x86Renames = map[string]string{
	"retq": "ret", "callq": "call", "jmpq": "jmp", "movsxd": "movslq", "cdqe": "cltq",
	"cqo": "cqto", "cdq": "cltd", "cwde": "cwtl", "leaveq": "leave", "pushq": "push", "popq": "pop",
}

// bmiOps are the BMI1/BMI2 instructions x86asm suffixes with l or q.
var bmiOps = map[string]bool{"sarx": true, "shlx": true, "shrx": true, "andn": true, "bzhi": true, "pdep": true,
	"pext": true, "rorx": true, "mulx": true, "blsr": true, "blsi": true, "blsmsk": true, "bextr": true}

// x86Decode is x86asm.Decode in 64-bit mode, with the length of
// vzeroupper and vzeroall (c5 f8/fc 77) fixed: x86asm takes a ModRM byte
// they do not have, which shifted every instruction after them.
func x86Decode(code []byte) (x86asm.Inst, error) {
	inst, err := x86asm.Decode(code, 64)
	if len(code) >= 3 && code[0] == 0xc5 && (code[1] == 0xf8 || code[1] == 0xfc) && code[2] == 0x77 {
		return x86asm.Inst{Op: x86asm.NOP, Len: 3}, nil
	}
	return inst, err
}

// objdumpText is x86asm's GNU syntax of inst, written as binutils' objdump
// writes it: its mnemonics, "movabs" for 64-bit immediates, an explicit
// index scale of 1, no %riz index beside an r12 base, and the 0x0 displacement it encodes in padding nops and
// rbp/r13-based operands.
func objdumpText(inst x86asm.Inst, pc uint64, code []byte) string {
	if inst.Op == x86asm.NOP {
		return nopText(inst, code)
	}
	s := x86asm.GNUSyntax(inst, pc, nil)
	op, rest, _ := strings.Cut(s, " ")
	if r, ok := x86Renames[op]; ok {
		op = r
	}
	if base := strings.TrimRight(op, "lq"); len(base) < len(op) && bmiOps[base] {
		op = base // sarxl: objdump writes BMI instructions without a suffix
	}
	if op == "mov" && inst.Len >= 10 && strings.HasPrefix(rest, "$") {
		op = "movabs"
	}
	if m, ok := memArg(inst); ok && m.Index != 0 && m.Scale <= 1 {
		rest = strings.Replace(rest, ","+"%"+strings.ToLower(m.Index.String())+")", ","+"%"+strings.ToLower(m.Index.String())+",1)", 1)
	}
	if m, ok := memArg(inst); ok && m.Index == 0 && m.Scale == 1 && m.Base == x86asm.R12 {
		// r12 as a base needs a SIB byte, as rsp does: objdump writes
		// (%r12), x86asm (%r12,%riz).
		rest = strings.Replace(rest, "(%r12,%riz)", "(%r12)", 1)
	}
	if m, ok := memArg(inst); ok && m.Base == 0 && m.Index == 0 && m.Disp == 0 {
		// Absolute address 0 (mov %fs:0x0,%rax, a TLS access; mov 0x0,%eax
		// before a relocation): x86asm writes %fs: and nothing.
		switch {
		case m.Segment != 0:
			seg := "%" + strings.ToLower(m.Segment.String()) + ":"
			rest = strings.Replace(rest, seg, seg+"0x0", 1)
		case strings.HasPrefix(rest, ","):
			rest = "0x0" + rest
		case strings.HasSuffix(rest, ","):
			rest += "0x0"
		default:
			rest = strings.Replace(rest, ",,", ",0x0,", 1)
		}
	}
	if m, ok := memArg(inst); ok && m.Disp == 0 && (m.Base == x86asm.RBP || m.Base == x86asm.R13) && !strings.Contains(rest, "0x0(") {
		rest = strings.Replace(rest, "(%", "0x0(%", 1)
	}
	if m, ok := memArg(inst); ok && m.Disp == 0 && m.Base == 0 && m.Index != 0 {
		rest = strings.Replace(rest, "(,", "0x0(,", 1)
	}
	// objdump prints a negative immediate as its two's complement in the
	// operand's width ($0xfffffffffffffff0, not $-0x10).
	for _, a := range inst.Args {
		imm, ok := a.(x86asm.Imm)
		if !ok || int64(imm) >= 0 {
			continue
		}
		bits := operandBits(inst)
		v := uint64(imm)
		if bits < 64 {
			v &= 1<<bits - 1
		}
		rest = strings.Replace(rest, fmt.Sprintf("$-%#x", -int64(imm)), fmt.Sprintf("$%#x", v), 1)
	}
	if rest == "" {
		return op
	}
	return op + " " + rest
}

// nopText writes a multi-byte nop as objdump does ("data16 cs nopw
// 0x0(%rax,%rax,1)"), which x86asm prints as its first prefix only.
func nopText(inst x86asm.Inst, code []byte) string {
	if inst.Len == 2 && code[0] == 0x66 && code[1] == 0x90 {
		return "xchg %ax,%ax"
	}
	var sb strings.Builder
	i, opsize := 0, false
	for ; i < len(code) && i < inst.Len; i++ {
		switch code[i] {
		case 0x66:
			if opsize {
				sb.WriteString("data16 ")
			}
			opsize = true
			continue
		case 0x2e:
			sb.WriteString("cs ")
			continue
		}
		break
	}
	if i+2 >= inst.Len || code[i] != 0x0f || code[i+1] != 0x1f {
		if inst.Len == 1 {
			return "nop"
		}
		return strings.TrimSpace(sb.String() + x86asm.GNUSyntax(inst, 0, nil))
	}
	if opsize {
		sb.WriteString("nopw ")
	} else {
		sb.WriteString("nopl ")
	}
	modrm := code[i+2]
	mod, rm := modrm>>6, modrm&7
	if mod == 1 || mod == 2 {
		sb.WriteString("0x0")
	}
	if rm == 4 { // SIB: the padding nops use (%rax,%rax,1)
		sb.WriteString("(%rax,%rax,1)")
	} else {
		sb.WriteString("(%rax)")
	}
	return sb.String()
}

// operandBits is the width of inst's destination: its memory operand's or
// its first register's, else the operand size.
func operandBits(inst x86asm.Inst) int {
	if inst.MemBytes > 0 {
		if _, ok := memArg(inst); ok {
			return inst.MemBytes * 8
		}
	}
	if r, ok := inst.Args[0].(x86asm.Reg); ok {
		switch {
		case r >= x86asm.AL && r <= x86asm.R15B:
			return 8
		case r >= x86asm.AX && r <= x86asm.R15W:
			return 16
		case r >= x86asm.EAX && r <= x86asm.R15L:
			return 32
		case r >= x86asm.RAX && r <= x86asm.R15:
			return 64
		}
	}
	if inst.DataSize > 0 {
		return inst.DataSize
	}
	return 64
}
