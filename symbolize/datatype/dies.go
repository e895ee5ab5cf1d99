package datatype

import (
	"debug/dwarf"
	"errors"
	"fmt"

	"viewer/symbolize/dwarfbuf"
)

// Reading DIEs one at a time (types, scopes, attribute lookups, the units
// unitScan leaves) with dwarfbuf's reader instead of debug/dwarf's: a
// dieReader gives the same dwarf.Entry values dwarf.Reader gives (every
// attribute, of the Go type and class debug/dwarf uses), and ranges is
// dwarf.Data.Ranges. debug/dwarf's exported types stay the representation;
// its reader (dwarf.New, which checked and listed every unit) is no longer
// built. A unit's abbreviation table is parsed when its top DIE is first
// read and kept for every later read, unitScan's included.

// entryReader is what the walks over DIEs (indexEntries, readScope) need of
// a reader: a dieReader, or in tests dwarf.Reader, to compare the two.
type entryReader interface {
	Next() (*dwarf.Entry, error)
	SkipChildren()
}

// dieReader is a cursor over the DIEs of .debug_info, unit after unit.
type dieReader struct {
	b        *Binary
	u        int32 // the unit d reads; -1 before the first
	d        dwarfbuf.Entries
	err      error
	children bool   // the entry Next returned last has children
	sibling  uint64 // and this DW_AT_sibling link (0: none)
}

// reader is a dieReader at the first DIE of .debug_info.
func (b *Binary) reader() *dieReader {
	r := &dieReader{b: b, u: -1}
	if len(b.units) > 0 {
		r.Seek(dwarf.Offset(b.units[0].DIEOff))
	}
	return r
}

// Seek moves to the DIE at off; an offset in no unit makes Next fail.
func (r *dieReader) Seek(off dwarf.Offset) {
	r.children, r.sibling = false, 0
	u := r.b.unitOf(off)
	if u < 0 || uint64(off) < r.b.units[u].DIEOff {
		r.err = fmt.Errorf("no DIE at %#x", off)
		return
	}
	if u != r.u || r.err != nil {
		if r.err = r.start(u); r.err != nil {
			return
		}
	}
	r.d.Seek(uint64(off))
}

// start points the cursor at the first DIE of unit u.
func (r *dieReader) start(u int32) error {
	ui := &r.b.units[u]
	if ui.End > uint64(len(r.b.info)) || ui.DIEOff > ui.End {
		return fmt.Errorf("unit at %#x runs past .debug_info", ui.Off)
	}
	tab, err := r.b.abbrevs(ui)
	if err != nil {
		return err
	}
	r.u = u
	r.d = dwarfbuf.NewEntries(r.b.info, &ui.Unit, tab, r.b.order)
	return nil
}

// abbrevs is the abbreviation table of unit ui, parsed on first use and
// kept (units of one file mostly have a table each; a type or scope read
// again in a unit then parses none).
func (b *Binary) abbrevs(ui *unitInfo) (*dwarfbuf.Abbrevs, error) {
	k := abbrevKey{ui.AbbrevOff, ui.Encoding}
	b.abbrevMu.Lock()
	defer b.abbrevMu.Unlock()
	if t, ok := b.abbrevTabs[k]; ok {
		return t, nil
	}
	t, err := dwarfbuf.ParseAbbrevs(b.abbrevSec, ui.AbbrevOff, ui.Encoding)
	if err != nil {
		return nil, err
	}
	if b.abbrevTabs == nil {
		b.abbrevTabs = map[abbrevKey]*dwarfbuf.Abbrevs{}
	}
	b.abbrevTabs[k] = t
	return t, nil
}

// abbrevKey names a parsed table: its offset, and the encoding that sized
// its fixed-size attributes.
type abbrevKey struct {
	off uint64
	enc dwarfbuf.Encoding
}

// Next reads the next DIE, as dwarf.Reader.Next: a null entry is an Entry
// with tag 0, the end of .debug_info is nil.
func (r *dieReader) Next() (*dwarf.Entry, error) {
	if r.err != nil {
		return nil, r.err
	}
	for r.u < 0 || r.d.Done() {
		if int(r.u)+1 >= len(r.b.units) {
			return nil, nil
		}
		if r.err = r.start(r.u + 1); r.err != nil {
			return nil, r.err
		}
	}
	off := r.d.Offset()
	a, err := r.d.Next()
	if err != nil {
		r.err = err
		return nil, err
	}
	r.children, r.sibling = false, 0
	if a == nil {
		return &dwarf.Entry{}, nil
	}
	e, err := r.entry(off, a)
	if err != nil {
		r.err = fmt.Errorf("DIE at %#x: %w", off, err)
		return nil, r.err
	}
	if a.Children {
		r.children = true
		if s, ok := e.Val(dwarf.AttrSibling).(dwarf.Offset); ok {
			r.sibling = uint64(s)
		}
	}
	return e, nil
}

// SkipChildren moves past the children of the entry Next returned last,
// if it has any.
func (r *dieReader) SkipChildren() {
	if r.err != nil || !r.children {
		return
	}
	r.children = false
	if err := r.d.SkipChildren(r.sibling); err != nil {
		r.err = err
	}
}

// indexed is an attribute value read as an index (DW_FORM_strx*,
// addrx*, rnglistx), resolved once the DIE's other attributes are read:
// a unit's top DIE holds the bases its own indices are relative to.
type indexed struct {
	field int
	form  uint32
	i     uint64
}

// entry decodes the attributes of the DIE at off, of abbreviation a.
func (r *dieReader) entry(off uint64, a *dwarfbuf.Abbrev) (*dwarf.Entry, error) {
	e := &dwarf.Entry{Offset: dwarf.Offset(off), Tag: dwarf.Tag(a.Tag), Children: a.Children, Field: make([]dwarf.Field, len(a.Attrs))}
	var later []indexed
	for i := range a.Attrs {
		s := &a.Attrs[i]
		form := s.Form
		if form == dwarfbuf.FormIndirect {
			form = uint32(r.d.Uleb())
		}
		f := &e.Field[i]
		f.Attr = dwarf.Attr(s.Attr)
		switch form {
		case dwarfbuf.FormStrx, dwarfbuf.FormStrx1, dwarfbuf.FormStrx2, dwarfbuf.FormStrx3, dwarfbuf.FormStrx4,
			dwarfbuf.FormAddrx, dwarfbuf.FormAddrx1, dwarfbuf.FormAddrx2, dwarfbuf.FormAddrx3, dwarfbuf.FormAddrx4,
			dwarfbuf.FormRnglistx:
			x, _ := r.d.FormUint(form, 0, r.d.Unit.Encoding)
			later = append(later, indexed{field: i, form: form, i: x})
			continue
		}
		v, class, err := formValue(&r.d, form, s, r.b)
		if err != nil {
			return nil, err
		}
		f.Val, f.Class = v, class
	}
	if err := r.d.Error(); err != nil {
		return nil, err
	}
	if len(later) == 0 {
		return e, nil
	}
	ui := &r.b.units[r.u]
	strBase, addrBase, rngBase := ui.strOffsetsBase, ui.addrBase, ui.rnglistsBase
	if off == ui.DIEOff { // the top DIE: its own bases
		strBase, addrBase, rngBase = baseOf(e, dwarf.AttrStrOffsetsBase), baseOf(e, dwarf.AttrAddrBase), baseOf(e, dwarf.AttrRnglistsBase)
	}
	for _, x := range later {
		f := &e.Field[x.field]
		var err error
		switch x.form {
		case dwarfbuf.FormRnglistx:
			f.Class = dwarf.ClassRngList
			f.Val, err = r.b.rnglistAt(rngBase, x.i, ui.Encoding)
		case dwarfbuf.FormAddrx, dwarfbuf.FormAddrx1, dwarfbuf.FormAddrx2, dwarfbuf.FormAddrx3, dwarfbuf.FormAddrx4:
			f.Class = dwarf.ClassAddress
			v, ok := r.b.addrAt(addrBase, x.i, int(ui.AddrSize))
			if !ok {
				return nil, errAddrIndex
			}
			f.Val = v
		default: // strx
			f.Class = dwarf.ClassString
			var o uint64
			if o, err = r.b.offsetAt(r.b.strOffsets, strBase, x.i, ui.Encoding); err == nil {
				f.Val, _, err = cString(r.b.strSec, o)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

// errAddrIndex: an index into .debug_addr past its end.
var errAddrIndex = errors.New("address index out of .debug_addr")

// baseOf is a unit's base attribute (DW_AT_str_offsets_base and the like)
// in its top DIE e, 0 when absent.
func baseOf(e *dwarf.Entry, a dwarf.Attr) uint64 {
	v, _ := e.Val(a).(int64)
	return uint64(v)
}

// rnglistAt is the .debug_rnglists offset of range list i of a unit whose
// DW_AT_rnglists_base is base (DW_FORM_rnglistx).
func (b *Binary) rnglistAt(base, i uint64, enc dwarfbuf.Encoding) (uint64, error) {
	off, err := b.offsetAt(b.rnglists, base, i, enc)
	return base + off, err
}

// offsetAt reads entry i of an offset table at base of sec
// (.debug_str_offsets, .debug_rnglists), entries of the unit's offset size.
func (b *Binary) offsetAt(sec []byte, base, i uint64, enc dwarfbuf.Encoding) (uint64, error) {
	n := uint64(enc.OffsetSize())
	p := base + i*n
	if p < base || p+n > uint64(len(sec)) || p+n < p {
		return 0, errors.New("index out of its offset table")
	}
	rd := reader{B: sec, Pos: int(p), Order: b.order}
	return rd.Uint(int(n)), nil
}

// formValue reads one attribute value of form (not an index form) as
// debug/dwarf gives it: the Go type of Field.Val and its class.
func formValue(d *dwarfbuf.Entries, form uint32, s *dwarfbuf.AttrSpec, b *Binary) (any, dwarf.Class, error) {
	enc := d.Unit.Encoding
	attr := dwarf.Attr(s.Attr)
	switch form {
	case dwarfbuf.FormAddr:
		return d.Uint(int(enc.AddrSize)), dwarf.ClassAddress, nil
	case dwarfbuf.FormBlock1, dwarfbuf.FormBlock2, dwarfbuf.FormBlock4, dwarfbuf.FormBlock:
		var n uint64
		switch form {
		case dwarfbuf.FormBlock1:
			n = uint64(d.U8())
		case dwarfbuf.FormBlock2:
			n = uint64(d.U16())
		case dwarfbuf.FormBlock4:
			n = uint64(d.U32())
		default:
			n = d.Uleb()
		}
		if exprAttr(attr) {
			return d.Bytes(n), dwarf.ClassExprLoc, nil
		}
		return d.Bytes(n), dwarf.ClassBlock, nil
	case dwarfbuf.FormData1, dwarfbuf.FormData2, dwarfbuf.FormData4, dwarfbuf.FormData8,
		dwarfbuf.FormSdata, dwarfbuf.FormUdata, dwarfbuf.FormImplicitConst:
		v, _ := d.FormUint(form, s.Implicit, enc)
		if c := ptrClass(attr); c != 0 && enc.Version < 4 {
			return int64(v), c, nil
		}
		return int64(v), dwarf.ClassConstant, nil
	case dwarfbuf.FormData16:
		return d.Bytes(16), dwarf.ClassConstant, nil
	case dwarfbuf.FormFlag:
		return d.U8() == 1, dwarf.ClassFlag, nil
	case dwarfbuf.FormFlagPresent:
		return true, dwarf.ClassFlag, nil
	case dwarfbuf.FormRefAddr:
		v, _ := d.FormUint(form, 0, enc)
		return dwarf.Offset(v), dwarf.ClassReference, nil
	case dwarfbuf.FormRef1, dwarfbuf.FormRef2, dwarfbuf.FormRef4, dwarfbuf.FormRef8, dwarfbuf.FormRefUdata:
		v, _ := d.FormUint(form, 0, enc)
		return dwarf.Offset(d.Unit.Off + v), dwarf.ClassReference, nil
	case dwarfbuf.FormRefSup4:
		return d.U32(), dwarf.ClassReference, nil
	case dwarfbuf.FormRefSup8:
		return d.U64(), dwarf.ClassReference, nil
	case dwarfbuf.FormRefSig8:
		return d.U64(), dwarf.ClassReferenceSig, nil
	case dwarfbuf.FormString:
		return d.CStr(), dwarf.ClassString, nil
	case dwarfbuf.FormStrp:
		return cString(b.strSec, d.Uint(enc.OffsetSize()))
	case dwarfbuf.FormLineStrp:
		return cString(b.lineStrSec, d.Uint(enc.OffsetSize()))
	case dwarfbuf.FormStrpSup:
		if enc.Dwarf64 {
			return d.U64(), dwarf.ClassString, nil
		}
		return d.U32(), dwarf.ClassString, nil
	case dwarfbuf.FormSecOffset:
		return int64(d.Uint(enc.OffsetSize())), ptrClass(attr), nil // ClassUnknown (0) for other attributes
	case dwarfbuf.FormGNURefAlt:
		return int64(d.Uint(enc.OffsetSize())), dwarf.ClassReferenceAlt, nil
	case dwarfbuf.FormGNUStrpAlt:
		return int64(d.Uint(enc.OffsetSize())), dwarf.ClassStringAlt, nil
	case dwarfbuf.FormExprloc:
		return d.Bytes(d.Uleb()), dwarf.ClassExprLoc, nil
	case dwarfbuf.FormLoclistx:
		return d.Uleb(), dwarf.ClassLocList, nil
	}
	return nil, 0, fmt.Errorf("%w %#x", dwarfbuf.ErrUnknownForm, form)
}

// ptrClass is the class debug/dwarf gives a section offset of attribute a
// (DW_FORM_sec_offset, or a constant before DWARF 4), 0 for attributes
// that are no offsets.
func ptrClass(a dwarf.Attr) dwarf.Class {
	switch a {
	case dwarf.AttrLocation, dwarf.AttrStringLength, dwarf.AttrReturnAddr, dwarf.AttrDataMemberLoc, dwarf.AttrFrameBase,
		dwarf.AttrSegment, dwarf.AttrStaticLink, dwarf.AttrUseLocation, dwarf.AttrVtableElemLoc, dwarf.AttrLoclistsBase:
		return dwarf.ClassLocListPtr
	case dwarf.AttrStmtList:
		return dwarf.ClassLinePtr
	case dwarf.AttrStartScope, dwarf.AttrRanges:
		return dwarf.ClassRangeListPtr
	case dwarf.AttrMacroInfo:
		return dwarf.ClassMacPtr
	case dwarf.AttrStrOffsetsBase:
		return dwarf.ClassStrOffsetsPtr
	case dwarf.AttrAddrBase:
		return dwarf.ClassAddrPtr
	case dwarf.AttrRnglistsBase:
		return dwarf.ClassRngListsPtr
	}
	return 0
}

// exprAttr reports whether a block of attribute a is an expression
// (DWARF 2 and 3 write expressions as blocks).
func exprAttr(a dwarf.Attr) bool {
	switch a {
	case dwarf.AttrLocation, dwarf.AttrByteSize, dwarf.AttrBitOffset, dwarf.AttrBitSize, dwarf.AttrStringLength,
		dwarf.AttrLowerBound, dwarf.AttrReturnAddr, dwarf.AttrStrideSize, dwarf.AttrUpperBound, dwarf.AttrCount,
		dwarf.AttrDataMemberLoc, dwarf.AttrFrameBase, dwarf.AttrSegment, dwarf.AttrStaticLink, dwarf.AttrUseLocation,
		dwarf.AttrVtableElemLoc, dwarf.AttrAllocated, dwarf.AttrAssociated, dwarf.AttrDataLocation, dwarf.AttrStride:
		return true
	}
	return false
}

// The entry kinds of a DWARF 5 range list (DW_RLE_*).
const (
	rleEndOfList    = 0
	rleBaseAddressx = 1
	rleStartxEndx   = 2
	rleStartxLength = 3
	rleOffsetPair   = 4
	rleBaseAddress  = 5
	rleStartEnd     = 6
	rleStartLength  = 7
)

// ranges is dwarf.Data.Ranges: the address ranges of e from its
// DW_AT_low_pc and DW_AT_high_pc, and its DW_AT_ranges list (.debug_ranges
// before DWARF 5, .debug_rnglists from 5) relative to its unit's base
// address.
func (b *Binary) ranges(e *dwarf.Entry) ([][2]uint64, error) {
	var ret [][2]uint64
	low, lowOK := e.Val(dwarf.AttrLowpc).(uint64)
	if f := e.AttrField(dwarf.AttrHighpc); f != nil && lowOK {
		switch v := f.Val.(type) {
		case uint64:
			if f.Class == dwarf.ClassAddress {
				ret = append(ret, [2]uint64{low, v})
			}
		case int64:
			if f.Class == dwarf.ClassConstant {
				ret = append(ret, [2]uint64{low, low + uint64(v)})
			}
		}
	}
	f := e.AttrField(dwarf.AttrRanges)
	u := b.unitOf(e.Offset)
	if f == nil || u < 0 {
		return ret, nil
	}
	ui := &b.units[u]
	base := ui.rangeBase
	if e.Tag == dwarf.TagCompileUnit {
		base = rangeBaseOf(e)
	}
	if ui.Version >= 5 && b.rnglists != nil {
		var off uint64
		switch v := f.Val.(type) {
		case int64:
			if f.Class != dwarf.ClassRangeListPtr {
				return ret, nil
			}
			off = uint64(v)
		case uint64:
			if f.Class != dwarf.ClassRngList {
				return ret, nil
			}
			off = v
		default:
			return ret, nil
		}
		return b.rnglistRanges(u, base, off, ret)
	}
	off, ok := f.Val.(int64)
	if !ok || b.rangesSec == nil {
		return ret, nil
	}
	if off < 0 || off > int64(len(b.rangesSec)) {
		return nil, fmt.Errorf("invalid range offset %d", off)
	}
	r := reader{B: b.rangesSec, Pos: int(off), Order: b.order}
	n := int(ui.AddrSize)
	for !r.Done() {
		lo, hi := r.Uint(n), r.Uint(n)
		if r.Err {
			return nil, dwarfbuf.ErrTruncated
		}
		if lo == 0 && hi == 0 {
			break
		}
		if lo == ^uint64(0)>>uint((8-n)*8) {
			base = hi
		} else {
			ret = append(ret, [2]uint64{base + lo, base + hi})
		}
	}
	return ret, nil
}

// rangeBaseOf is the base address of a unit's range lists, from its top
// DIE: DW_AT_entry_pc (some GCC versions), else DW_AT_low_pc.
func rangeBaseOf(cu *dwarf.Entry) uint64 {
	if v, ok := cu.Val(dwarf.AttrEntrypc).(uint64); ok {
		return v
	}
	v, _ := cu.Val(dwarf.AttrLowpc).(uint64)
	return v
}

// rnglistRanges appends the ranges of the .debug_rnglists list at off of
// unit u to ret.
func (b *Binary) rnglistRanges(u int32, base, off uint64, ret [][2]uint64) ([][2]uint64, error) {
	if off > uint64(len(b.rnglists)) {
		return nil, fmt.Errorf("invalid rnglist offset %d", off)
	}
	ui := &b.units[u]
	n := int(ui.AddrSize)
	addr := func(i uint64) (uint64, error) {
		if v, ok := b.addrAt(ui.addrBase, i, n); ok {
			return v, nil
		}
		return 0, errAddrIndex
	}
	r := reader{B: b.rnglists, Pos: int(off), Order: b.order}
	for {
		var lo, hi uint64
		var err error
		switch r.U8() {
		case rleEndOfList:
			if r.Err {
				return nil, dwarfbuf.ErrTruncated
			}
			return ret, nil
		case rleBaseAddressx:
			if base, err = addr(r.Uleb()); err != nil {
				return nil, err
			}
			continue
		case rleStartxEndx:
			if lo, err = addr(r.Uleb()); err == nil {
				hi, err = addr(r.Uleb())
			}
		case rleStartxLength:
			if lo, err = addr(r.Uleb()); err == nil {
				hi = lo + r.Uleb()
			}
		case rleOffsetPair:
			lo, hi = base+r.Uleb(), base+r.Uleb()
		case rleBaseAddress:
			base = r.Uint(n)
			continue
		case rleStartEnd:
			lo, hi = r.Uint(n), r.Uint(n)
		case rleStartLength:
			lo = r.Uint(n)
			hi = lo + r.Uleb()
		default:
			return nil, errors.New("unknown range list entry")
		}
		if err != nil {
			return nil, err
		}
		if r.Err {
			return nil, dwarfbuf.ErrTruncated
		}
		ret = append(ret, [2]uint64{lo, hi})
	}
}
