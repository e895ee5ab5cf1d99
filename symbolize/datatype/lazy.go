package datatype

import (
	"debug/dwarf"
	"debug/elf"
	"slices"
	"sort"
	"unsafe"
)

// Lazy indexing (C and C++ DWARF). A kernel's DWARF (Debian's 6.1 vmlinux: 170 MB of
// .debug_info in about 2,900 units) takes seconds to walk, and a profile
// samples a few hundred of its units. Above lazyIndexBytes of
// .debug_info, Open reads only each unit's top DIE (its code ranges), and
// a unit's DIEs are indexed when an address in its code is first looked
// at (funcAt). What the unindexed units would have given, and how it is
// made up for:
//   - globals defined in another unit: the accessing unit declares them
//     (extern, with their type); the symbol table gives the address;
//   - functions called in another unit (a return value's type): the
//     callee's unit is indexed on the call;
//   - the full definition of a struct the indexed units only declare is
//     not found, and a pointer to it stays incomplete.

// lazyIndexBytes is the .debug_info size above which units are indexed
// on demand (a variable so that tests can index every binary lazily).
// Below it indexing everything costs less than a tenth of a second.
var lazyIndexBytes int64 = 32 << 20

// cuRange is one code range of a compile unit.
type cuRange struct {
	lo, hi uint64
	unit   int32
}

// objectSym is a data object of the ELF symbol table.
type objectSym struct {
	addr, size uint64
	name       string
}

// Go and Rust units declare no globals of other units (packages,
// crates), so their DWARF is always indexed in full.
const (
	langGo   = 0x16
	langRust = 0x1c
)

// indexUnitRanges reads each unit's top DIE: its bases and code ranges
// (Open adds the symbol table's data objects, for extern globals). When a
// unit's language declares no extern globals it indexes every DIE instead.
func (b *Binary) indexUnitRanges() error {
	b.lazy = true
	b.indexed = make([]bool, len(b.units))
	b.declared = map[string]dwarf.Offset{}
	r := b.reader()
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
		default:
			continue
		}
		if lang, _ := e.Val(dwarf.AttrLanguage).(int64); lang == langGo || lang == langRust {
			b.lazy, b.cuRanges, b.indexed, b.declared = false, nil, nil, nil
			return b.index()
		}
		b.noteUnit(int32(i), e)
		rs, err := b.ranges(e)
		if err != nil {
			continue
		}
		for _, rg := range rs {
			if rg[1] > rg[0] {
				b.cuRanges = append(b.cuRanges, cuRange{lo: rg[0], hi: rg[1], unit: int32(i)})
			}
		}
	}
	sort.Slice(b.cuRanges, func(i, j int) bool { return b.cuRanges[i].lo < b.cuRanges[j].lo })
	b.bytes += int64(len(b.cuRanges)) * int64(unsafe.Sizeof(cuRange{}))
	return nil
}

// dataObjects lists the symbol table's data objects, sorted by address.
func dataObjects(ef *elf.File) []objectSym {
	syms, err := ef.Symbols()
	if err != nil {
		return nil
	}
	var objects []objectSym
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Value != 0 {
			objects = append(objects, objectSym{addr: s.Value, size: s.Size, name: s.Name})
		}
	}
	sort.Slice(objects, func(i, j int) bool { return objects[i].addr < objects[j].addr })
	return objects
}

// ensurePC indexes the unit whose code holds pc, once. Callers hold b.mu.
func (b *Binary) ensurePC(pc uint64) {
	if !b.lazy {
		return
	}
	units, _, _ := b.unitsAt(pc, nil)
	b.indexNew(units)
}

// ensureSamples indexes the units of a batch of samples at once (read on
// all cores, the index merged once). Callers hold b.mu.
func (b *Binary) ensureSamples(samples []Sample) {
	if !b.lazy {
		return
	}
	var units []int32
	var last cuRange
	for _, s := range samples {
		if s.PC >= last.lo && s.PC < last.hi {
			continue // the unit just listed
		}
		var c cuRange
		var ok bool
		if units, c, ok = b.unitsAt(s.PC, units); ok {
			last = c
		}
	}
	b.indexNew(units)
}

// indexNew adds the DIEs of units, in this order, to the index.
func (b *Binary) indexNew(units []int32) {
	if len(units) == 0 {
		return
	}
	nf, ng := len(b.funcs), len(b.globals)
	_ = b.indexUnits(units) // a malformed unit keeps what was read before the error
	b.merge(nf, ng)
}

// unitsAt appends to units the units not indexed yet whose code holds pc,
// marking them indexed, and returns the last range holding pc.
func (b *Binary) unitsAt(pc uint64, units []int32) ([]int32, cuRange, bool) {
	var found cuRange
	ok := false
	i := sort.Search(len(b.cuRanges), func(i int) bool { return b.cuRanges[i].lo > pc }) - 1
	for j := i; j >= 0 && j > i-4; j-- { // ranges of units may nest (rare)
		c := b.cuRanges[j]
		if pc < c.lo || pc >= c.hi {
			continue
		}
		found, ok = c, true
		if b.indexed[c.unit] {
			continue
		}
		b.indexed[c.unit] = true
		units = append(units, c.unit)
	}
	return units, found, ok
}

// merge sorts the functions and globals added after the first nf and ng
// into the index.
func (b *Binary) merge(nf, ng int) {
	b.funcs = mergeSorted(b.funcs, nf, func(f funcRange) uint64 { return f.lo })
	b.globals = mergeSorted(b.globals, ng, func(g global) uint64 { return g.addr })
	b.bytes += int64(len(b.funcs)-nf)*int64(unsafe.Sizeof(funcRange{})) + int64(len(b.globals)-ng)*int64(unsafe.Sizeof(global{}))
}

// mergeSorted sorts s[n:] by key and merges it into the sorted s[:n].
func mergeSorted[T any](s []T, n int, key func(T) uint64) []T {
	if n == len(s) {
		return s
	}
	add := s[n:]
	slices.SortStableFunc(add, func(a, b T) int {
		switch ka, kb := key(a), key(b); {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	if n == 0 {
		return s
	}
	out := make([]T, 0, len(s))
	old := s[:n]
	i, j := 0, 0
	for i < len(old) && j < len(add) {
		if key(add[j]) < key(old[i]) {
			out = append(out, add[j])
			j++
		} else {
			out = append(out, old[i])
			i++
		}
	}
	out = append(out, old[i:]...)
	return append(out, add[j:]...)
}

// noteDeclaration remembers a declared variable's DIE by name (the first
// seen), for globals another unit defines.
func (b *Binary) noteDeclaration(e *dwarf.Entry) {
	name, _ := e.Val(dwarf.AttrName).(string)
	if name == "" || e.Val(dwarf.AttrType) == nil {
		return
	}
	if _, ok := b.declared[name]; !ok {
		b.declared[name] = e.Offset
	}
}

// externGlobal adds the global at addr that an indexed unit declares and
// the symbol table places, and reports whether there was one. Callers
// hold b.mu.
func (b *Binary) externGlobal(addr uint64) bool {
	if !b.lazy {
		return false
	}
	i := sort.Search(len(b.objects), func(i int) bool { return b.objects[i].addr > addr }) - 1
	if i < 0 {
		return false
	}
	o := b.objects[i]
	if addr >= o.addr+max(o.size, 1) {
		return false
	}
	die, ok := b.declared[o.name]
	if !ok {
		return false
	}
	if j := sort.Search(len(b.globals), func(j int) bool { return b.globals[j].addr >= o.addr }); j < len(b.globals) && b.globals[j].addr == o.addr {
		return false // already there: the access is not in it
	}
	n := len(b.globals)
	b.globals = append(b.globals, global{addr: o.addr, die: die, unit: b.unitOf(die)})
	b.globals = mergeSorted(b.globals, n, func(g global) uint64 { return g.addr })
	return true
}
