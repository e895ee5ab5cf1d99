package dwarfbuf

import (
	"fmt"
	"slices"
	"sync"
)

// AttrSpec is one attribute of an abbreviation: its DW_AT code, its form
// and, for DW_FORM_implicit_const, the value the abbreviation holds.
type AttrSpec struct {
	Attr, Form uint32
	Implicit   int64
}

// Abbrev is one abbreviation of .debug_abbrev: the tag of the DIEs that
// use it, whether they have children, their attributes in order, and the
// attributes' total size when every form has a fixed one in the unit's
// encoding (-1 otherwise), so that a DIE nobody reads is skipped in one step.
type Abbrev struct {
	Tag      uint32
	Children bool
	Attrs    []AttrSpec
	Fixed    int
}

// Has reports whether the abbreviation lists attribute attr.
func (a *Abbrev) Has(attr uint32) bool {
	for i := range a.Attrs {
		if a.Attrs[i].Attr == attr {
			return true
		}
	}
	return false
}

// Abbrevs is one abbreviation table, as a unit's header names it.
// Producers number codes from 1 in order, which dense holds by position;
// other codes are in sparse.
type Abbrevs struct {
	dense  []Abbrev // code i at i-1
	sparse map[uint64]*Abbrev
}

// Get is the abbreviation of code, nil if the table has none.
func (t *Abbrevs) Get(code uint64) *Abbrev {
	if code >= 1 && code <= uint64(len(t.dense)) {
		return &t.dense[code-1]
	}
	return t.sparse[code]
}

// abbrevScratch holds a table while it is parsed, to be copied into
// allocations of its exact size: growing them as it is read allocated
// twice the bytes.
type abbrevScratch struct {
	all   []Abbrev
	codes []uint64
	ends  []int32 // abbreviation i's attributes end at specs[ends[i]]
	specs []AttrSpec
}

var scratchPool = sync.Pool{New: func() any { return new(abbrevScratch) }}

// ParseAbbrevs parses the abbreviation table at off of the section abbrev
// (.debug_abbrev), for a unit of encoding e (which sizes Fixed). An offset
// out of the section or a table cut short is an error. The table is two
// allocations of its exact size (and a map when its codes are not 1, 2,
// 3...): the attributes of all its abbreviations share one array.
func ParseAbbrevs(abbrev []byte, off uint64, e Encoding) (*Abbrevs, error) {
	if off >= uint64(len(abbrev)) {
		return nil, fmt.Errorf(".debug_abbrev: offset %#x out of range", off)
	}
	sc := scratchPool.Get().(*abbrevScratch)
	defer func() {
		sc.all, sc.codes, sc.ends, sc.specs = sc.all[:0], sc.codes[:0], sc.ends[:0], sc.specs[:0]
		scratchPool.Put(sc)
	}()
	r := Reader{B: abbrev, Pos: int(off)}
	for {
		code := r.Uleb()
		if code == 0 || r.Err {
			break
		}
		a := Abbrev{Tag: uint32(r.Uleb()), Children: r.U8() != 0}
		for {
			at, form := r.Uleb(), r.Uleb()
			if at == 0 && form == 0 || r.Err {
				break
			}
			s := AttrSpec{Attr: uint32(at), Form: uint32(form)}
			if form == FormImplicitConst {
				s.Implicit = r.Sleb()
			}
			sc.specs = append(sc.specs, s)
			if n := e.FormSize(s.Form); n >= 0 && a.Fixed >= 0 {
				a.Fixed += n
			} else {
				a.Fixed = -1
			}
		}
		sc.all = append(sc.all, a)
		sc.codes = append(sc.codes, code)
		sc.ends = append(sc.ends, int32(len(sc.specs)))
	}
	if r.Err {
		return nil, fmt.Errorf(".debug_abbrev at %#x: truncated", off)
	}
	all := slices.Clone(sc.all)
	specs := slices.Clone(sc.specs)
	t := &Abbrevs{}
	start := int32(0)
	for i := range all {
		end := sc.ends[i]
		if start < end {
			all[i].Attrs = specs[start:end:end]
		}
		start = end
		if sc.codes[i] == uint64(i)+1 && t.sparse == nil {
			continue
		}
		if t.sparse == nil {
			t.dense = all[:i:i]
			t.sparse = map[uint64]*Abbrev{}
		}
		t.sparse[sc.codes[i]] = &all[i]
	}
	if t.sparse == nil {
		t.dense = all
	}
	return t, nil
}
