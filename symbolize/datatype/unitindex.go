package datatype

import (
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"runtime"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"viewer/symbolize/dwarfbuf"
)

// Reading a unit's DIEs for the index, the full one (index) and the lazy
// one (lazy.go), skipping what the index does not read. A dieReader
// (dies.go), like dwarf.Reader, decodes every attribute of every DIE into
// an Entry, including the members of each struct the unit repeats, which
// it walks to skip them; that was most of a kernel profile's time. unitScan decodes
// only the attributes indexEntries looks at, jumps over type subtrees by
// their DW_AT_sibling links, and collects what it finds apart from the
// Binary, so that units are read on all cores and then added in order.
// The walk (dwarfbuf.Entries), unit headers, abbreviation tables and forms
// are dwarfbuf's, which elfsym's function and line decoder reads with too;
// this file chooses what to read and turns values into the Entry fields
// indexEntries expects. A unit it cannot read (a form it does not know,
// malformed data) is read again by indexEntries, which gives the same
// index as before (TestUnitScanMatchesReader, TestFullIndexMatchesReader).

// errUnitScan says unitScan does not handle a unit; indexEntries reads it.
var errUnitScan = errors.New("unit not readable by unitScan")

// DWARF tags and attributes unitScan decodes.
const (
	tagArrayType       = 0x01
	tagClassType       = 0x02
	tagEnumerationType = 0x04
	tagStructType      = 0x13
	tagSubroutineType  = 0x15
	tagUnionType       = 0x17
	tagSubprogram      = 0x2e
	tagVariable        = 0x34
	tagCallSite        = 0x48
	tagGNUCallSite     = 0x4109

	atSibling     = 0x01
	atLocation    = 0x02
	atName        = 0x03
	atByteSize    = 0x0b
	atLowpc       = 0x11
	atHighpc      = 0x12
	atDeclaration = 0x3c
	atType        = 0x49
	atRanges      = 0x55
)

// unitFound is what indexing one unit adds to the Binary.
type unitFound struct {
	unit     int32
	slow     bool // unitScan could not read it: indexEntries must
	funcs    []funcRange
	globals  []global
	defs     []defFound
	declared []declFound
}

type defFound struct {
	key  defKey
	size int64
	off  dwarf.Offset
}

type declFound struct {
	name string
	off  dwarf.Offset
}

// indexUnits indexes the DIEs of units (in this order, as if one after
// the other), reading them on up to GOMAXPROCS goroutines while this one
// adds each unit's findings in turn. Callers hold b.mu (or Open has not
// returned the Binary yet); the readers only read the Binary. The error is
// the first of a dieReader, for a unit unitScan could not read.
func (b *Binary) indexUnits(units []int32) error {
	if len(units) == 1 {
		f := b.scanUnit(units[0])
		return b.addFound(&f)
	}
	found := make([]unitFound, len(units))
	done := make([]chan struct{}, len(units))
	for i := range done {
		done[i] = make(chan struct{})
	}
	var next atomic.Int64
	var g errgroup.Group
	for range min(runtime.GOMAXPROCS(0), len(units)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(units) {
					return nil
				}
				found[i] = b.scanUnit(units[i])
				close(done[i])
			}
		})
	}
	var first error
	for i := range found {
		<-done[i]
		if err := b.addFound(&found[i]); err != nil && first == nil {
			first = err
		}
		found[i] = unitFound{}
	}
	_ = g.Wait() // the readers return no errors: a unit they cannot read is marked slow
	return first
}

// addFound adds one unit's findings, as indexEntries would have; a unit
// unitScan could not read is read by indexEntries, whose error it returns
// (the unit keeps what was read before it).
func (b *Binary) addFound(f *unitFound) error {
	if f.slow {
		r := b.reader()
		r.Seek(dwarf.Offset(b.units[f.unit].DIEOff))
		return b.indexEntries(r, f.unit, b.units[f.unit].End)
	}
	for _, fn := range f.funcs {
		b.funcByEnt[fn.lo] = fn.die
	}
	b.funcs = append(b.funcs, f.funcs...)
	b.globals = append(b.globals, f.globals...)
	for _, d := range f.defs {
		b.addDefinition(d.key, d.size, d.off)
	}
	if !b.lazy {
		return nil // declarations only stand in for units not indexed
	}
	for _, d := range f.declared {
		if _, ok := b.declared[d.name]; !ok {
			b.declared[d.name] = d.off
		}
	}
	return nil
}

// scanUnit reads unit u's DIEs after its top one. Safe to run
// concurrently with other scanUnit calls.
func (b *Binary) scanUnit(u int32) (found unitFound) {
	found.unit = u
	defer func() {
		if r := recover(); r != nil {
			found = unitFound{unit: u, slow: true}
		}
	}()
	if err := b.scanUnitDIEs(u, &found); err != nil {
		return unitFound{unit: u, slow: true}
	}
	return found
}

// unitCursor decodes attribute values of one unit.
type unitCursor struct {
	b  *Binary
	ui *unitInfo
	u  int32
	r  dwarfbuf.Entries
}

// value decodes one attribute as debug/dwarf would give it in an Entry
// (formValue), for the forms unitScan decodes; others, and constants that
// may be section offsets (DWARF 2-3), are errUnitScan.
func (c *unitCursor) value(s *dwarfbuf.AttrSpec) (any, dwarf.Class, error) {
	enc := c.ui.Encoding
	switch s.Form {
	case dwarfbuf.FormAddrx1, dwarfbuf.FormAddrx2, dwarfbuf.FormAddrx4, dwarfbuf.FormAddrx:
		i, _ := c.r.FormUint(s.Form, 0, enc)
		a, ok := c.b.addrx(c.u, i)
		if !ok {
			return nil, 0, errUnitScan
		}
		return a, dwarf.ClassAddress, nil
	case dwarfbuf.FormRnglistx:
		off, err := c.b.rnglistAt(c.ui.rnglistsBase, c.r.Uleb(), enc)
		if err != nil {
			return nil, 0, errUnitScan
		}
		return off, dwarf.ClassRngList, nil
	case dwarfbuf.FormData4, dwarfbuf.FormData8:
		if enc.Version < 4 {
			return nil, 0, errUnitScan // may be a section offset (DWARF 2-3)
		}
	case dwarfbuf.FormIndirect, dwarfbuf.FormStrx, dwarfbuf.FormStrx1, dwarfbuf.FormStrx2, dwarfbuf.FormStrx3, dwarfbuf.FormStrx4, dwarfbuf.FormAddrx3:
		return nil, 0, errUnitScan
	}
	v, class, err := formValue(&c.r, s.Form, s, c.b)
	if err != nil {
		return nil, 0, errUnitScan
	}
	return v, class, nil
}

// errStrOffset: a string offset out of its string section.
var errStrOffset = errors.New("string offset out of its section")

// cString is the NUL-terminated string at off of a string section.
func cString(sec []byte, off uint64) (any, dwarf.Class, error) {
	if off >= uint64(len(sec)) {
		return nil, 0, errStrOffset
	}
	r := reader{B: sec, Pos: int(off)}
	s := r.CStr()
	if r.Err {
		return nil, 0, errStrOffset
	}
	return s, dwarf.ClassString, nil
}

// scanUnitDIEs walks unit u's DIEs after its top one into found, as
// indexEntries does.
func (b *Binary) scanUnitDIEs(u int32, found *unitFound) error {
	ui := &b.units[u]
	if b.order != binary.LittleEndian || ui.AddrSize != 8 || ui.DIEOff >= ui.End || ui.End > uint64(len(b.info)) {
		return errUnitScan
	}
	tab, err := b.abbrevs(ui) // parsed when Open read the unit's top DIE
	if err != nil {
		return errUnitScan
	}
	c := &unitCursor{b: b, ui: ui, u: u, r: dwarfbuf.NewEntries(b.info, &ui.Unit, tab, b.order)}
	// The top DIE: its bases were noted when Open read it.
	top, err := c.r.Next()
	if err != nil || top == nil {
		return errUnitScan
	}
	if _, err := c.r.SkipAttrs(top); err != nil {
		return errUnitScan
	}
	var e dwarf.Entry
	fields := make([]dwarf.Field, 0, 8)
	for !c.r.Err && !c.r.Done() {
		off := c.r.Offset()
		d, err := c.r.Next()
		if err != nil {
			return errUnitScan
		}
		if d == nil {
			continue
		}
		var want func(uint32) bool
		switch d.Tag {
		case tagSubprogram:
			want = func(a uint32) bool { return a == atLowpc || a == atHighpc || a == atRanges }
		case tagVariable:
			want = func(a uint32) bool { return a == atLocation }
			if d.Has(atDeclaration) { // a name and type are kept only for a declaration
				want = func(a uint32) bool {
					return a == atLocation || a == atDeclaration || a == atName || a == atType
				}
			}
		case tagStructType, tagUnionType, tagClassType:
			want = func(a uint32) bool {
				return a == atName || a == atByteSize || a == atDeclaration || a == atSibling
			}
		case tagEnumerationType, tagSubroutineType, tagArrayType, tagCallSite, tagGNUCallSite:
			// Skipped with their children: no functions or variables in them.
			sib, err := c.r.SkipAttrs(d)
			if err != nil {
				return errUnitScan
			}
			if d.Children {
				if err := c.r.SkipChildren(sib); err != nil {
					return errUnitScan
				}
			}
			continue
		default:
			if _, err := c.r.SkipAttrs(d); err != nil {
				return errUnitScan
			}
			continue
		}
		fields = fields[:0]
		for i := range d.Attrs {
			s := &d.Attrs[i]
			if !want(s.Attr) {
				if err := c.r.SkipValue(s.Form); err != nil {
					return errUnitScan
				}
				continue
			}
			v, class, err := c.value(s)
			if err != nil {
				return err
			}
			fields = append(fields, dwarf.Field{Attr: dwarf.Attr(s.Attr), Val: v, Class: class})
		}
		if c.r.Err {
			return errUnitScan
		}
		e = dwarf.Entry{Offset: dwarf.Offset(off), Tag: dwarf.Tag(d.Tag), Children: d.Children, Field: fields}
		switch d.Tag {
		case tagSubprogram:
			if err := b.scanFunc(&e, found); err != nil {
				return err
			}
		case tagVariable:
			if expr, ok := e.Val(dwarf.AttrLocation).([]byte); ok && len(expr) > 0 && (expr[0] == opAddr || expr[0] == opAddrx) {
				if l := b.decode(expr, u); l.kind == locAddr {
					found.globals = append(found.globals, global{addr: l.addr, die: e.Offset, unit: u})
				}
			} else if e.Val(dwarf.AttrDeclaration) != nil {
				if name, _ := e.Val(dwarf.AttrName).(string); name != "" && e.Val(dwarf.AttrType) != nil {
					found.declared = append(found.declared, declFound{name: name, off: e.Offset})
				}
			}
		default: // struct, union, class
			if k, size, ok := definitionOf(&e); ok {
				found.defs = append(found.defs, defFound{key: k, size: size, off: e.Offset})
			}
			if d.Children {
				sib, _ := e.Val(dwarf.AttrSibling).(dwarf.Offset)
				if err := c.r.SkipChildren(uint64(sib)); err != nil {
					return errUnitScan
				}
			}
		}
	}
	if c.r.Err {
		return errUnitScan
	}
	return nil
}

// scanFunc adds a subprogram's code ranges, as indexEntries does.
func (b *Binary) scanFunc(e *dwarf.Entry, found *unitFound) error {
	low, lowOK := e.Val(dwarf.AttrLowpc).(uint64)
	if !lowOK && e.Val(dwarf.AttrRanges) == nil {
		return nil
	}
	var rs [][2]uint64
	if e.Val(dwarf.AttrRanges) != nil {
		var err error
		if rs, err = b.ranges(e); err != nil {
			return nil
		}
	} else if f := e.AttrField(dwarf.AttrHighpc); f != nil {
		switch v := f.Val.(type) {
		case uint64:
			if f.Class == dwarf.ClassAddress {
				rs = [][2]uint64{{low, v}}
			}
		case int64:
			if f.Class == dwarf.ClassConstant {
				rs = [][2]uint64{{low, low + uint64(v)}}
			}
		}
	}
	for _, rg := range rs {
		if rg[1] > rg[0] {
			found.funcs = append(found.funcs, funcRange{lo: rg[0], hi: rg[1], die: e.Offset, unit: found.unit})
		}
	}
	return nil
}
