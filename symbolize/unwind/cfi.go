// Package unwind reads DWARF call frame information (.eh_frame, .debug_frame)
// and walks user-space stacks with it: the DWARF mode of perf record copies a
// sample's user registers and the top of its stack, and the return addresses
// of the callers are recovered from those bytes with the CFI of each binary,
// as perf script does with libunwind or libdw.
//
// It is also the codebase's one CFI parser: data-type attribution asks it how
// the canonical frame address is computed at a pc.
package unwind

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"viewer/symbolize/dwarfbuf"
)

// NumRegs is how many DWARF registers a Row tracks: x86-64's general
// registers 0-15 (rax rdx rcx rbx rsi rdi rbp rsp r8-r15) and 16, the return
// address column. Rules for other registers (vector, x87) are parsed and dropped.
const NumRegs = 17

// x86-64 DWARF register numbers the unwinder uses by name.
const (
	RegRBP = 6
	RegRSP = 7
	RegRA  = 16
)

// RuleKind says how a register (or the CFA) is recovered in the caller.
type RuleKind uint8

const (
	// Unspecified: no rule given; like libunwind and libdw, the value is
	// taken to be unchanged (callee-saved registers are described only when saved).
	Unspecified   RuleKind = iota
	Undefined              // DW_CFA_undefined: no value (for the return address: the outermost frame)
	SameValue              // DW_CFA_same_value
	Offset                 // saved at CFA+Off
	ValOffset              // the value is CFA+Off
	Register               // the value is in register Reg
	Expression             // saved at the address a DWARF expression computes (not evaluated)
	ValExpression          // the value is a DWARF expression (not evaluated)
	RegOffset              // CFA only: Reg+Off
	CFAExpression          // CFA only: DW_CFA_def_cfa_expression (not evaluated)
)

var kindNames = [...]string{"unspecified", "undefined", "same value", "offset", "val offset", "register", "expression", "val expression", "reg+offset", "CFA expression"}

func (k RuleKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("rule %d", k)
}

// Rule is one column of the CFI table.
type Rule struct {
	Kind RuleKind
	Reg  uint16
	Off  int64
	Expr []byte // DWARF expression of the expression kinds (a slice of the section)
}

// Row is the CFI table row in effect at some pc: how to compute the CFA and
// how to recover each register of the caller.
type Row struct {
	CFA  Rule
	Regs [NumRegs]Rule
	// RA is the CIE's return address column (16 on x86-64).
	RA uint16
}

// Errors Row returns; callers count them to tell users why stacks end.
var (
	ErrNoFDE     = errors.New("no call frame information covers the address")
	ErrBadCFI    = errors.New("malformed call frame information")
	ErrExprCFA   = errors.New("a DWARF expression of the call frame information could not be evaluated")
	ErrUnknownOp = errors.New("unknown call frame instruction")
)

// Table indexes the FDEs of one .eh_frame or .debug_frame section.
type Table struct {
	sec      []byte
	secAddr  uint64 // the section's address, for pc-relative pointers in .eh_frame
	ehFrame  bool
	fdes     []fde // sorted by lo
	cieCache map[uint64]*cie
}

type fde struct {
	lo, hi uint64
	cieOff uint64
	insts  []byte
}

type cie struct {
	codeAlign uint64
	dataAlign int64
	ra        uint64
	ptrEnc    byte
	insts     []byte
}

// NewTable indexes sec, the contents of an .eh_frame section loaded at
// secAddr (ehFrame) or of a .debug_frame section. Damaged entries end the
// index early; what was read before stays usable.
func NewTable(sec []byte, secAddr uint64, ehFrame bool) *Table {
	t := &Table{sec: sec, secAddr: secAddr, ehFrame: ehFrame, cieCache: map[uint64]*cie{}}
	r := reader{B: sec}
	for !r.Done() && !r.Err {
		length := uint64(r.U32())
		if length == 0 {
			if t.ehFrame {
				break // terminator
			}
			continue
		}
		if length == 0xffffffff { // 64-bit DWARF: not produced for x86-64 ELF in practice
			break
		}
		body := r.Pos
		end := body + int(length)
		if length > uint64(len(sec)) || end > len(sec) || end < body {
			break
		}
		id := r.U32()
		isCIE := (ehFrame && id == 0) || (!ehFrame && id == 0xffffffff)
		if !isCIE {
			var cieOff uint64
			if ehFrame {
				cieOff = uint64(body) - uint64(id)
			} else {
				cieOff = uint64(id)
			}
			if c := t.cie(cieOff); c != nil {
				lo := t.readPtr(&r, c.ptrEnc)
				n := t.readPtr(&r, c.ptrEnc&0x0f)
				if ehFrame && hasAugData(sec, cieOff) {
					r.Bytes(r.Uleb())
				}
				if !r.Err && r.Pos <= end && lo+n >= lo {
					t.fdes = append(t.fdes, fde{lo: lo, hi: lo + n, cieOff: cieOff, insts: sec[r.Pos:end]})
				}
			}
		}
		r = reader{B: sec, Pos: end}
	}
	sort.Slice(t.fdes, func(i, j int) bool { return t.fdes[i].lo < t.fdes[j].lo })
	return t
}

// Len is the number of FDEs (functions described).
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.fdes)
}

// hasAugData reports whether the CIE at off has a 'z' augmentation.
func hasAugData(sec []byte, off uint64) bool {
	if off+9 >= uint64(len(sec)) {
		return false
	}
	return sec[off+9] == 'z' // length(4) id(4) version(1) augmentation...
}

// cie parses (and caches) the CIE at off.
func (t *Table) cie(off uint64) *cie {
	if c, ok := t.cieCache[off]; ok {
		return c
	}
	t.cieCache[off] = nil
	if off+8 > uint64(len(t.sec)) {
		return nil
	}
	r := reader{B: t.sec, Pos: int(off)}
	length := int(r.U32())
	end := r.Pos + length
	if length < 0 || end > len(t.sec) || end < r.Pos {
		return nil
	}
	r.U32() // id
	version := r.U8()
	var aug []byte
	for !r.Err {
		c := r.U8()
		if c == 0 {
			break
		}
		aug = append(aug, c)
	}
	if !t.ehFrame && version >= 4 {
		r.U8() // address_size
		r.U8() // segment_size
	}
	c := &cie{ptrEnc: 0x00}
	c.codeAlign = r.Uleb()
	c.dataAlign = r.Sleb()
	if version == 1 {
		c.ra = uint64(r.U8())
	} else {
		c.ra = r.Uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		n := r.Uleb()
		augEnd := r.Pos + int(n)
		for _, a := range aug[1:] {
			switch a {
			case 'R':
				c.ptrEnc = r.U8()
			case 'L':
				r.U8()
			case 'P':
				enc := r.U8()
				t.readPtr(&r, enc)
			}
		}
		if n > uint64(len(t.sec)) || augEnd < r.Pos-int(n) {
			return nil
		}
		r.Pos = augEnd
	} else if len(aug) > 0 && t.ehFrame {
		return nil // unknown augmentation without 'z': cannot skip it
	}
	if r.Err || r.Pos > end {
		return nil
	}
	c.insts = t.sec[r.Pos:end]
	t.cieCache[off] = c
	return c
}

// readPtr reads a pointer in the given DW_EH_PE encoding. .debug_frame uses
// absolute 8-byte addresses (encoding 0).
func (t *Table) readPtr(r *reader, enc byte) uint64 {
	if enc == 0xff { // omit
		return 0
	}
	pos := r.Pos
	var v uint64
	switch enc & 0x0f {
	case 0x00:
		v = r.U64()
	case 0x01:
		v = r.Uleb()
	case 0x02:
		v = uint64(r.U16())
	case 0x03:
		v = uint64(r.U32())
	case 0x04:
		v = r.U64()
	case 0x09:
		v = uint64(r.Sleb())
	case 0x0a:
		v = uint64(int64(int16(r.U16())))
	case 0x0b:
		v = uint64(int64(int32(r.U32())))
	case 0x0c:
		v = r.U64()
	default:
		r.Err = true
		return 0
	}
	if enc&0x70 == 0x10 { // pcrel
		v += t.secAddr + uint64(pos)
	}
	return v
}

// Row returns the CFI row in effect at pc, an address as the section's
// binary links it (an ELF virtual address).
func (t *Table) Row(pc uint64) (Row, error) {
	if t == nil {
		return Row{}, ErrNoFDE
	}
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].lo > pc }) - 1
	if i < 0 || pc >= t.fdes[i].hi {
		return Row{}, ErrNoFDE
	}
	f := &t.fdes[i]
	c := t.cie(f.cieOff)
	if c == nil {
		return Row{}, ErrBadCFI
	}
	m := machine{t: t, c: c, pc: pc, loc: f.lo}
	if c.ra < NumRegs {
		m.row.RA = uint16(c.ra)
	}
	if err := m.run(c.insts, true); err != nil {
		return m.row, err
	}
	m.init = m.row
	m.loc = f.lo
	if err := m.run(f.insts, false); err != nil {
		return m.row, err
	}
	return m.row, nil
}

// machine executes call frame instructions up to pc.
type machine struct {
	t    *Table
	c    *cie
	pc   uint64
	loc  uint64
	row  Row
	init Row // the row after the CIE's initial instructions, for DW_CFA_restore
	// Remembered states (DW_CFA_remember_state): functions keep one or two
	// (around an early return's epilogue), so the first ones live in saved,
	// in the machine itself, and only deeper ones are allocated.
	saved  [2]Row
	nsaved int
	more   []Row
}

var errPast = errors.New("past pc")

// run executes insts; in the FDE (!initial) it stops once the location passes pc.
func (m *machine) run(insts []byte, initial bool) error {
	r := reader{B: insts}
	c := m.c
	advance := func(d uint64) error {
		m.loc += d * c.codeAlign
		if !initial && m.loc > m.pc {
			return errPast
		}
		return nil
	}
	set := func(reg uint64, rule Rule) {
		if reg < NumRegs {
			m.row.Regs[reg] = rule
		}
	}
	restore := func(reg uint64) {
		if reg < NumRegs {
			m.row.Regs[reg] = m.init.Regs[reg]
		}
	}
	for !r.Done() && !r.Err {
		op := r.U8()
		var err error
		switch op >> 6 {
		case 1: // advance_loc
			err = advance(uint64(op & 0x3f))
		case 2: // offset
			set(uint64(op&0x3f), Rule{Kind: Offset, Off: int64(r.Uleb()) * c.dataAlign})
		case 3: // restore
			restore(uint64(op & 0x3f))
		default:
			switch op {
			case 0x00: // nop
			case 0x01: // set_loc
				m.loc = m.t.readPtr(&r, c.ptrEnc)
				if !initial && m.loc > m.pc {
					err = errPast
				}
			case 0x02:
				err = advance(uint64(r.U8()))
			case 0x03:
				err = advance(uint64(r.U16()))
			case 0x04:
				err = advance(uint64(r.U32()))
			case 0x05: // offset_extended
				reg := r.Uleb()
				set(reg, Rule{Kind: Offset, Off: int64(r.Uleb()) * c.dataAlign})
			case 0x06: // restore_extended
				restore(r.Uleb())
			case 0x07: // undefined
				set(r.Uleb(), Rule{Kind: Undefined})
			case 0x08: // same_value
				set(r.Uleb(), Rule{Kind: SameValue})
			case 0x09: // register
				reg := r.Uleb()
				set(reg, Rule{Kind: Register, Reg: uint16(r.Uleb())})
			case 0x0a: // remember_state
				switch {
				case m.nsaved < len(m.saved):
					m.saved[m.nsaved] = m.row
				case len(m.more) >= 1024:
					return ErrBadCFI
				default:
					m.more = append(m.more, m.row)
				}
				m.nsaved++
			case 0x0b: // restore_state: registers and CFA, as libgcc and libunwind do
				if m.nsaved > 0 {
					m.nsaved--
					if m.nsaved < len(m.saved) {
						m.row = m.saved[m.nsaved]
					} else {
						m.row = m.more[len(m.more)-1]
						m.more = m.more[:len(m.more)-1]
					}
				}
			case 0x0c: // def_cfa
				reg := r.Uleb()
				m.row.CFA = Rule{Kind: RegOffset, Reg: uint16(reg), Off: int64(r.Uleb())}
			case 0x0d: // def_cfa_register
				m.row.CFA.Reg = uint16(r.Uleb())
				if m.row.CFA.Kind != RegOffset {
					m.row.CFA.Kind = RegOffset
				}
			case 0x0e: // def_cfa_offset
				m.row.CFA.Off = int64(r.Uleb())
			case 0x0f: // def_cfa_expression
				m.row.CFA = Rule{Kind: CFAExpression, Expr: r.Bytes(r.Uleb())}
			case 0x10: // expression
				reg := r.Uleb()
				set(reg, Rule{Kind: Expression, Expr: r.Bytes(r.Uleb())})
			case 0x11: // offset_extended_sf
				reg := r.Uleb()
				set(reg, Rule{Kind: Offset, Off: r.Sleb() * c.dataAlign})
			case 0x12: // def_cfa_sf
				reg := r.Uleb()
				m.row.CFA = Rule{Kind: RegOffset, Reg: uint16(reg), Off: r.Sleb() * c.dataAlign}
			case 0x13: // def_cfa_offset_sf
				m.row.CFA.Off = r.Sleb() * c.dataAlign
			case 0x14: // val_offset
				reg := r.Uleb()
				set(reg, Rule{Kind: ValOffset, Off: int64(r.Uleb()) * c.dataAlign})
			case 0x15: // val_offset_sf
				reg := r.Uleb()
				set(reg, Rule{Kind: ValOffset, Off: r.Sleb() * c.dataAlign})
			case 0x16: // val_expression
				reg := r.Uleb()
				set(reg, Rule{Kind: ValExpression, Expr: r.Bytes(r.Uleb())})
			case 0x2e: // GNU_args_size
				r.Uleb()
			case 0x2f: // GNU_negative_offset_extended
				reg := r.Uleb()
				set(reg, Rule{Kind: Offset, Off: -int64(r.Uleb()) * c.dataAlign})
			default:
				return fmt.Errorf("%w 0x%02x", ErrUnknownOp, op)
			}
		}
		if err == errPast {
			return nil
		}
	}
	if r.Err {
		return ErrBadCFI
	}
	return nil
}

// reader is the shared DWARF cursor (symbolize/dwarfbuf).
type reader = dwarfbuf.Reader

// size estimates the bytes the table holds: the section, its FDE index and
// the parsed CIEs.
func (t *Table) size() int64 {
	return int64(cap(t.sec)) + int64(cap(t.fdes))*int64(unsafe.Sizeof(fde{})) + int64(len(t.cieCache))*160
}
