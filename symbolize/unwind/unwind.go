package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Object is the call frame information of one ELF binary: its .eh_frame
// and, as a fallback for functions it does not describe, the .debug_frame
// of its separate debug file.
type Object struct {
	eh, debug *Table
	loads     []elf.ProgHeader // the executable's PT_LOAD segments
	buildID   string
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

// NewObjectFromTables makes an Object from parsed tables, with the
// identity mapping from file offsets to addresses (for tests and callers
// that translate addresses themselves).
func NewObjectFromTables(eh, debug *Table) *Object { return &Object{eh: eh, debug: debug} }

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
	for depth := 1; ; depth++ {
		if depth >= max {
			return out, ErrDepth
		}
		q := pc
		if depth > 1 {
			q-- // a return address: the call is the instruction before it
		}
		o, vaddr, err := lookup(q)
		if err != nil {
			return out, err
		}
		row, err := o.Row(vaddr)
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
		out = append(out, pc)
	}
}

// Size estimates the bytes the Object holds: its sections and their index,
// for the store that keeps it within the memory budget.
func (o *Object) Size() int64 {
	n := int64(len(o.loads))*int64(unsafe.Sizeof(elf.ProgHeader{})) + 256
	for _, t := range []*Table{o.eh, o.debug} {
		if t != nil {
			n += t.size()
		}
	}
	return n
}

// Close releases nothing: the Object holds only memory.
func (o *Object) Close() error { return nil }
