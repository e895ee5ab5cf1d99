package unwind

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unsafe"
)

// Object is the call frame information of one ELF binary: its .eh_frame
// and, as a fallback for functions it does not describe, the .debug_frame
// of its separate debug file.
type Object struct {
	eh, debug *Table
	loads     []elf.ProgHeader // the executable's PT_LOAD segments
	buildID   string
	// sigreturns are the addresses of the binary's signal return
	// trampolines (sigreturnCode), ascending: glibc's __restore_rt has CFI
	// that restores the interrupted registers, Go's
	// runtime.sigreturn__sigaction has none.
	sigreturns []uint64
	// entries are the first addresses of the binary's executable
	// sections and function symbols, ascending: where a sampled pc that no
	// CFI covers (crti's _init and _fini, which .eh_frame leaves out) still
	// has its return address at the stack pointer (entryRow).
	entries []uint64
	// asyncPreempt is where a Go binary's runtime.asyncPreempt is, [start,
	// end): the function a goroutine is made to call when a signal
	// preempts it (runtime.asyncPreempt). Its return address is the
	// interrupted pc, not a call's.
	asyncPreempt [2]uint64
}

// findAsyncPreempt finds runtime.asyncPreempt among a binary's symbols
// (runtime.asyncPreempt.abi0 since Go 1.17's register ABI): zero when it
// is no Go binary or its symbol table was stripped.
func findAsyncPreempt(syms []elf.Symbol) [2]uint64 {
	for _, sy := range syms {
		if (sy.Name == "runtime.asyncPreempt.abi0" || sy.Name == "runtime.asyncPreempt") && sy.Size > 0 {
			return [2]uint64{sy.Value, sy.Value + sy.Size}
		}
	}
	return [2]uint64{}
}

// AsyncPreempt reports whether vaddr, a link-time address of the binary,
// is in Go's runtime.asyncPreempt: the frame it returns to is the
// interrupted function at the very instruction the signal stopped, not
// after a call, as Go's own traceback takes it (runtime/traceback.go: the
// frame above funcID_asyncPreempt is no call site).
func (o *Object) AsyncPreempt(vaddr uint64) bool {
	return vaddr >= o.asyncPreempt[0] && vaddr < o.asyncPreempt[1]
}

// entryRow is the CFI row at a function's first instruction, every x86-64
// CIE's initial rule: the call just pushed the return address, so the
// CFA is the stack pointer plus 8 and the return address is at CFA−8.
var entryRow = func() Row {
	r := Row{CFA: Rule{Kind: RegOffset, Reg: RegRSP, Off: 8}, RA: RegRA}
	r.Regs[RegRA] = Rule{Kind: Offset, Off: -8}
	return r
}()

// findEntries lists the first addresses of exe's executable sections and
// function symbols (Object.entries).
func findEntries(exe *elf.File, syms []elf.Symbol) []uint64 {
	var out []uint64
	for _, s := range exe.Sections {
		if s.Type == elf.SHT_PROGBITS && s.Flags&elf.SHF_EXECINSTR != 0 {
			out = append(out, s.Addr)
		}
	}
	dyn, _ := exe.DynamicSymbols()
	for _, sy := range append(syms, dyn...) {
		if elf.ST_TYPE(sy.Info) == elf.STT_FUNC && sy.Value != 0 {
			out = append(out, sy.Value)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// entry reports whether vaddr is the first instruction of an executable
// section or function of the binary.
func (o *Object) entry(vaddr uint64) bool {
	_, ok := slices.BinarySearch(o.entries, vaddr)
	return ok
}

// sigreturnCode is x86-64's signal return trampoline, mov $15,%rax;
// syscall (rt_sigreturn), as libunwind and the kernel's vDSO know it.
var sigreturnCode = []byte{0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05}

// findSigreturns lists where exe's executable sections hold sigreturnCode.
func findSigreturns(exe *elf.File) []uint64 {
	var out []uint64
	for _, s := range exe.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		for off := 0; ; {
			i := bytes.Index(d[off:], sigreturnCode)
			if i < 0 {
				break
			}
			out = append(out, s.Addr+uint64(off+i))
			off += i + len(sigreturnCode)
		}
	}
	slices.Sort(out)
	return out
}

// sigreturn reports whether vaddr is a signal return trampoline's start.
func (o *Object) sigreturn(vaddr uint64) bool {
	_, ok := slices.BinarySearch(o.sigreturns, vaddr)
	return ok
}

// BuildID is the GNU build ID of the binary the Object was read from, ""
// if it has none (set by Finder).
func (o *Object) BuildID() string { return o.buildID }

// NewObject reads the CFI of exe (the binary that was mapped) and, when
// debug is not nil, of its separate debug file. It fails when neither
// describes any function.
func NewObject(exe, debug *elf.File) (*Object, error) {
	o := &Object{}
	for _, p := range exe.Progs {
		if p.Type == elf.PT_LOAD {
			o.loads = append(o.loads, p.ProgHeader)
		}
	}
	if exe.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("unwind: %v binaries are not supported (x86-64 only)", exe.Machine)
	}
	o.sigreturns = findSigreturns(exe)
	syms, _ := exe.Symbols()
	o.entries = findEntries(exe, syms)
	o.asyncPreempt = findAsyncPreempt(syms)
	if s := exe.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS {
		if d, err := s.Data(); err == nil {
			o.eh = NewTable(d, s.Addr, true)
		}
	}
	for _, f := range []*elf.File{debug, exe} {
		if f == nil || o.debug.Len() > 0 {
			continue
		}
		if s := f.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS {
			if d, err := s.Data(); err == nil {
				o.debug = NewTable(d, 0, false)
			}
		}
	}
	if o.eh.Len() == 0 && o.debug.Len() == 0 {
		return nil, errors.New("unwind: the binary has no call frame information (.eh_frame or .debug_frame)")
	}
	return o, nil
}

// Row is the CFI row at vaddr, a link-time address of the binary.
func (o *Object) Row(vaddr uint64) (Row, error) {
	r, err := o.eh.Row(vaddr)
	if err == ErrNoFDE && o.debug != nil {
		return o.debug.Row(vaddr)
	}
	return r, err
}

// Vaddr turns a file offset of the binary into its link-time address,
// through the loadable segment that holds it.
func (o *Object) Vaddr(off uint64) (uint64, bool) {
	if len(o.loads) == 0 {
		return off, true
	}
	for _, p := range o.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// Regs are register values by DWARF number; bit r of Valid is set when V[r]
// is known. V[RegRA] holds the pc.
type Regs struct {
	V     [NumRegs]uint64
	Valid uint32
}

// Set records register r's value.
func (r *Regs) Set(reg int, v uint64) {
	r.V[reg] = v
	r.Valid |= 1 << reg
}

func (r *Regs) has(reg int) bool { return reg < NumRegs && r.Valid&(1<<reg) != 0 }

// perfToDWARF maps x86-64 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h)
// to DWARF numbers; -1 for those the unwinder does not use.
var perfToDWARF = [24]int8{
	0, 3, 2, 1, 4, 5, 6, 7, // AX BX CX DX SI DI BP SP
	RegRA, -1, -1, -1, -1, -1, -1, -1, // IP FLAGS CS SS DS ES FS GS
	8, 9, 10, 11, 12, 13, 14, 15, // R8-R15
}

// PerfRegs converts PERF_SAMPLE_REGS_USER values, one per bit set in mask
// in ascending bit order, to DWARF-numbered registers.
func PerfRegs(mask uint64, vals []uint64) Regs {
	var r Regs
	i := 0
	for bit := 0; bit < 64 && i < len(vals); bit++ {
		if mask&(1<<bit) == 0 {
			continue
		}
		if bit < len(perfToDWARF) && perfToDWARF[bit] >= 0 {
			r.Set(int(perfToDWARF[bit]), vals[i])
		}
		i++
	}
	return r
}

// Why a stack walk ended before the outermost frame.
var (
	ErrStackEnd = errors.New("the copied stack ends before the outermost frame (record a larger copy: --call-graph=dwarf,16384)")
	ErrDepth    = errors.New("deeper than the frame limit")
	ErrNoRegs   = errors.New("the registers the CFA needs were not sampled")
	ErrLoop     = errors.New("the stack pointer did not move up")
)

// exprErr keeps ErrStackEnd and wraps other expression failures in ErrExprCFA.
func exprErr(err error) error {
	if errors.Is(err, ErrStackEnd) {
		return err
	}
	return fmt.Errorf("%w (%v)", ErrExprCFA, err)
}

// Lookup finds the binary mapped at pc: its CFI and pc's link-time address in it.
type Lookup func(pc uint64) (o *Object, vaddr uint64, err error)

// Unwind walks the stack of a sample: regs are the user registers when it
// was taken, stack the bytes copied from the stack pointer up. It appends
// the sampled pc and then each caller's return address to out, at most
// max frames, and says why the walk ended: nil at the outermost frame (the
// return address undefined or 0), else an error naming the reason.
func Unwind(regs Regs, stack []byte, lookup Lookup, max int, out []uint64) ([]uint64, error) {
	if !regs.has(RegRA) || !regs.has(RegRSP) {
		return out, ErrNoRegs
	}
	sp0 := regs.V[RegRSP]
	read := func(addr uint64) (uint64, bool) {
		off := addr - sp0
		if addr < sp0 || off > uint64(len(stack)) || uint64(len(stack))-off < 8 {
			return 0, false
		}
		return binary.LittleEndian.Uint64(stack[off:]), true
	}
	pc := regs.V[RegRA]
	out = append(out, pc)
	exact := true // pc is where the frame stopped, not a return address
	for depth := 1; ; depth++ {
		if depth >= max {
			return out, ErrDepth
		}
		if !exact {
			if o, vaddr, err := lookup(pc); err == nil && o.sigreturn(vaddr) {
				// A signal handler returned here: the interrupted registers
				// are in the signal frame above. Both frames are given as
				// pc+1, so that a caller's pc-1 is the instruction itself.
				next, ok := signalFrame(regs.V[RegRSP], read)
				if !ok {
					return out, ErrStackEnd
				}
				out[len(out)-1] = pc + 1
				pc = next.V[RegRA]
				regs, exact = next, true
				out = append(out, pc+1)
				continue
			}
		}
		q := pc
		if !exact {
			q-- // a return address: the call is the instruction before it
		}
		atPC := exact
		exact = false
		o, vaddr, err := lookup(q)
		if err != nil {
			return out, err
		}
		row, err := o.Row(vaddr)
		if errors.Is(err, ErrNoFDE) && atPC && o.entry(vaddr) {
			// Stopped at the first instruction of code no CFI covers (a
			// process's exit sampled in crti's _fini): the return
			// address is at the stack pointer, as libunwind finds it.
			row, err = entryRow, nil
		}
		if err != nil {
			return out, err
		}
		var cfa uint64
		switch row.CFA.Kind {
		case RegOffset:
			if !regs.has(int(row.CFA.Reg)) {
				return out, ErrNoRegs
			}
			cfa = regs.V[row.CFA.Reg] + uint64(row.CFA.Off)
		case CFAExpression:
			if cfa, err = eval(row.CFA.Expr, &regs, read); err != nil {
				return out, exprErr(err)
			}
		default:
			return out, ErrBadCFI
		}
		next := Regs{}
		for r := range NumRegs {
			rule := row.Regs[r]
			switch rule.Kind {
			case Unspecified, SameValue:
				if regs.has(r) {
					next.Set(r, regs.V[r])
				}
			case Undefined:
			case Offset:
				v, ok := read(cfa + uint64(rule.Off))
				if !ok {
					if r == int(row.RA) {
						return out, ErrStackEnd
					}
					continue // a callee-saved register lost: unknown from here on
				}
				next.Set(r, v)
			case ValOffset:
				next.Set(r, cfa+uint64(rule.Off))
			case Register:
				if regs.has(int(rule.Reg)) {
					next.Set(r, regs.V[rule.Reg])
				}
			case Expression, ValExpression:
				v, err := eval(rule.Expr, &regs, read, cfa)
				if err == nil && rule.Kind == Expression {
					var ok bool
					if v, ok = read(v); !ok {
						err = ErrStackEnd
					}
				}
				if err != nil {
					if r == int(row.RA) {
						return out, exprErr(err)
					}
					continue
				}
				next.Set(r, v)
			}
		}
		if row.Regs[RegRSP].Kind == Unspecified || row.Regs[RegRSP].Kind == SameValue {
			next.Set(RegRSP, cfa) // the CFA is the caller's stack pointer
		}
		ra := int(row.RA)
		if !next.has(ra) || next.V[ra] == 0 {
			return out, nil // the outermost frame
		}
		if next.V[RegRSP] <= regs.V[RegRSP] && next.V[ra] == pc {
			return out, ErrLoop
		}
		pc = next.V[ra]
		next.Set(RegRA, pc)
		regs = next
		if o.AsyncPreempt(vaddr) {
			// runtime.asyncPreempt returns to the instruction a signal
			// interrupted (the handler pushed it as if a call had): that
			// frame's CFI row is the one at pc itself, and it is given as
			// pc+1, as a signal frame's is, so that a caller's pc-1 names
			// the interrupted instruction, its line and inlined calls.
			exact = true
			out = append(out, pc+1)
			continue
		}
		out = append(out, pc)
	}
}

// sigcontextRegs are the offsets of the registers the kernel saves in an
// x86-64 signal frame, from the stack pointer a signal handler returns
// with (the rt_sigframe's ucontext; its uc_mcontext is 40 bytes in), by
// DWARF number (arch/x86/include/uapi/asm/sigcontext.h).
var sigcontextRegs = [NumRegs]int{
	0: 40 + 104, 1: 40 + 96, 2: 40 + 112, 3: 40 + 88, // rax rdx rcx rbx
	4: 40 + 72, 5: 40 + 64, 6: 40 + 80, RegRSP: 40 + 120, // rsi rdi rbp rsp
	8: 40, 9: 40 + 8, 10: 40 + 16, 11: 40 + 24, 12: 40 + 32, 13: 40 + 40, 14: 40 + 48, 15: 40 + 56, // r8-r15
	RegRA: 40 + 128, // rip
}

// signalFrame reads the registers a signal interrupted from the signal
// frame at sp; false when the stack copy does not hold them all.
func signalFrame(sp uint64, read func(uint64) (uint64, bool)) (Regs, bool) {
	var r Regs
	for reg, off := range sigcontextRegs {
		v, ok := read(sp + uint64(off))
		if !ok {
			return r, false
		}
		r.Set(reg, v)
	}
	return r, true
}

// Size estimates the bytes the Object holds: its sections and their index,
// for the store that keeps it within the memory budget.
func (o *Object) Size() int64 {
	n := int64(len(o.loads))*int64(unsafe.Sizeof(elf.ProgHeader{})) + 8*int64(len(o.sigreturns)+len(o.entries)) + 256
	for _, t := range []*Table{o.eh, o.debug} {
		if t != nil {
			n += t.size()
		}
	}
	return n
}

// Close releases nothing: the Object holds only memory.
func (o *Object) Close() error { return nil }
