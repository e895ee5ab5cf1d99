// Package datatype attributes sampled instruction addresses to the data
// types and struct members they access, from an ELF executable's code and
// its DWARF debug info, the way `perf report -s type` and `perf annotate
// --data-type` do, for x86-64 and arm64 (AArch64) code.
package datatype

import (
	"cmp"
	"context"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"viewer/symbolize/dwarfbuf"
	"viewer/symbolize/localfile"
)

// Binary is one ELF executable (its code) and its debug info (its DWARF),
// indexed for attribution. The debug info may live in a separate .debug
// file whose .text is NOBITS, which is why Open takes two paths.
// A Binary is safe for concurrent use.
type Binary struct {
	text  []codeSection
	arm64 bool // AArch64 code (arm64.go); else x86-64

	units []unitInfo // sorted by off
	// The DWARF sections, read with dwarfbuf (dies.go, unitindex.go).
	info, abbrevSec, strSec, lineStrSec []byte
	strOffsets, rangesSec, rnglists     []byte
	typeUnits                           []byte // .debug_types, kept for typeUnitType
	order                               binary.ByteOrder
	loc                                 []byte    // .debug_loc (DWARF 2-4)
	loclists                            []byte    // .debug_loclists (DWARF 5)
	addrSec                             []byte    // .debug_addr (DWARF 5)
	frames                              *cfaTable // .debug_frame or .eh_frame
	funcs                               []funcRange
	globals                             []global
	funcByEnt                           map[uint64]dwarf.Offset // entry address → subprogram DIE, for call targets
	got                                 map[uint64]gotSlot      // GOT slot address → what the dynamic linker puts there
	// A large DWARF (a kernel's) is indexed one compile unit at a time,
	// when an address in its code is first looked at (lazy.go); the
	// fields below are guarded by mu then.
	lazy     bool
	cuRanges []cuRange               // the units' code ranges, sorted by lo
	indexed  []bool                  // per unit: its DIEs are in funcs, globals, defs
	declared map[string]dwarf.Offset // variable name → a DIE naming its type, from the indexed units
	objects  []objectSym             // the symbol table's data objects, sorted by addr

	abbrevMu   sync.Mutex // guards abbrevTabs
	abbrevTabs map[abbrevKey]*dwarfbuf.Abbrevs

	mu      sync.Mutex  // guards the lazily built caches below
	sigData *dwarf.Data // debug/dwarf's reader, only for types in type units (types.go)
	scopes  map[dwarf.Offset]*funcScope
	entries map[dwarf.Offset]*dwarf.Entry
	types   map[dwarf.Offset]dwarf.Type
	named   map[namedKey]dwarf.Type // named aggregates shared across units (types.go)
	defs    map[defKey]dwarf.Offset // the one complete definition of a named aggregate, for declarations (types.go)
	defSize map[defKey]int64
	code    map[uint64]*funcCode
	layouts map[dwarf.Type][]LayoutRow
	names   map[dwarf.Type]string // typeName cache
	// Results of attribution: memo maps a pc to its index in distinct,
	// which holds each different Access once.
	bytes       int64 // sections and index held since Open (Size)
	memo        map[uint64]int32
	skidMemo    map[uint64]int32 // pc → the access counted with skid correction (skid.go)
	distinct    []Access
	distinctIdx map[accessKey]int32
}

type codeSection struct {
	addr uint64
	data []byte
}

// unitInfo is what location and range lists and index forms need from a
// compilation unit: its header and the bases its top DIE gives.
type unitInfo struct {
	dwarfbuf.Unit         // its header
	base           uint64 // DW_AT_low_pc: base address of location lists
	rangeBase      uint64 // of range lists: DW_AT_entry_pc, else DW_AT_low_pc
	addrBase       uint64
	loclistsBase   uint64
	strOffsetsBase uint64
	rnglistsBase   uint64
}

type funcRange struct {
	lo, hi uint64
	die    dwarf.Offset
	unit   int32
}

type global struct {
	addr uint64
	die  dwarf.Offset
	unit int32
}

// Open reads the code of execPath and the DWARF of debugPath (the same file
// when the executable is not stripped) and indexes function ranges, global
// variables and call frame information. Malformed debug info yields an
// error, never a panic.
func Open(execPath, debugPath string) (b *Binary, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("datatype: malformed debug info in %s: %v", debugPath, r)
		}
	}()
	ef, err := localfile.OpenELF(context.Background(), execPath, localfile.Configured)
	if err != nil {
		return nil, fmt.Errorf("datatype: open executable: %w", err)
	}
	defer ef.Close()
	if ef.Machine != elf.EM_X86_64 && ef.Machine != elf.EM_AARCH64 {
		return nil, fmt.Errorf("datatype: %s is %v; only x86-64 and arm64 code can be decoded", execPath, ef.Machine)
	}
	df := ef
	if debugPath != "" && debugPath != execPath {
		df, err = localfile.OpenELF(context.Background(), debugPath, localfile.Configured)
		if err != nil {
			return nil, fmt.Errorf("datatype: open debug info: %w", err)
		}
		defer df.Close()
	}
	b = &Binary{
		arm64:       ef.Machine == elf.EM_AARCH64,
		funcByEnt:   map[uint64]dwarf.Offset{},
		memo:        map[uint64]int32{},
		skidMemo:    map[uint64]int32{},
		distinctIdx: map[accessKey]int32{},
		scopes:      map[dwarf.Offset]*funcScope{},
		entries:     map[dwarf.Offset]*dwarf.Entry{},
		types:       map[dwarf.Offset]dwarf.Type{},
		named:       map[namedKey]dwarf.Type{},
		defs:        map[defKey]dwarf.Offset{},
		defSize:     map[defKey]int64{},
		code:        map[uint64]*funcCode{},
		layouts:     map[dwarf.Type][]LayoutRow{},
	}
	// The code, the location lists and call frames, the symbol table and
	// the DWARF are read at once, each on its own goroutine (a kernel's
	// are hundreds of megabytes: the disk and both cores work together).
	// Errors are reported in this order, whichever comes first.
	var g errgroup.Group
	var textErr, dwarfErr, indexErr error
	goSafe(&g, debugPath, func() error {
		for _, s := range ef.Sections {
			if s.Type == elf.SHT_PROGBITS && s.Flags&elf.SHF_EXECINSTR != 0 {
				data, err := s.Data()
				if err != nil {
					textErr = fmt.Errorf("datatype: read %s of %s: %w", s.Name, execPath, err)
					return nil
				}
				b.text = append(b.text, codeSection{addr: s.Addr, data: data})
			}
		}
		b.got = readGOT(ef.File)
		if len(b.text) == 0 {
			textErr = fmt.Errorf("datatype: %s has no code (is it a separate debug file? pass the executable first)", execPath)
		}
		return nil
	})
	goSafe(&g, debugPath, func() error {
		b.loc = sectionData(df.File, ".debug_loc")
		b.loclists = sectionData(df.File, ".debug_loclists")
		if s := df.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS {
			if d, err := s.Data(); err == nil {
				b.frames = newCFATable(d, 0, false)
			}
		}
		if b.frames.empty() {
			if s := ef.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS {
				if d, err := s.Data(); err == nil {
					b.frames = newCFATable(d, s.Addr, true)
				}
			}
		}
		return nil
	})
	// A lazy index needs the symbol table's data objects (extern globals).
	var objects []objectSym
	objectsRead := false
	if s := df.Section(".debug_info"); s != nil && int64(s.Size) > lazyIndexBytes {
		objectsRead = true
		goSafe(&g, debugPath, func() error {
			objects = dataObjects(ef.File)
			return nil
		})
	}
	goSafe(&g, debugPath, func() error {
		b.bytes, dwarfErr = b.loadDWARF(df.File)
		if dwarfErr != nil {
			return nil
		}
		if int64(len(b.info)) > lazyIndexBytes {
			indexErr = b.indexUnitRanges()
		} else {
			indexErr = b.index()
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if textErr != nil {
		return nil, textErr
	}
	if dwarfErr != nil {
		return nil, fmt.Errorf("datatype: %s has no usable DWARF (%w); install its debug info (-dbg/-dbgsym package or debuginfod)", debugPath, dwarfErr)
	}
	if indexErr != nil {
		return nil, fmt.Errorf("datatype: index DWARF of %s: %w", debugPath, indexErr)
	}
	if b.lazy {
		if !objectsRead {
			objects = dataObjects(ef.File)
		}
		b.objects = objects
		b.bytes += int64(len(b.objects)) * (int64(unsafe.Sizeof(objectSym{})) + 24)
	}
	for _, t := range b.text {
		b.bytes += int64(len(t.data))
	}
	b.bytes += int64(len(b.loc) + len(b.loclists)) // .debug_addr is counted with the DWARF
	if b.frames != nil {
		b.bytes += int64(b.frames.bytes)
	}
	b.bytes += int64(len(b.funcs))*int64(unsafe.Sizeof(funcRange{})) + int64(len(b.globals))*int64(unsafe.Sizeof(global{}))
	return b, nil
}

// Size estimates the memory the Binary holds: the code and debug sections
// it read, its index, the attribution results it remembers and, roughly,
// its caches of DIEs, types, scopes and decoded functions (per-entry
// averages). A cache of Binaries bounds its bytes with it. The averages
// are calibrated against the live heap (libc's debug file and a Go
// binary; symbolize's TestMemoryWithinBudget checks the sum within 20%):
// the sections count with their parsed abbreviation tables (loadDWARF) and
// a seventh more (first measured with debug/dwarf's parsed units, which
// are gone; the sum still matches the heap), and each remembered result
// also has its key in distinctIdx.
func (b *Binary) Size() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.bytes + b.bytes/7
	n += int64(len(b.distinct))*(2*int64(unsafe.Sizeof(Access{}))+32) + int64(len(b.memo)+len(b.skidMemo))*32
	n += int64(len(b.entries))*512 + int64(len(b.types))*128 + int64(len(b.named))*1024
	n += int64(len(b.scopes))*2048 + int64(len(b.code))*1024 + int64(len(b.layouts))*2048
	return n
}

// loadDWARF reads the DWARF sections attribution reads (not .debug_line,
// which saves decompressing it) into b, and the headers of .debug_info's
// units, and returns the bytes of all the sections it read. A .debug_info
// whose first unit header is unreadable is an error.
func (b *Binary) loadDWARF(f *elf.File) (int64, error) {
	var n int64
	read := func(name string) []byte {
		d := sectionData(f, name)
		n += int64(len(d))
		return d
	}
	b.info = read(".debug_info")
	if b.info == nil {
		return 0, errors.New("no .debug_info section")
	}
	b.order = f.ByteOrder
	if _, err := dwarfbuf.ReadUnit(b.info, 0, uint64(len(b.info)), b.order); err != nil {
		return 0, err
	}
	b.abbrevSec = read(".debug_abbrev")
	// Every unit's abbreviation table is parsed and kept (dies.go): about
	// 12 times the section (measured on Debian's vmlinux).
	n += 11 * int64(len(b.abbrevSec))
	b.strSec = read(".debug_str")
	b.rangesSec = read(".debug_ranges")
	b.addrSec = read(".debug_addr")
	b.strOffsets = read(".debug_str_offsets")
	b.rnglists = read(".debug_rnglists")
	b.lineStrSec = read(".debug_line_str")
	b.typeUnits = read(".debug_types")
	b.units = parseUnitHeaders(b.info, b.order)
	return n, nil
}

// gotSlot is a GOT entry: the address the dynamic linker stores in it, when
// it is inside this object, and the symbol's name.
type gotSlot struct {
	target uint64
	name   string
}

// readGOT maps GOT slots to the addresses they will hold, from the dynamic
// relocations: position-independent code reaches exported globals through
// them (mov sym@GOTPCREL(%rip), %rax).
func readGOT(f *elf.File) map[uint64]gotSlot {
	got := map[uint64]gotSlot{}
	syms, _ := f.DynamicSymbols() // index i+1 in the relocations
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		for i := 0; i+24 <= len(d); i += 24 {
			r := reader{B: d, Pos: i}
			off, info, addend := r.U64(), r.U64(), int64(r.U64())
			switch relocKind(f.Machine, uint32(info)) {
			case relRelative:
				got[off] = gotSlot{target: uint64(addend)}
			case relSymbol:
				si := int(info >> 32)
				if si < 1 || si > len(syms) {
					continue
				}
				sym := syms[si-1]
				if sym.Section == elf.SHN_UNDEF || sym.Value == 0 {
					got[off] = gotSlot{name: sym.Name} // defined in another object
					continue
				}
				got[off] = gotSlot{target: sym.Value + uint64(addend), name: sym.Name}
			}
		}
	}
	return got
}

type relKind uint8

const (
	relOther    relKind = iota
	relRelative         // the slot holds the load address plus the addend
	relSymbol           // the slot holds a symbol's address
)

// relocKind classifies a dynamic relocation type of x86-64 or AArch64.
func relocKind(m elf.Machine, t uint32) relKind {
	if m == elf.EM_AARCH64 {
		switch elf.R_AARCH64(t) {
		case elf.R_AARCH64_RELATIVE:
			return relRelative
		case elf.R_AARCH64_GLOB_DAT, elf.R_AARCH64_ABS64:
			return relSymbol
		}
		return relOther
	}
	switch elf.R_X86_64(t) {
	case elf.R_X86_64_RELATIVE:
		return relRelative
	case elf.R_X86_64_GLOB_DAT, elf.R_X86_64_64:
		return relSymbol
	}
	return relOther
}

// goSafe runs f on g, turning a panic (debug/elf panics on some malformed
// input) into the error Open gives for one.
func goSafe(g *errgroup.Group, path string, f func() error) {
	g.Go(func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("datatype: malformed debug info in %s: %v", path, r)
			}
		}()
		return f()
	})
}

// sectionParts is the size above which a section is read in pieces at
// once: a cold kernel .debug_info reads about twice as fast in two.
const sectionParts = 32 << 20

// inFile says whether the file holds a section's last byte: a damaged
// header may claim gigabytes in a small file, which sectionData must not
// allocate (Data reads in bounded chunks and fails at the file's end).
func inFile(s *elf.Section) bool {
	var last [1]byte
	n, _ := s.ReadAt(last[:], int64(s.Size)-1)
	return n == 1
}

func sectionData(f *elf.File, name string) []byte {
	s := f.Section(name)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil
	}
	if s.Flags&elf.SHF_COMPRESSED == 0 && s.Size > 0 && s.Size == s.FileSize && s.Size < 1<<32 && inFile(s) {
		// One read into a buffer of the section's size: Data reads a large
		// section in growing chunks, copying it over and over (a kernel's
		// .debug_info is 170 MB).
		d := make([]byte, s.Size)
		parts := max(1, min(2*runtime.GOMAXPROCS(0), int(s.Size/sectionParts)))
		step := (len(d) + parts - 1) / parts
		var g errgroup.Group
		for off := 0; off < len(d); off += step {
			p := d[off:min(off+step, len(d))]
			g.Go(func() error {
				if n, err := s.ReadAt(p, int64(off)); n < len(p) {
					return cmp.Or(err, io.ErrUnexpectedEOF)
				}
				return nil // io.EOF with every byte read is not a failure
			})
		}
		if g.Wait() == nil {
			return d
		}
	}
	d, err := s.Data()
	if err != nil {
		return nil
	}
	return d
}

// parseUnitHeaders lists the units of .debug_info. It stops at a header
// dwarfbuf.ReadUnit refuses: the units after it cannot be found.
func parseUnitHeaders(info []byte, order binary.ByteOrder) []unitInfo {
	var units []unitInfo
	for off := uint64(0); off < uint64(len(info)); {
		h, err := dwarfbuf.ReadUnit(info, off, uint64(len(info)), order)
		if err != nil {
			break
		}
		units = append(units, unitInfo{Unit: h})
		off = h.End
	}
	return units
}

func (b *Binary) unitOf(off dwarf.Offset) int32 {
	i := sort.Search(len(b.units), func(i int) bool { return b.units[i].End > uint64(off) })
	if i < len(b.units) && b.units[i].Off <= uint64(off) {
		return int32(i)
	}
	return -1
}

// index reads every DIE once, recording compile-unit bases, the address
// ranges of subprograms and variables at fixed addresses: each unit's top
// DIE (its bases, which its other DIEs' addresses depend on) with a
// dieReader, then the units with unitScan on all cores (a dieReader for a
// unit it cannot read), in order. A dieReader error fails the index.
func (b *Binary) index() error {
	r := b.reader()
	units := make([]int32, 0, len(b.units))
	for i := range b.units {
		r.Seek(dwarf.Offset(b.units[i].DIEOff))
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			continue
		}
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit, dwarf.TagSkeletonUnit:
			b.noteUnit(int32(i), e)
		}
		units = append(units, int32(i))
	}
	if err := b.indexUnits(units); err != nil {
		return err
	}
	sort.Slice(b.funcs, func(i, j int) bool { return b.funcs[i].lo < b.funcs[j].lo })
	sort.Slice(b.globals, func(i, j int) bool { return b.globals[i].addr < b.globals[j].addr })
	return nil
}

// indexEntries reads DIEs from r until the end of .debug_info or the DIE
// at offset end, appending to funcs and globals (unsorted) and noting
// definitions and, when lazy, variable names. unit is the unit r starts
// in (-1: at the start).
func (b *Binary) indexEntries(r entryReader, unit int32, end uint64) error {
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil || uint64(e.Offset) >= end {
			break
		}
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit, dwarf.TagSkeletonUnit:
			unit = b.unitOf(e.Offset)
			b.noteUnit(unit, e)
		case dwarf.TagSubprogram:
			if e.Val(dwarf.AttrLowpc) == nil && e.Val(dwarf.AttrRanges) == nil {
				break
			}
			rs, err := b.ranges(e)
			if err != nil {
				break
			}
			for _, rg := range rs {
				if rg[1] > rg[0] {
					b.funcs = append(b.funcs, funcRange{lo: rg[0], hi: rg[1], die: e.Offset, unit: unit})
					b.funcByEnt[rg[0]] = e.Offset // calls target the entry, which starts a range
				}
			}
		case dwarf.TagVariable:
			if expr, ok := e.Val(dwarf.AttrLocation).([]byte); ok && len(expr) > 0 && (expr[0] == opAddr || expr[0] == opAddrx) {
				if l := b.decode(expr, unit); l.kind == locAddr {
					b.globals = append(b.globals, global{addr: l.addr, die: e.Offset, unit: unit})
				}
			} else if b.lazy && e.Val(dwarf.AttrDeclaration) != nil {
				b.noteDeclaration(e)
			}
		case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagClassType, dwarf.TagEnumerationType,
			dwarf.TagSubroutineType, dwarf.TagArrayType:
			b.noteDefinition(e)
			if e.Children {
				r.SkipChildren()
			}
		}
	}
	return nil
}

// noteUnit records a compile unit's bases from its DIE.
func (b *Binary) noteUnit(unit int32, e *dwarf.Entry) {
	if unit < 0 {
		return
	}
	u := &b.units[unit]
	if v, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
		u.base = v
	}
	u.rangeBase = rangeBaseOf(e)
	u.addrBase = baseOf(e, dwarf.AttrAddrBase)
	u.loclistsBase = baseOf(e, dwarf.AttrLoclistsBase)
	u.strOffsetsBase = baseOf(e, dwarf.AttrStrOffsetsBase)
	u.rnglistsBase = baseOf(e, dwarf.AttrRnglistsBase)
}

// decode decodes a simple location expression of unit u.
func (b *Binary) decode(expr []byte, u int32) location {
	return decodeExpr(expr, func(i uint64) (uint64, bool) { return b.addrx(u, i) })
}

// addrx reads entry i of the unit's .debug_addr table.
func (b *Binary) addrx(u int32, i uint64) (uint64, bool) {
	if u < 0 {
		return 0, false
	}
	return b.addrAt(b.units[u].addrBase, i, int(b.units[u].AddrSize))
}

// addrAt reads entry i of the .debug_addr table at base, of addresses of
// size bytes.
func (b *Binary) addrAt(base, i uint64, size int) (uint64, bool) {
	p := base + i*uint64(size)
	if p < base || p+uint64(size) > uint64(len(b.addrSec)) || p+uint64(size) < p {
		return 0, false
	}
	r := reader{B: b.addrSec, Pos: int(p), Order: b.order}
	v := r.Uint(size)
	return v, !r.Err
}

// locRange is one decoded entry of a location list: loc holds for
// addresses in [lo, hi).
type locRange struct {
	lo, hi uint64
	loc    location
}

// varLocation evaluates v's location at pc. Its location list is decoded
// on first use and kept: a function's variables are looked at again for
// every sample in it.
func (b *Binary) varLocation(u int32, v *variable, pc uint64) location {
	if !v.decoded {
		v.ranges = b.decodeLocations(v.loc, v.class, u)
		v.decoded = true
	}
	for _, r := range v.ranges {
		if pc >= r.lo && pc < r.hi {
			return r.loc
		}
	}
	return location{}
}

// decodeLocations decodes a DW_AT_location (or DW_AT_frame_base) value: an
// expression, or a DWARF 4 .debug_loc / DWARF 5 .debug_loclists list.
func (b *Binary) decodeLocations(val any, class dwarf.Class, u int32) []locRange {
	var out []locRange
	add := func(lo, hi uint64, expr []byte) bool {
		if lo < hi {
			out = append(out, locRange{lo, hi, b.decode(expr, u)})
		}
		return true
	}
	switch v := val.(type) {
	case []byte:
		add(0, ^uint64(0), v)
	case int64: // sec_offset: .debug_loc (v2-4) or .debug_loclists (v5)
		if u < 0 {
			return nil
		}
		ui := &b.units[u]
		if ui.Version >= 5 {
			walkLoclists(b.loclists, uint64(v), ui.base, b.addrxFunc(u), add)
		} else {
			walkLoc(b.loc, uint64(v), ui.base, add)
		}
	case uint64: // DW_FORM_loclistx: index into the unit's offset table
		if u < 0 || class != dwarf.ClassLocList {
			return nil
		}
		ui := &b.units[u]
		if ui.loclistsBase+v*4+4 > uint64(len(b.loclists)) {
			return nil
		}
		r := reader{B: b.loclists, Pos: int(ui.loclistsBase + v*4)}
		off := uint64(r.U32())
		walkLoclists(b.loclists, ui.loclistsBase+off, ui.base, b.addrxFunc(u), add)
	}
	return out
}

func (b *Binary) addrxFunc(u int32) func(uint64) (uint64, bool) {
	return func(i uint64) (uint64, bool) { return b.addrx(u, i) }
}

// funcAt returns the subprogram range containing pc. Callers hold b.mu
// (a lazy index reads pc's unit on first use).
func (b *Binary) funcAt(pc uint64) (funcRange, bool) {
	b.ensurePC(pc)
	i := sort.Search(len(b.funcs), func(i int) bool { return b.funcs[i].lo > pc }) - 1
	// Ranges may nest (rare): look at a few earlier ones too.
	for j := i; j >= 0 && j > i-4; j-- {
		if pc >= b.funcs[j].lo && pc < b.funcs[j].hi {
			return b.funcs[j], true
		}
	}
	return funcRange{}, false
}

// insnBytes returns the code bytes at pc (up to 15, the longest x86 instruction).
func (b *Binary) insnBytes(pc uint64) []byte {
	for _, s := range b.text {
		if pc >= s.addr && pc < s.addr+uint64(len(s.data)) {
			d := s.data[pc-s.addr:]
			if len(d) > 15 {
				d = d[:15]
			}
			return d
		}
	}
	return nil
}

// readerAt reads the DIE at off and returns it with a reader positioned
// after it, at its children if it has any.
func (b *Binary) readerAt(off dwarf.Offset) (*dieReader, *dwarf.Entry, error) {
	r := &dieReader{b: b, u: -1}
	r.Seek(off)
	e, err := r.Next()
	if err != nil {
		return nil, nil, err
	}
	if e == nil {
		return nil, nil, fmt.Errorf("no DIE at %#x", off)
	}
	return r, e, nil
}

// entry reads the DIE at off (cached).
func (b *Binary) entry(off dwarf.Offset) (*dwarf.Entry, error) {
	if e, ok := b.entries[off]; ok {
		return e, nil
	}
	_, e, err := b.readerAt(off)
	if err != nil {
		return nil, err
	}
	b.entries[off] = e
	return e, nil
}

// attr returns an attribute of e, following DW_AT_abstract_origin and
// DW_AT_specification chains (inlined and out-of-line instances keep their
// name and type on the abstract DIE).
func (b *Binary) attr(e *dwarf.Entry, a dwarf.Attr) any {
	for depth := 0; e != nil && depth < 8; depth++ {
		if v := e.Val(a); v != nil {
			return v
		}
		next, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			next, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
		}
		if !ok {
			return nil
		}
		var err error
		if e, err = b.entry(next); err != nil {
			return nil
		}
	}
	return nil
}
