package datatype

import (
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"runtime"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// Reading a unit's DIEs for the lazy index (lazy.go) with a decoder of its
// own instead of dwarf.Reader. dwarf.Reader decodes every attribute of
// every DIE into an Entry, including the members of each struct the unit
// repeats, which it walks to skip them; that was most of a kernel
// profile's time. unitScan decodes only the attributes indexEntries looks
// at, jumps over type subtrees by their DW_AT_sibling links, and collects
// what it finds apart from the Binary, so that the units a batch of
// samples reaches are read on all cores and then added in order. A unit it
// cannot read (a form it does not know, malformed data) is read again by
// indexEntries, which gives the same index as before.

// errUnitScan says unitScan does not handle a unit; indexEntries reads it.
var errUnitScan = errors.New("unit not readable by unitScan")

// DWARF tags, attributes and forms unitScan decodes.
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

	formImplicitConst = 0x21
)

// abbrevSpec is one attribute of an abbreviation.
type abbrevSpec struct {
	attr, form uint32
	implicit   int64
}

// abbrevDecl is one abbreviation: a DIE's tag, whether it has children,
// its attributes, and their total size when every form has a fixed one
// (-1 otherwise), so that an uninteresting DIE is skipped in one step.
type abbrevDecl struct {
	tag      uint32
	children bool
	hasDecl  bool // DW_AT_declaration is among its attributes
	fixed    int
	specs    []abbrevSpec
}

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
// adds each unit's findings in turn. Callers hold b.mu; the readers only
// read the Binary.
func (b *Binary) indexUnits(units []int32) {
	if len(units) == 1 {
		f := b.scanUnit(units[0])
		b.addFound(&f)
		return
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
	for i := range found {
		<-done[i]
		b.addFound(&found[i])
		found[i] = unitFound{}
	}
	_ = g.Wait() // the readers return no errors: a unit they cannot read is marked slow
}

// addFound adds one unit's findings, as indexEntries would have.
func (b *Binary) addFound(f *unitFound) {
	if f.slow {
		r := b.dw.Reader()
		r.Seek(dwarf.Offset(b.units[f.unit].die))
		_ = b.indexEntries(r, f.unit, b.units[f.unit].end) // a malformed unit keeps what was read before the error
		return
	}
	for _, fn := range f.funcs {
		b.funcByEnt[fn.lo] = fn.die
	}
	b.funcs = append(b.funcs, f.funcs...)
	b.globals = append(b.globals, f.globals...)
	for _, d := range f.defs {
		b.addDefinition(d.key, d.size, d.off)
	}
	for _, d := range f.declared {
		if _, ok := b.declared[d.name]; !ok {
			b.declared[d.name] = d.off
		}
	}
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
	b   *Binary
	ui  *unitInfo
	u   int32
	r   reader
	off uint64 // .debug_info offset of r.B[0]
}

func (c *unitCursor) offsetSize() int {
	if c.ui.dwarf64 {
		return 8
	}
	return 4
}

// formSize is the size of a value of form, or -1 when it is not fixed.
func (c *unitCursor) formSize(form uint32) int {
	switch form {
	case 0x01: // addr
		return int(c.ui.addrSize)
	case 0x0b, 0x11, 0x25, 0x29, 0x0c: // data1 ref1 strx1 addrx1 flag
		return 1
	case 0x05, 0x12, 0x26, 0x2a: // data2 ref2 strx2 addrx2
		return 2
	case 0x27, 0x2b: // strx3 addrx3
		return 3
	case 0x06, 0x13, 0x28, 0x2c, 0x1c: // data4 ref4 strx4 addrx4 ref_sup4
		return 4
	case 0x07, 0x14, 0x20, 0x24: // data8 ref8 ref_sig8 ref_sup8
		return 8
	case 0x1e: // data16
		return 16
	case 0x0e, 0x17, 0x1f, 0x1d, 0x1f20, 0x1f21: // strp sec_offset line_strp strp_sup GNU_ref_alt GNU_strp_alt
		return c.offsetSize()
	case 0x10: // ref_addr
		if c.ui.version <= 2 {
			return int(c.ui.addrSize)
		}
		return c.offsetSize()
	case 0x19, formImplicitConst: // flag_present implicit_const
		return 0
	}
	return -1
}

// skip moves past one value of form.
func (c *unitCursor) skip(form uint32) error {
	if n := c.formSize(form); n >= 0 {
		c.r.Skip(n)
		return nil
	}
	switch form {
	case 0x0d, 0x0f, 0x15, 0x1a, 0x1b, 0x22, 0x23: // sdata udata ref_udata strx addrx loclistx rnglistx
		c.r.Uleb()
	case 0x08: // string
		for c.r.Pos < len(c.r.B) && c.r.B[c.r.Pos] != 0 {
			c.r.Pos++
		}
		c.r.Skip(1)
	case 0x09, 0x18: // block exprloc
		c.r.Skip(int(c.r.Uleb()))
	case 0x0a: // block1
		c.r.Skip(int(c.r.U8()))
	case 0x03: // block2
		c.r.Skip(int(c.r.U16()))
	case 0x04: // block4
		c.r.Skip(int(c.r.U32()))
	default:
		return errUnitScan
	}
	return nil
}

// uint reads a fixed-size unsigned value of n bytes.
func (c *unitCursor) uint(n int) uint64 {
	switch n {
	case 1:
		return uint64(c.r.U8())
	case 2:
		return uint64(c.r.U16())
	case 4:
		return uint64(c.r.U32())
	case 8:
		return c.r.U64()
	}
	c.r.Err = true
	return 0
}

// value decodes one attribute as debug/dwarf would give it in an Entry
// (the types and classes indexEntries and dwarf.Data.Ranges look at), for
// the forms unitScan decodes; others are errUnitScan.
func (c *unitCursor) value(s *abbrevSpec) (any, dwarf.Class, error) {
	switch s.form {
	case 0x01: // addr
		return c.uint(int(c.ui.addrSize)), dwarf.ClassAddress, nil
	case 0x29, 0x2a, 0x2c, 0x1b: // addrx1 addrx2 addrx4 addrx
		var i uint64
		if s.form == 0x1b {
			i = c.r.Uleb()
		} else {
			i = c.uint(c.formSize(s.form))
		}
		a, ok := c.b.addrx(c.u, i)
		if !ok {
			return nil, 0, errUnitScan
		}
		return a, dwarf.ClassAddress, nil
	case 0x0b, 0x05, 0x06, 0x07: // data1 data2 data4 data8
		if c.ui.version < 4 && (s.form == 0x06 || s.form == 0x07) {
			return nil, 0, errUnitScan // may be a section offset (DWARF 2-3)
		}
		return int64(c.uint(c.formSize(s.form))), dwarf.ClassConstant, nil
	case 0x0f: // udata
		return int64(c.r.Uleb()), dwarf.ClassConstant, nil
	case 0x0d: // sdata
		return c.r.Sleb(), dwarf.ClassConstant, nil
	case formImplicitConst:
		return s.implicit, dwarf.ClassConstant, nil
	case 0x0c: // flag
		return c.r.U8() != 0, dwarf.ClassFlag, nil
	case 0x19: // flag_present
		return true, dwarf.ClassFlag, nil
	case 0x11, 0x12, 0x13, 0x14: // ref1 ref2 ref4 ref8
		return dwarf.Offset(c.ui.off + c.uint(c.formSize(s.form))), dwarf.ClassReference, nil
	case 0x15: // ref_udata
		return dwarf.Offset(c.ui.off + c.r.Uleb()), dwarf.ClassReference, nil
	case 0x10: // ref_addr
		return dwarf.Offset(c.uint(c.formSize(s.form))), dwarf.ClassReference, nil
	case 0x17: // sec_offset
		v := int64(c.uint(c.offsetSize()))
		switch s.attr {
		case atRanges:
			return v, dwarf.ClassRangeListPtr, nil
		case atLocation:
			return v, dwarf.ClassLocListPtr, nil
		}
		return v, dwarf.ClassUnknown, nil
	case 0x22: // loclistx
		return c.r.Uleb(), dwarf.ClassLocList, nil
	case 0x23: // rnglistx
		return c.r.Uleb(), dwarf.ClassRngList, nil
	case 0x18, 0x09: // exprloc block
		return c.r.Bytes(c.r.Uleb()), dwarf.ClassExprLoc, nil
	case 0x0a: // block1
		return c.r.Bytes(uint64(c.r.U8())), dwarf.ClassBlock, nil
	case 0x03: // block2
		return c.r.Bytes(uint64(c.r.U16())), dwarf.ClassBlock, nil
	case 0x04: // block4
		return c.r.Bytes(uint64(c.r.U32())), dwarf.ClassBlock, nil
	case 0x08: // string
		return c.r.CStr(), dwarf.ClassString, nil
	case 0x0e: // strp
		return cString(c.b.strSec, c.uint(c.offsetSize()))
	case 0x1f: // line_strp
		return cString(c.b.lineStrSec, c.uint(c.offsetSize()))
	}
	return nil, 0, errUnitScan
}

// cString is the NUL-terminated string at off of a string section.
func cString(sec []byte, off uint64) (any, dwarf.Class, error) {
	if off >= uint64(len(sec)) {
		return nil, 0, errUnitScan
	}
	r := reader{B: sec, Pos: int(off)}
	s := r.CStr()
	if r.Err {
		return nil, 0, errUnitScan
	}
	return s, dwarf.ClassString, nil
}

// parseAbbrevs parses the abbreviation table at off of .debug_abbrev.
func (c *unitCursor) parseAbbrevs(off uint64) ([]abbrevDecl, map[uint64]*abbrevDecl, error) {
	if off >= uint64(len(c.b.abbrevSec)) {
		return nil, nil, errUnitScan
	}
	r := reader{B: c.b.abbrevSec, Pos: int(off)}
	var dense []abbrevDecl
	var sparse map[uint64]*abbrevDecl
	for {
		code := r.Uleb()
		if code == 0 || r.Err {
			break
		}
		d := abbrevDecl{tag: uint32(r.Uleb()), children: r.U8() != 0}
		for {
			at, form := r.Uleb(), r.Uleb()
			if at == 0 && form == 0 || r.Err {
				break
			}
			s := abbrevSpec{attr: uint32(at), form: uint32(form)}
			if form == formImplicitConst {
				s.implicit = r.Sleb()
			}
			d.specs = append(d.specs, s)
			d.hasDecl = d.hasDecl || at == atDeclaration
			if n := c.formSize(s.form); n >= 0 && d.fixed >= 0 {
				d.fixed += n
			} else {
				d.fixed = -1
			}
		}
		if code == uint64(len(dense))+1 && sparse == nil {
			dense = append(dense, d)
			continue
		}
		if sparse == nil {
			sparse = map[uint64]*abbrevDecl{}
		}
		sparse[code] = &d
	}
	if r.Err {
		return nil, nil, errUnitScan
	}
	return dense, sparse, nil
}

// scanUnitDIEs walks unit u's DIEs after its top one into found, as
// indexEntries does.
func (b *Binary) scanUnitDIEs(u int32, found *unitFound) error {
	ui := &b.units[u]
	if b.order != binary.LittleEndian || ui.addrSize != 8 || ui.die >= ui.end || ui.end > uint64(len(b.info)) {
		return errUnitScan
	}
	c := &unitCursor{b: b, ui: ui, u: u, r: reader{B: b.info[ui.die:ui.end]}, off: ui.die}
	dense, sparse, err := c.parseAbbrevs(ui.abbrevOff)
	if err != nil {
		return err
	}
	abbrev := func(code uint64) *abbrevDecl {
		if code >= 1 && code <= uint64(len(dense)) {
			return &dense[code-1]
		}
		return sparse[code]
	}
	// skipAttrs moves past a DIE's attributes, returning its sibling
	// link's position in .debug_info (0: none).
	skipAttrs := func(d *abbrevDecl) (uint64, error) {
		if d.fixed >= 0 && !d.children {
			c.r.Skip(d.fixed)
			return 0, nil
		}
		var sib uint64
		for i := range d.specs {
			s := &d.specs[i]
			if s.attr == atSibling && d.children {
				v, _, err := c.value(s)
				if err != nil {
					return 0, err
				}
				if o, ok := v.(dwarf.Offset); ok {
					sib = uint64(o)
				}
				continue
			}
			if err := c.skip(s.form); err != nil {
				return 0, err
			}
		}
		return sib, nil
	}
	// skipChildren moves past the children of a DIE whose attributes were
	// just read: to its sibling when it names one after them, else DIE by
	// DIE to the null entry that ends them.
	skipChildren := func(sib uint64) error {
		if here := c.off + uint64(c.r.Pos); sib >= here && sib <= ui.end {
			c.r.Pos = int(sib - c.off)
			return nil
		}
		for depth := 1; depth > 0; {
			code := c.r.Uleb()
			if c.r.Err {
				return errUnitScan
			}
			if code == 0 {
				depth--
				continue
			}
			d := abbrev(code)
			if d == nil {
				return errUnitScan
			}
			s, err := skipAttrs(d)
			if err != nil {
				return err
			}
			if d.children {
				if here := c.off + uint64(c.r.Pos); s >= here && s <= ui.end {
					c.r.Pos = int(s - c.off)
				} else {
					depth++
				}
			}
		}
		return nil
	}
	// The top DIE: its bases were noted when Open read it.
	code := c.r.Uleb()
	top := abbrev(code)
	if c.r.Err || top == nil {
		return errUnitScan
	}
	if _, err := skipAttrs(top); err != nil {
		return err
	}
	var e dwarf.Entry
	fields := make([]dwarf.Field, 0, 8)
	for !c.r.Err && c.r.Pos < len(c.r.B) {
		off := c.off + uint64(c.r.Pos)
		code := c.r.Uleb()
		if c.r.Err {
			return errUnitScan
		}
		if code == 0 {
			continue
		}
		d := abbrev(code)
		if d == nil {
			return errUnitScan
		}
		var want func(uint32) bool
		switch d.tag {
		case tagSubprogram:
			want = func(a uint32) bool { return a == atLowpc || a == atHighpc || a == atRanges }
		case tagVariable:
			want = func(a uint32) bool { return a == atLocation }
			if d.hasDecl { // a name and type are kept only for a declaration
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
			sib, err := skipAttrs(d)
			if err != nil {
				return err
			}
			if d.children {
				if err := skipChildren(sib); err != nil {
					return err
				}
			}
			continue
		default:
			if _, err := skipAttrs(d); err != nil {
				return err
			}
			continue
		}
		fields = fields[:0]
		for i := range d.specs {
			s := &d.specs[i]
			if !want(s.attr) {
				if err := c.skip(s.form); err != nil {
					return err
				}
				continue
			}
			v, class, err := c.value(s)
			if err != nil {
				return err
			}
			fields = append(fields, dwarf.Field{Attr: dwarf.Attr(s.attr), Val: v, Class: class})
		}
		if c.r.Err {
			return errUnitScan
		}
		e = dwarf.Entry{Offset: dwarf.Offset(off), Tag: dwarf.Tag(d.tag), Children: d.children, Field: fields}
		switch d.tag {
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
			if d.children {
				sib, _ := e.Val(dwarf.AttrSibling).(dwarf.Offset)
				if err := skipChildren(uint64(sib)); err != nil {
					return err
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
		if rs, err = b.dw.Ranges(e); err != nil {
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
