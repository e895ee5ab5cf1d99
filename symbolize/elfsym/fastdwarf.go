package elfsym

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"viewer/symbolize/dwarfbuf"
)

// fastLiner answers lookups from DWARF with a decoder built for this one
// job on dwarfbuf's unit headers, abbreviations and forms (the reader
// datatype's unit index shares): it finds a unit from .debug_aranges
// without reading .debug_info, decodes only the DIEs that shape functions
// and inlined calls (skipping type subtrees by their sibling links), and
// runs the unit's line program itself.
// debug/dwarf decodes every attribute of every entry and parses every
// unit's abbreviations up front, which is most of the time addr2line-style
// batches spend. dwarfLiner (debug/dwarf) remains the fallback for files
// this decoder does not understand.
type fastLiner struct {
	f  *File
	bo binary.ByteOrder

	info, abbrev, line, str, lineStr, addr, strOff, ranges, rnglists *lazySection

	mu       sync.Mutex
	units    map[uint64]*funit          // by header offset
	index    atomic.Pointer[[]urange]   // sorted by lo
	slotsPtr atomic.Pointer[[]unitSlot] // units the index names
	scanned  bool                       // every unit header read (index complete)
	allUnits []*funit                   // sorted by offset, once scanned

	namesMu sync.Mutex
	names   map[uint64]fnName // DIEs outside the unit being decoded
}

// urange maps addresses to a unit, named by its slot: the unit header is
// read the first time an address falls in it.
type urange struct {
	lo, hi uint64
	slot   int32
}

type unitSlot struct {
	off uint64
	u   atomic.Pointer[funit]
}

// unitOf returns the unit of a slot, reading its header the first time.
func (l *fastLiner) unitOf(r *urange) *funit {
	sl := &(*l.slotsPtr.Load())[r.slot]
	if u := sl.u.Load(); u != nil {
		return u
	}
	u, err := l.unitAt(sl.off)
	if err != nil {
		return nil
	}
	sl.u.Store(u)
	return u
}

// funit is one unit of .debug_info.
type funit struct {
	dwarfbuf.Unit

	cuOnce  sync.Once
	cuErr   error
	lowPC   uint64
	strBase uint64
	addrB   uint64
	rngBase uint64
	stmt    int64
	compDir string
	cuDIE   die
	cuTab   atomic.Pointer[dwarfbuf.Abbrevs] // cu's table, until the next abbrevTable takes it

	unitLoad
}

// DWARF constants used here.
const (
	tagCompileUnit  = 0x11
	tagPartialUnit  = 0x3c
	tagSubprogram   = 0x2e
	tagInlined      = 0x1d
	tagLexicalBlock = 0x0b
	tagNamespace    = 0x39
	tagModule       = 0x1e

	atSibling        = 0x01
	atName           = 0x03
	atStmtList       = 0x10
	atLowPC          = 0x11
	atHighPC         = 0x12
	atCompDir        = 0x1b
	atAbstractOrigin = 0x31
	atDeclLine       = 0x3b
	atDeclFile       = 0x3a
	atSpecification  = 0x47
	atRanges         = 0x55
	atCallFile       = 0x58
	atCallLine       = 0x59
	atLinkageName    = 0x6e
	atStrOffsetsBase = 0x72
	atAddrBase       = 0x73
	atRnglistsBase   = 0x74
	atMIPSLinkage    = 0x2007
	atGNUDiscrim     = 0x2136
	atGNUAddrBase    = 0x2133
	atGNURangesBase  = 0x2132
)

var errUnsupported = errors.New("unsupported DWARF")

func newFastLiner(f *File) (*fastLiner, error) {
	l := &fastLiner{f: f, bo: f.elf.ByteOrder, units: map[uint64]*funit{}, names: map[uint64]fnName{}}
	open := func(name string) (*lazySection, error) {
		s := f.elf.Section(".debug_" + name)
		old := false
		if s == nil {
			s = f.elf.Section(".zdebug_" + name)
			old = s != nil
		}
		if s == nil || s.Type == elf.SHT_NOBITS {
			return nil, nil
		}
		return openSection(f, s, old)
	}
	var err error
	for _, p := range []struct {
		dst  **lazySection
		name string
	}{{&l.info, "info"}, {&l.abbrev, "abbrev"}, {&l.line, "line"}, {&l.str, "str"}, {&l.lineStr, "line_str"},
		{&l.addr, "addr"}, {&l.strOff, "str_offsets"}, {&l.ranges, "ranges"}, {&l.rnglists, "rnglists"}} {
		if *p.dst, err = open(p.name); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
	}
	if l.info == nil {
		return nil, errNoDWARF
	}
	if f.elf.Section(".debug_types") != nil || f.elf.Section(".gnu_debugaltlink") != nil {
		return nil, errUnsupported // type units or dwz: leave to debug/dwarf
	}
	var total int64
	for _, s := range []*lazySection{l.info, l.abbrev, l.line, l.str, l.lineStr, l.addr, l.strOff, l.ranges, l.rnglists} {
		if s != nil {
			total += int64(len(s.data))
		}
	}
	f.size.Add(total)
	// The small sections every unit needs are inflated in the background now.
	for _, s := range []*lazySection{l.abbrev, l.str, l.lineStr, l.addr, l.strOff, l.rnglists, l.ranges} {
		s.readAhead()
	}
	idx, err := l.readAranges()
	if err != nil {
		return nil, err
	}
	if len(idx) == 0 {
		if err := l.scanUnits(); err != nil {
			return nil, err
		}
	} else {
		l.index.Store(&idx)
	}
	return l, nil
}

// readAranges builds the address index from .debug_aranges.
func (l *fastLiner) readAranges() ([]urange, error) {
	s := l.f.elf.Section(".debug_aranges")
	old := false
	if s == nil {
		s = l.f.elf.Section(".zdebug_aranges")
		old = s != nil
	}
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	ls, err := openSection(l.f, s, old)
	if err != nil {
		return nil, err
	}
	d, err := ls.all()
	if err != nil {
		return nil, err
	}
	var idx []urange
	var slots []unitSlot
	for len(d) > 0 {
		r := &dwarfbuf.Reader{B: d, Order: l.bo}
		length := uint64(r.U32())
		hdr := 4
		dwarf64 := false
		if length == 0xffffffff {
			length, hdr, dwarf64 = r.U64(), 12, true
		}
		if r.Err || length > uint64(len(d)-hdr) {
			return nil, errors.New(".debug_aranges: truncated")
		}
		set := d[:hdr+int(length)]
		d = d[hdr+int(length):]
		r = &dwarfbuf.Reader{B: set[hdr:], Order: l.bo}
		r.U16() // version
		var cuOff uint64
		if dwarf64 {
			cuOff = r.U64()
		} else {
			cuOff = uint64(r.U32())
		}
		asz := int(r.U8())
		r.U8() // segment selector size
		if r.Err || (asz != 4 && asz != 8) {
			return nil, errUnsupported
		}
		// Tuples start at a multiple of twice the address size.
		pos := hdr + r.Pos
		if rem := pos % (2 * asz); rem != 0 {
			pos += 2*asz - rem
		}
		slot := int32(len(slots))
		slots = append(slots, unitSlot{off: cuOff})
		for pos+2*asz <= len(set) {
			var lo, n uint64
			if asz == 8 {
				lo, n = l.bo.Uint64(set[pos:]), l.bo.Uint64(set[pos+8:])
			} else {
				lo, n = uint64(l.bo.Uint32(set[pos:])), uint64(l.bo.Uint32(set[pos+4:]))
			}
			pos += 2 * asz
			if lo == 0 && n == 0 {
				break
			}
			if n > 0 && (lo != 0 || l.f.kind == elf.ET_REL) {
				idx = append(idx, urange{lo, lo + n, slot})
			}
		}
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i].lo < idx[j].lo })
	l.slotsPtr.Store(&slots)
	return idx, nil
}

// unitAt returns the unit whose header is at off, reading the header.
func (l *fastLiner) unitAt(off uint64) (*funit, error) {
	l.mu.Lock()
	u := l.units[off]
	l.mu.Unlock()
	if u != nil {
		return u, nil
	}
	hdr, err := l.info.ready(int64(min(off+24, uint64(len(l.info.data)))))
	if err != nil {
		return nil, err
	}
	h, err := dwarfbuf.ReadUnit(hdr, off, uint64(len(l.info.data)), l.bo)
	if err != nil {
		return nil, err
	}
	switch h.Type {
	case dwarfbuf.UnitCompile, dwarfbuf.UnitPartial, dwarfbuf.UnitSkeleton, dwarfbuf.UnitSplitCompile, dwarfbuf.UnitType, dwarfbuf.UnitSplitType:
	default:
		return nil, errUnsupported
	}
	if h.AddrSize != 4 && h.AddrSize != 8 {
		return nil, fmt.Errorf(".debug_info: bad unit header at %#x", off)
	}
	u = &funit{Unit: h, stmt: -1}
	l.mu.Lock()
	if v := l.units[off]; v != nil {
		u = v
	} else {
		l.units[off] = u
	}
	l.mu.Unlock()
	return u, nil
}

// scanUnits reads every unit header and the ranges of units .debug_aranges
// does not cover, completing the index.
func (l *fastLiner) scanUnits() error {
	l.mu.Lock()
	done := l.scanned
	l.mu.Unlock()
	if done {
		return nil
	}
	info, err := l.info.all()
	if err != nil {
		return err
	}
	covered := map[uint64]bool{}
	var idx []urange
	var slots []unitSlot
	if p := l.slotsPtr.Load(); p != nil {
		slots = make([]unitSlot, len(*p))
		for i := range *p {
			slots[i].off = (*p)[i].off
			slots[i].u.Store((*p)[i].u.Load())
			covered[slots[i].off] = true
		}
	}
	if p := l.index.Load(); p != nil {
		idx = append(idx, *p...)
	}
	var all []*funit
	for off := uint64(0); off < uint64(len(info)); {
		u, err := l.unitAt(off)
		if err != nil {
			return err
		}
		all = append(all, u)
		off = u.End
		if covered[u.Off] || (u.Type != 1 && u.Type != 3) {
			continue
		}
		err = l.cu(u)
		u.cuTab.Store(nil) // not decoded now: not kept
		if err != nil {
			continue
		}
		rs, err := l.unitRanges(u)
		if err != nil {
			continue
		}
		slot := int32(len(slots))
		slots = append(slots, unitSlot{off: u.Off})
		slots[slot].u.Store(u)
		for _, rg := range rs {
			if rg[1] > rg[0] && (rg[0] != 0 || l.f.kind == elf.ET_REL) {
				idx = append(idx, urange{rg[0], rg[1], slot})
			}
		}
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i].lo < idx[j].lo })
	l.mu.Lock()
	l.allUnits = all
	l.scanned = true
	l.mu.Unlock()
	// Slots before the index: a reader of the new index finds its slots.
	l.slotsPtr.Store(&slots)
	l.index.Store(&idx)
	return nil
}

func (l *fastLiner) unitFor(pc uint64) *funit {
	if r := findUnit(l.index.Load(), pc); r != nil {
		return l.unitOf(r)
	}
	// Not in .debug_aranges: some units may be missing from it.
	l.mu.Lock()
	done := l.scanned
	l.mu.Unlock()
	if done || l.scanUnits() != nil {
		return nil
	}
	if r := findUnit(l.index.Load(), pc); r != nil {
		return l.unitOf(r)
	}
	return nil
}

func (l *fastLiner) unit(pc uint64) (CompileUnit, bool, error) {
	u := l.unitFor(pc)
	if u == nil {
		return CompileUnit{}, false, nil
	}
	ud, err := l.load(u)
	if err != nil {
		return CompileUnit{}, false, err
	}
	return CompileUnit{Dir: u.compDir, Files: ud.files}, true, nil
}

func findUnit(p *[]urange, pc uint64) *urange {
	if p == nil {
		return nil
	}
	rs := *p
	lo, hi := 0, len(rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rs[m].lo <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for j := lo - 1; j >= 0 && j > lo-5; j-- {
		if pc < rs[j].hi {
			return &rs[j]
		}
	}
	return nil
}

// abbrevTable parses the abbreviations of unit u, or takes the table cu
// just parsed: decoding a unit reads its unit DIE (cu) and then its other
// DIEs with the same table. Tables are not kept longer: GCC gives every
// unit its own, and all of libc's parsed would hold 9 MB for the rare name
// read after a unit is decoded.
func (l *fastLiner) abbrevTable(u *funit) (*dwarfbuf.Abbrevs, error) {
	if t := u.cuTab.Swap(nil); t != nil {
		return t, nil
	}
	d, err := l.abbrev.all()
	if err != nil {
		return nil, err
	}
	return dwarfbuf.ParseAbbrevs(d, u.AbbrevOff, u.Encoding)
}

// die holds the attributes of one DIE this decoder cares about.
type die struct {
	off                  uint64
	tag                  uint32
	children             bool
	sibling              uint64
	name, linkage        string
	hasName, hasLinkage  bool
	lowPC, highPC        uint64
	hasLow, hasHigh      bool
	highIsOffset         bool
	rangesForm           uint32
	rangesVal            uint64
	hasRanges            bool
	origin               uint64
	declLine, callLine   int64
	declFile             int64
	callFile, discrim    int64
	hasCallFile          bool
	stmt                 int64
	compDir              string
	strBase, addrB, rngB uint64
	hasStrB, hasAddrB    bool
	hasRngB              bool
	lowForm              uint32
	lowIdx               uint64
	wantStrings          bool
}

// dieReader decodes DIEs of one unit: dwarfbuf's cursor, and the
// attributes of functions and inlined calls into a die.
type dieReader struct {
	dwarfbuf.Entries
	l *fastLiner
	u *funit
}

func (l *fastLiner) newDIEReader(u *funit, tab *dwarfbuf.Abbrevs) (*dieReader, error) {
	info, err := l.info.ready(int64(u.End))
	if err != nil {
		return nil, err
	}
	return &dieReader{Entries: dwarfbuf.NewEntries(info, &u.Unit, tab, l.bo), l: l, u: u}, nil
}

// next decodes the next DIE; tag 0 is a null entry.
func (d *dieReader) next(e *die) error {
	off := d.Offset()
	ab, err := d.Next()
	if err != nil {
		return err
	}
	if ab == nil {
		e.off, e.tag = off, 0
		return nil
	}
	return d.attrs(e, ab, off)
}

// attrs decodes the attributes of the DIE at off, of abbreviation ab,
// whose code was just read.
func (d *dieReader) attrs(e *die, ab *dwarfbuf.Abbrev, off uint64) error {
	*e = die{off: off, tag: ab.Tag, children: ab.Children, stmt: -1, callFile: -1, declFile: -1, wantStrings: e.wantStrings}
	for i := range ab.Attrs {
		if err := d.attr(e, &ab.Attrs[i]); err != nil {
			return err
		}
	}
	return d.Error()
}

// skip moves past one attribute value of the given form.
func (d *dieReader) skip(form uint32) error { return d.SkipValue(form) }

// value reads a constant, reference, offset or index; any other form is
// skipped and reads as 0.
func (d *dieReader) value(a *dwarfbuf.AttrSpec) (uint64, error) {
	if v, ok := d.FormUint(a.Form, a.Implicit, d.u.Encoding); ok {
		return v, d.Error()
	}
	return 0, d.skip(a.Form)
}

// str reads a string attribute.
func (d *dieReader) str(a *dwarfbuf.AttrSpec) (string, bool, error) {
	switch a.Form {
	case dwarfbuf.FormString:
		return d.CStr(), true, d.Error()
	case dwarfbuf.FormStrp:
		off, err := d.value(a)
		if err != nil {
			return "", false, err
		}
		s, err := d.l.str.all()
		return strAt(s, off), err == nil, err
	case dwarfbuf.FormLineStrp:
		off, err := d.value(a)
		if err != nil {
			return "", false, err
		}
		s, err := d.l.lineStr.all()
		return strAt(s, off), err == nil, err
	case dwarfbuf.FormStrx, dwarfbuf.FormStrx1, dwarfbuf.FormStrx2, dwarfbuf.FormStrx3, dwarfbuf.FormStrx4, dwarfbuf.FormGNUStrIndex:
		idx, err := d.value(a)
		if err != nil {
			return "", false, err
		}
		so, err := d.l.strOff.all()
		if err != nil {
			return "", false, err
		}
		sz := uint64(d.u.OffsetSize())
		base := d.u.strBase
		if base == 0 && d.u.Version >= 5 {
			base = 2 * sz // past the header of the only contribution
		}
		p := base + idx*sz
		if p+sz > uint64(len(so)) {
			return "", false, errors.New(".debug_str_offsets: index out of range")
		}
		var off uint64
		if sz == 8 {
			off = d.l.bo.Uint64(so[p:])
		} else {
			off = uint64(d.l.bo.Uint32(so[p:]))
		}
		s, err := d.l.str.all()
		return strAt(s, off), err == nil, err
	}
	return "", false, d.skip(a.Form) // dwz's strp_alt and the like: no name
}

// attr decodes one attribute into e.
func (d *dieReader) attr(e *die, a *dwarfbuf.AttrSpec) error {
	switch a.Attr {
	case atName, atLinkageName, atMIPSLinkage, atCompDir:
		if !e.wantStrings {
			return d.skip(a.Form)
		}
		s, ok, err := d.str(a)
		if err != nil {
			return err
		}
		switch a.Attr {
		case atName:
			e.name, e.hasName = s, ok
		case atCompDir:
			e.compDir = s
		default:
			e.linkage, e.hasLinkage = s, ok
		}
		return nil
	case atSibling, atAbstractOrigin, atSpecification:
		v, err := d.Ref(a) // 0 for a reference into another file (dwz)
		if err != nil {
			return err
		}
		if a.Attr == atSibling {
			e.sibling = v
		} else if e.origin == 0 {
			e.origin = v
		}
		return nil
	case atLowPC:
		v, err := d.value(a)
		e.lowPC, e.hasLow, e.lowForm, e.lowIdx = v, true, a.Form, v
		return err
	case atHighPC:
		v, err := d.value(a)
		e.highPC, e.hasHigh = v, true
		e.highIsOffset = true // a constant: the size
		switch a.Form {
		case dwarfbuf.FormAddr, dwarfbuf.FormAddrx, dwarfbuf.FormAddrx1, dwarfbuf.FormAddrx2, dwarfbuf.FormAddrx3, dwarfbuf.FormAddrx4, dwarfbuf.FormGNUAddrIndex:
			e.highIsOffset = false
		}
		if !e.highIsOffset && a.Form != dwarfbuf.FormAddr {
			e.highPC, err = d.addrx(v)
		}
		return err
	case atRanges:
		v, err := d.value(a)
		e.rangesForm, e.rangesVal, e.hasRanges = a.Form, v, true
		return err
	case atDeclLine, atDeclFile, atCallLine, atCallFile, atGNUDiscrim, atStmtList, atStrOffsetsBase, atAddrBase, atRnglistsBase, atGNUAddrBase, atGNURangesBase:
		v, err := d.value(a)
		switch a.Attr {
		case atDeclLine:
			e.declLine = int64(v)
		case atDeclFile:
			e.declFile = int64(v)
		case atCallLine:
			e.callLine = int64(v)
		case atCallFile:
			e.callFile, e.hasCallFile = int64(v), true
		case atGNUDiscrim:
			e.discrim = int64(v)
		case atStmtList:
			e.stmt = int64(v)
		case atStrOffsetsBase:
			e.strBase, e.hasStrB = v, true
		case atAddrBase, atGNUAddrBase:
			e.addrB, e.hasAddrB = v, true
		case atRnglistsBase, atGNURangesBase:
			e.rngB, e.hasRngB = v, true
		}
		return err
	}
	return d.skip(a.Form)
}

// addrx reads entry i of the unit's .debug_addr table.
func (d *dieReader) addrx(i uint64) (uint64, error) {
	return d.l.addrIndex(d.u, i)
}

func (l *fastLiner) addrIndex(u *funit, i uint64) (uint64, error) {
	a, err := l.addr.all()
	if err != nil || a == nil {
		return 0, errors.New(".debug_addr missing")
	}
	p := u.addrB + i*uint64(u.AddrSize)
	if p+uint64(u.AddrSize) > uint64(len(a)) {
		return 0, errors.New(".debug_addr: index out of range")
	}
	if u.AddrSize == 8 {
		return l.bo.Uint64(a[p:]), nil
	}
	return uint64(l.bo.Uint32(a[p:])), nil
}

// cu reads the unit's abbreviations and its unit DIE (once).
func (l *fastLiner) cu(u *funit) error {
	u.cuOnce.Do(func() {
		defer recoverInto(&u.cuErr, l.f.path)
		tab, err := l.abbrevTable(u)
		if err != nil {
			u.cuErr = err
			return
		}
		d, err := l.newDIEReader(u, tab)
		if err != nil {
			u.cuErr = err
			return
		}
		var e die
		e.wantStrings = true
		// Bases first: strx and addrx values of this DIE depend on them.
		save := d.Reader
		if err := d.next(&e); err != nil {
			u.cuErr = err
			return
		}
		u.strBase, u.addrB, u.rngBase = e.strBase, e.addrB, e.rngB
		if e.hasStrB || e.hasAddrB {
			d.Reader = save
			e = die{wantStrings: true}
			if err := d.next(&e); err != nil {
				u.cuErr = err
				return
			}
		}
		u.stmt, u.compDir = e.stmt, e.compDir
		if e.hasLow {
			if e.lowForm != dwarfbuf.FormAddr {
				e.lowPC, _ = l.addrIndex(u, e.lowIdx)
			}
			u.lowPC = e.lowPC
		}
		u.cuDIE = e
		u.cuTab.Store(tab)
	})
	return u.cuErr
}

// unitRanges returns the unit DIE's address ranges.
func (l *fastLiner) unitRanges(u *funit) ([][2]uint64, error) {
	return l.dieRanges(u, &u.cuDIE, nil)
}

// dieRanges returns a DIE's address ranges (low/high or DW_AT_ranges).
func (l *fastLiner) dieRanges(u *funit, e *die, out [][2]uint64) ([][2]uint64, error) {
	out = out[:0]
	if e.hasRanges {
		return l.rangeList(u, e.rangesForm, e.rangesVal, out)
	}
	if !e.hasLow || !e.hasHigh {
		return out, nil
	}
	lo := e.lowPC
	if e.lowForm != dwarfbuf.FormAddr && e.lowForm != 0 {
		var err error
		if lo, err = l.addrIndex(u, e.lowIdx); err != nil {
			return out, err
		}
	}
	hi := e.highPC
	if e.highIsOffset {
		hi = lo + e.highPC
	}
	return append(out, [2]uint64{lo, hi}), nil
}

// rangeList decodes DW_AT_ranges: .debug_ranges (DWARF 2-4) or
// .debug_rnglists (5), with rnglistx indexes.
func (l *fastLiner) rangeList(u *funit, form uint32, v uint64, out [][2]uint64) ([][2]uint64, error) {
	readAddr := func(r *dwarfbuf.Reader) uint64 {
		if u.AddrSize == 8 {
			return r.U64()
		}
		return uint64(r.U32())
	}
	if u.Version < 5 {
		d, err := l.ranges.all()
		if err != nil || d == nil || v >= uint64(len(d)) {
			return out, errors.New(".debug_ranges: offset out of range")
		}
		r := &dwarfbuf.Reader{B: d[v:], Order: l.bo}
		base := u.lowPC
		maxAddr := ^uint64(0)
		if u.AddrSize == 4 {
			maxAddr = 0xffffffff
		}
		for !r.Err {
			lo, hi := readAddr(r), readAddr(r)
			if lo == 0 && hi == 0 {
				break
			}
			if lo == maxAddr {
				base = hi
				continue
			}
			out = append(out, [2]uint64{base + lo, base + hi})
		}
		return out, readErr(r)
	}
	d, err := l.rnglists.all()
	if err != nil || d == nil {
		return out, errors.New(".debug_rnglists missing")
	}
	off := v
	if form == dwarfbuf.FormRnglistx { // an index into the unit's offset table
		sz := uint64(4)
		if u.Dwarf64 {
			sz = 8
		}
		p := u.rngBase + v*sz
		if p+sz > uint64(len(d)) {
			return out, errors.New(".debug_rnglists: index out of range")
		}
		if sz == 8 {
			off = u.rngBase + l.bo.Uint64(d[p:])
		} else {
			off = u.rngBase + uint64(l.bo.Uint32(d[p:]))
		}
	}
	if off >= uint64(len(d)) {
		return out, errors.New(".debug_rnglists: offset out of range")
	}
	r := &dwarfbuf.Reader{B: d[off:], Order: l.bo}
	base := u.lowPC
	for !r.Err {
		switch kind := r.U8(); kind {
		case 0: // end_of_list
			return out, nil
		case 1: // base_addressx
			base, err = l.addrIndex(u, r.Uleb())
		case 2: // startx_endx
			var lo, hi uint64
			if lo, err = l.addrIndex(u, r.Uleb()); err == nil {
				hi, err = l.addrIndex(u, r.Uleb())
			}
			out = append(out, [2]uint64{lo, hi})
		case 3: // startx_length
			var lo uint64
			lo, err = l.addrIndex(u, r.Uleb())
			out = append(out, [2]uint64{lo, lo + r.Uleb()})
		case 4: // offset_pair
			lo, hi := r.Uleb(), r.Uleb()
			out = append(out, [2]uint64{base + lo, base + hi})
		case 5: // base_address
			base = readAddr(r)
		case 6: // start_end
			lo, hi := readAddr(r), readAddr(r)
			out = append(out, [2]uint64{lo, hi})
		case 7: // start_length
			lo := readAddr(r)
			out = append(out, [2]uint64{lo, lo + r.Uleb()})
		default:
			return out, fmt.Errorf(".debug_rnglists: unknown entry kind %d", kind)
		}
		if err != nil {
			return out, err
		}
	}
	return out, readErr(r)
}

// lookup appends the frames at pc, innermost first.
func (l *fastLiner) lookup(pc uint64, frames []Frame) ([]Frame, bool, error) {
	u := l.unitFor(pc)
	if u == nil {
		return frames, false, nil
	}
	ud, err := l.load(u)
	if err != nil {
		return frames, false, err
	}
	f, named := ud.frames(pc, frames, l.f.symNameTable())
	return f, named, nil
}

func (l *fastLiner) load(u *funit) (*unitData, error) {
	return u.get(l.f.path, func() (*unitData, error) { return l.decode(u) }, func(err error) error {
		return fmt.Errorf("%s: corrupt DWARF in the unit at .debug_info+%#x: %w", l.f.path, u.Off, err)
	})
}

// decode builds a unit's line table and function tree.
func (l *fastLiner) decode(u *funit) (*unitData, error) {
	if err := l.cu(u); err != nil {
		return nil, err
	}
	ud := &unitData{}
	var size int64
	if u.stmt >= 0 && l.line != nil {
		rows, files, err := l.lineTable(u)
		if err != nil {
			return nil, err
		}
		ud.rows, ud.files = rows, files
		size += int64(cap(rows))*16 + int64(len(files))*48
	}
	tab, err := l.abbrevTable(u)
	if err != nil {
		return nil, err
	}
	d, err := l.newDIEReader(u, tab)
	if err != nil {
		return nil, err
	}
	top, err := d.Next() // the unit DIE (nil: an empty unit)
	if err != nil {
		return nil, err
	}
	if top != nil {
		if _, err := d.SkipAttrs(top); err != nil {
			return nil, err
		}
	}
	ud.nodes = append(ud.nodes, node{declFile: -1})
	type pend struct {
		n   int32
		off uint64
	}
	var pending []pend
	local := map[uint64]fnName{}
	stack := make([]int32, 1, 32)
	stack[0] = -1
	if top == nil || !top.Children {
		stack = stack[:0]
	}
	var e die
	var rbuf [][2]uint64
	for len(stack) > 0 && !d.Done() {
		parent := stack[len(stack)-1]
		off := d.Offset()
		ab, err := d.Next()
		if err != nil {
			return nil, err
		}
		if ab == nil {
			stack = stack[:len(stack)-1]
			continue
		}
		switch ab.Tag {
		case tagSubprogram, tagInlined, tagLexicalBlock:
			e = die{wantStrings: ab.Tag == tagSubprogram}
			if err := d.attrs(&e, ab, off); err != nil {
				return nil, err
			}
		case tagNamespace, tagModule: // functions inside
			if _, err := d.SkipAttrs(ab); err != nil {
				return nil, err
			}
			if ab.Children {
				stack = append(stack, -1)
			}
			continue
		default: // no functions inside: skipped with its children
			sib, err := d.SkipAttrs(ab)
			if err == nil && ab.Children {
				err = d.SkipChildren(sib)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		switch e.tag {
		case tagSubprogram:
			nm := fnName{startLine: int32(e.declLine), declFile: int32(e.declFile)}
			if e.hasLinkage {
				nm.name, nm.linkage = e.linkage, true
			} else if e.hasName {
				nm.name = e.name
			}
			nm.origin = dwarfOffset(e.origin)
			local[e.off] = nm
			n := int32(-1)
			if e.hasLow || e.hasRanges {
				rbuf, err = l.dieRanges(u, &e, rbuf)
				if err != nil {
					return nil, err
				}
				if len(rbuf) > 0 {
					n = int32(len(ud.nodes))
					ud.nodes = append(ud.nodes, node{declFile: -1})
					pending = append(pending, pend{n, e.off})
					for _, rg := range rbuf {
						if rg[1] > rg[0] {
							ud.nodes[0].kids = append(ud.nodes[0].kids, kidRange{lo: rg[0], hi: rg[1], node: n, sym: -1})
						}
					}
				}
			}
			if e.children {
				if n >= 0 {
					stack = append(stack, n)
				} else if err := d.SkipChildren(e.sibling); err != nil {
					return nil, err
				}
			}
		case tagInlined:
			n := int32(-1)
			if parent >= 0 {
				rbuf, err = l.dieRanges(u, &e, rbuf)
				if err != nil {
					return nil, err
				}
				if len(rbuf) > 0 {
					n = int32(len(ud.nodes))
					nd := node{declFile: -1, callFile: int32(e.callFile), callLine: int32(e.callLine), callDisc: int32(e.discrim)}
					ud.nodes = append(ud.nodes, nd)
					if e.origin != 0 {
						pending = append(pending, pend{n, e.origin})
					}
					for _, rg := range rbuf {
						if rg[1] > rg[0] {
							ud.nodes[parent].kids = append(ud.nodes[parent].kids, kidRange{lo: rg[0], hi: rg[1], node: n, sym: -1})
						}
					}
				}
			}
			if e.children {
				if n >= 0 {
					stack = append(stack, n)
				} else if err := d.SkipChildren(e.sibling); err != nil {
					return nil, err
				}
			}
		case tagLexicalBlock:
			if e.children {
				if parent >= 0 {
					stack = append(stack, parent)
				} else if err := d.SkipChildren(e.sibling); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range ud.nodes {
		k := ud.nodes[i].kids
		slices.SortFunc(k, func(a, b kidRange) int {
			switch {
			case a.lo < b.lo:
				return -1
			case a.lo > b.lo:
				return 1
			}
			return 0
		})
		size += int64(cap(k))*24 + 64
	}
	for _, p := range pending {
		nm := l.resolve(u, tab, p.off, local, 0)
		ud.nodes[p.n].name = nm.name
		ud.nodes[p.n].startLine = nm.startLine
		ud.nodes[p.n].declFile = nm.declFile
	}
	ud.index(l.f.symNameTable())
	l.f.size.Add(size)
	return ud, nil
}

// resolve follows abstract_origin and specification links from the DIE at
// off to the first name (a linkage name if any on the way) and declaration line.
func (l *fastLiner) resolve(u *funit, tab *dwarfbuf.Abbrevs, off uint64, local map[uint64]fnName, depth int) fnName {
	if depth > 8 {
		return fnName{}
	}
	nm, ok := local[uint64(off)]
	if !ok {
		l.namesMu.Lock()
		nm, ok = l.names[off]
		l.namesMu.Unlock()
		if !ok {
			nm = l.readName(u, tab, off)
			l.namesMu.Lock()
			l.names[off] = nm
			l.namesMu.Unlock()
		}
	}
	if nm.origin != 0 && (nm.name == "" || nm.startLine == 0) {
		up := l.resolve(u, tab, uint64(nm.origin), local, depth+1)
		if nm.name == "" {
			nm.name, nm.linkage = up.name, up.linkage
		}
		if nm.startLine == 0 {
			nm.startLine, nm.declFile = up.startLine, up.declFile
		}
	}
	return nm
}

// readName decodes the one DIE at off, in whichever unit holds it.
func (l *fastLiner) readName(u *funit, tab *dwarfbuf.Abbrevs, off uint64) fnName {
	foreign := off < u.DIEOff || off >= u.End
	if foreign {
		u = l.unitHolding(off)
		if u == nil || l.cu(u) != nil {
			return fnName{}
		}
		var err error
		if tab, err = l.abbrevTable(u); err != nil {
			return fnName{}
		}
	}
	d, err := l.newDIEReader(u, tab)
	if err != nil || !d.Seek(off) {
		return fnName{}
	}
	e := die{wantStrings: true}
	if d.next(&e) != nil {
		return fnName{}
	}
	nm := fnName{startLine: int32(e.declLine), origin: dwarfOffset(e.origin), declFile: -1}
	if !foreign {
		nm.declFile = int32(e.declFile)
	}
	if e.hasLinkage {
		nm.name, nm.linkage = e.linkage, true
	} else if e.hasName {
		nm.name = e.name
	}
	return nm
}

// unitHolding finds the unit holding .debug_info offset off.
func (l *fastLiner) unitHolding(off uint64) *funit {
	if l.scanUnits() != nil {
		return nil
	}
	l.mu.Lock()
	all := l.allUnits
	l.mu.Unlock()
	i := sort.Search(len(all), func(i int) bool { return all[i].End > off })
	if i < len(all) && all[i].Off <= off {
		return all[i]
	}
	return nil
}

// prefetch decodes, with every CPU, the units that hold addrs, in the order
// of their offsets so decoding follows the inflating of .debug_info.
func (l *fastLiner) prefetch(addrs []uint64) {
	idx := l.index.Load()
	slots := l.slotsPtr.Load()
	if idx == nil || slots == nil {
		return
	}
	seen := map[int32]bool{}
	var todo []*urange
	for _, a := range addrs {
		if r := findUnit(idx, a); r != nil && !seen[r.slot] {
			seen[r.slot] = true
			if u := (*slots)[r.slot].u.Load(); u == nil || u.data.Load() == nil {
				todo = append(todo, r)
			}
		}
	}
	if len(todo) < 2 {
		return
	}
	sort.Slice(todo, func(i, j int) bool { return (*slots)[todo[i].slot].off < (*slots)[todo[j].slot].off })
	// Start inflating now; workers wait for their unit's bytes.
	l.info.readAhead()
	l.line.readAhead()
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				if u := l.unitOf(todo[i]); u != nil {
					l.load(u)
				}
			}
		}()
	}
	wg.Wait()
}

func dwarfOffset(o uint64) dwarf.Offset { return dwarf.Offset(o) }
