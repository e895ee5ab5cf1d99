// Package annotate builds a function's annotated listing, as `perf
// annotate` and pprof's disasm do: every instruction decoded from the
// executable, its self samples, the source line and inlined calls it comes
// from (DWARF line tables), symbolic branch targets and the data type and
// member it accesses (symbolize/datatype).
package annotate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"viewer/symbolize/datatype"
	"viewer/symbolize/elfsym"
)

// Code decodes and attributes a range of instructions (*datatype.Binary).
type Code interface {
	Disassemble(lo, hi uint64) ([]datatype.Insn, error)
	Arch() string
}

// Lines names the source frames at an object address, innermost first
// (*elfsym.File).
type Lines interface {
	Lookup(addr uint64, frames []elfsym.Frame) ([]elfsym.Frame, error)
}

// Func is a function's symbol: its name and object address range.
type Func struct {
	Name   string
	Lo, Hi uint64
}

// Listing is one function's annotated instructions.
type Listing struct {
	Func Func
	Arch string
	// Total is the weight of the samples whose address is in the function
	// (its self samples, the 100% of perf annotate).
	Total int64
	Rows  []Row
}

// Row is one instruction and what the listing says about it.
type Row struct {
	datatype.Insn
	Self int64 // weight of the samples at this address
	// SkidIn is the weight of later instructions' samples that skid
	// correction counts on this instruction's access.
	SkidIn int64
	// Frames are the source frames at the address, innermost first: more
	// than one when the code is inlined (Frames[0] is the inlined callee).
	Frames []elfsym.Frame
	// NewSource says the innermost file:line (or inline chain) differs from
	// the previous row's, where a listing prints the source line.
	NewSource bool
	// TargetLabel names a direct branch's or call's target ("sum_list+0x10",
	// "malloc@plt"); TargetRow is its row in this listing, -1 outside.
	TargetLabel string
	TargetRow   int
	// Symbol is the symbol holding the instruction, in a merged listing
	// of an inlined function's copies (Merge); "" otherwise.
	Symbol string
}

// Symbols is a symbol table sorted by address (elfsym.File.Symbols).
type Symbols []elfsym.Symbol

// At returns the symbol covering addr. A symbol of size 0 extends to the
// next one.
func (s Symbols) At(addr uint64) (elfsym.Symbol, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].Addr > addr }) - 1
	if i < 0 {
		return elfsym.Symbol{}, false
	}
	sym := s[i]
	end := sym.Addr + sym.Size
	if sym.Size == 0 && i+1 < len(s) {
		end = s[i+1].Addr
	}
	if addr >= end && !(sym.Size == 0 && i+1 == len(s)) {
		return elfsym.Symbol{}, false
	}
	return sym, true
}

// Named returns the function symbol called name (its linkage name, or the
// demangled name a profile shows).
func (s Symbols) Named(name string) (elfsym.Symbol, bool) {
	for _, sym := range s {
		if sym.Name == name {
			return sym, true
		}
	}
	for _, sym := range s {
		if strings.HasPrefix(sym.Name, "_Z") && elfsym.Demangle(sym.Name, false) == name {
			return sym, true
		}
	}
	return elfsym.Symbol{}, false
}

// Range is the symbol's address range as a Func; a symbol without a size
// ends at the next symbol.
func (s Symbols) Range(sym elfsym.Symbol) Func {
	f := Func{Name: sym.Name, Lo: sym.Addr, Hi: sym.Addr + sym.Size}
	if sym.Size == 0 {
		i := sort.Search(len(s), func(i int) bool { return s[i].Addr > sym.Addr })
		if i < len(s) {
			f.Hi = s[i].Addr
		}
	}
	return f
}

// label names addr as "sym+0xoff" ("sym" at its start).
func (s Symbols) label(addr uint64) string {
	sym, ok := s.At(addr)
	if !ok {
		return ""
	}
	if addr == sym.Addr {
		return sym.Name
	}
	return fmt.Sprintf("%s+%#x", sym.Name, addr-sym.Addr)
}

// ErrEmpty is returned for a function range with no code.
var ErrEmpty = errors.New("annotate: the function has no instructions")

// Build decodes fn and puts the samples (object addresses; those outside
// fn are ignored) on its instructions. lines may be nil (no line table).
func Build(code Code, lines Lines, syms Symbols, fn Func, samples []datatype.Sample) (*Listing, error) {
	insns, err := code.Disassemble(fn.Lo, fn.Hi)
	if err != nil {
		return nil, err
	}
	if len(insns) == 0 {
		return nil, ErrEmpty
	}
	l := &Listing{Func: fn, Arch: code.Arch(), Rows: make([]Row, len(insns))}
	index := make(map[uint64]int, len(insns))
	for i, in := range insns {
		l.Rows[i] = Row{Insn: in, TargetRow: -1}
		index[in.PC] = i
	}
	for _, s := range samples {
		if s.PC < fn.Lo || s.PC >= fn.Hi || s.Weight <= 0 {
			continue
		}
		l.Total += s.Weight
		// A sample inside an instruction (a bad address) counts on the
		// instruction holding it, as perf annotate does.
		i := sort.Search(len(insns), func(i int) bool { return insns[i].PC > s.PC }) - 1
		if i >= 0 {
			l.Rows[i].Self += s.Weight
		}
	}
	var prev string
	var buf []elfsym.Frame
	for i := range l.Rows {
		r := &l.Rows[i]
		if r.SkidFrom != 0 && r.Self > 0 {
			if j, ok := index[r.SkidFrom]; ok {
				l.Rows[j].SkidIn += r.Self
			}
		}
		if r.HasTarget {
			r.TargetLabel = syms.label(r.Target)
			if j, ok := index[r.Target]; ok && !r.Call {
				r.TargetRow = j
			}
		}
		if lines != nil {
			buf, _ = lines.Lookup(r.PC, buf[:0])
			r.Frames = append([]elfsym.Frame(nil), buf...)
		}
		key := sourceKey(r.Frames)
		r.NewSource = key != prev
		prev = key
	}
	return l, nil
}

func sourceKey(fr []elfsym.Frame) string {
	var sb strings.Builder
	for _, f := range fr {
		fmt.Fprintf(&sb, "%s:%d:%s|", f.File, f.Line, f.Name)
	}
	return sb.String()
}

// Hottest returns the indexes of the rows with the most self samples,
// heaviest first (at most n, none without samples).
func (l *Listing) Hottest(n int) []int {
	var idx []int
	for i, r := range l.Rows {
		if r.Self > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return l.Rows[idx[a]].Self > l.Rows[idx[b]].Self })
	if len(idx) > n {
		idx = idx[:n]
	}
	return idx
}

// Merge combines the listings of the symbols holding copies of the
// inlined function fn into one, as perf annotate's --inline views do: the
// instructions of fn's code (those whose source frames include fn), under
// fn's own source lines in line order, each naming its copy (Row.Symbol).
// Frames outside fn (the callers each copy is inlined in) are dropped, so
// that the same line of fn reads the same in every copy.
func Merge(fn string, parts []*Listing) *Listing {
	type keyed struct {
		row  Row
		file string
		line int
		part int
	}
	var rows []keyed
	out := &Listing{Func: Func{Name: fn}}
	for pi, l := range parts {
		out.Arch = l.Arch
		if pi == 0 || l.Func.Lo < out.Func.Lo {
			out.Func.Lo = l.Func.Lo
		}
		out.Func.Hi = max(out.Func.Hi, l.Func.Hi)
		for _, r := range l.Rows {
			k := -1
			for i, f := range r.Frames {
				if nameIs(f.Name, fn) {
					k = i
					break
				}
			}
			if k < 0 {
				continue
			}
			r.Frames = r.Frames[:k+1]
			r.Symbol = l.Func.Name
			rows = append(rows, keyed{row: r, file: r.Frames[k].File, line: r.Frames[k].Line, part: pi})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.line != b.line {
			return a.line < b.line
		}
		if a.part != b.part {
			return a.part < b.part
		}
		return a.row.PC < b.row.PC
	})
	index := map[uint64]int{}
	out.Rows = make([]Row, len(rows))
	for i, k := range rows {
		out.Rows[i] = k.row
		index[k.row.PC] = i
		out.Total += k.row.Self
	}
	var prev string
	for i := range out.Rows {
		r := &out.Rows[i]
		r.TargetRow = -1
		if j, ok := index[r.Target]; ok && r.HasTarget && !r.Call {
			r.TargetRow = j
		}
		key := r.Symbol + "|" + sourceKey(r.Frames)
		r.NewSource = key != prev
		prev = key
	}
	return out
}
