package datatype

import (
	"debug/dwarf"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
)

// TestUnitScanMatchesReader reads every compile unit of the test binaries,
// libc's debug file (libc6-dbg) and, when $VIEWER_VMLINUX names one, a
// kernel, both with unitScan and with dwarf.Reader (indexEntries): the
// functions, globals, definitions and declarations found are the same, in
// the same order, and unitScan reads every unit itself.
func TestUnitScanMatchesReader(t *testing.T) {
	paths := dwarfTestFiles(t, false)
	if v := os.Getenv("VIEWER_VMLINUX"); v != "" && !testing.Short() {
		paths = append(paths, [2]string{v, v})
	}
	type state struct {
		funcs    []funcRange
		globals  []global
		defs     map[defKey]dwarf.Offset
		defSize  map[defKey]int64
		declared map[string]dwarf.Offset
		ents     map[uint64]dwarf.Offset
	}
	reset := func(b *Binary) {
		b.funcs, b.globals = nil, nil
		b.defs, b.defSize = map[defKey]dwarf.Offset{}, map[defKey]int64{}
		b.declared, b.funcByEnt = map[string]dwarf.Offset{}, map[uint64]dwarf.Offset{}
	}
	take := func(b *Binary) state {
		return state{b.funcs, b.globals, b.defs, b.defSize, b.declared, b.funcByEnt}
	}
	for _, p := range paths {
		path := p[1]
		saved := lazyIndexBytes
		lazyIndexBytes = -1
		b, err := Open(p[0], p[1])
		lazyIndexBytes = saved
		if err != nil {
			t.Fatal(err)
		}
		if !b.lazy {
			t.Fatalf("%s: not indexed lazily", path)
		}
		units := map[int32]bool{}
		for _, c := range b.cuRanges {
			units[c.unit] = true
		}
		ref := refDWARF(t, path)
		var nf, ng, nd int
		for u := range units {
			found := b.scanUnit(u)
			if found.slow {
				t.Errorf("%s: unit %d at %#x: unitScan could not read it", path, u, b.units[u].Off)
				continue
			}
			reset(b)
			r := ref.Reader()
			r.Seek(dwarf.Offset(b.units[u].DIEOff))
			if err := b.indexEntries(r, u, b.units[u].End); err != nil {
				t.Fatalf("%s: unit %d: %v", path, u, err)
			}
			want := take(b)
			reset(b)
			b.addFound(&found)
			got := take(b)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: unit %d at %#x: unitScan found\n%+v\ndwarf.Reader found\n%+v", path, u, b.units[u].Off, got, want)
			}
			nf, ng, nd = nf+len(want.funcs), ng+len(want.globals), nd+len(want.defs)+len(want.declared)
		}
		if nf == 0 {
			t.Errorf("%s: no functions compared", path)
		}
		t.Logf("%s: %d units, %d function ranges, %d globals, %d definitions and declarations", filepath.Base(path), len(units), nf, ng, nd)
	}
}

// TestIndexUnitsAtOnce indexes every unit of libc's debug file in one
// batch (read on all cores, as a profile's units are) and one at a time:
// the index is the same. Run it with -race.
func TestIndexUnitsAtOnce(t *testing.T) {
	exe, debug := libcPaths(t)
	open := func() *Binary {
		saved := lazyIndexBytes
		lazyIndexBytes = -1
		defer func() { lazyIndexBytes = saved }()
		b, err := Open(exe, debug)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one, all := open(), open()
	var units []int32
	for _, c := range one.cuRanges {
		one.ensurePC(c.lo)
		units, _, _ = all.unitsAt(c.lo, units)
	}
	if len(units) < 100 {
		t.Fatalf("%d units to index, want libc's hundreds", len(units))
	}
	all.indexNew(units)
	if len(one.funcs) == 0 || !reflect.DeepEqual(one.funcs, all.funcs) || !reflect.DeepEqual(one.globals, all.globals) ||
		!reflect.DeepEqual(one.defs, all.defs) || !reflect.DeepEqual(one.declared, all.declared) || !reflect.DeepEqual(one.funcByEnt, all.funcByEnt) {
		t.Errorf("one unit at a time: %d functions, %d globals, %d definitions, %d declarations; all at once: %d, %d, %d, %d",
			len(one.funcs), len(one.globals), len(one.defs), len(one.declared), len(all.funcs), len(all.globals), len(all.defs), len(all.declared))
	}
}

// TestFullIndexMatchesReader: the index Open builds of a whole binary
// (unitScan on every unit, dwarfbuf's reader) is the one a walk of every
// DIE with dwarf.Reader builds, on libc's debug file and the test
// binaries, Go's included: the same function ranges, globals, definitions
// and call targets, in the same order, and every unit's bases.
func TestFullIndexMatchesReader(t *testing.T) {
	for _, p := range dwarfTestFiles(t, true) {
		b, err := Open(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if b.lazy {
			t.Fatalf("%s: indexed lazily", p[1])
		}
		got := []any{b.funcs, b.globals, b.defs, b.defSize, b.funcByEnt, slices.Clone(b.units)}
		b.funcs, b.globals = nil, nil
		b.defs, b.defSize, b.funcByEnt = map[defKey]dwarf.Offset{}, map[defKey]int64{}, map[uint64]dwarf.Offset{}
		for i := range b.units {
			b.units[i].base, b.units[i].addrBase, b.units[i].loclistsBase = 0, 0, 0
			b.units[i].rangeBase, b.units[i].strOffsetsBase, b.units[i].rnglistsBase = 0, 0, 0
		}
		if err := b.indexEntries(refDWARF(t, p[1]).Reader(), -1, ^uint64(0)); err != nil {
			t.Fatal(err)
		}
		sort.Slice(b.funcs, func(i, j int) bool { return b.funcs[i].lo < b.funcs[j].lo })
		sort.Slice(b.globals, func(i, j int) bool { return b.globals[i].addr < b.globals[j].addr })
		want := []any{b.funcs, b.globals, b.defs, b.defSize, b.funcByEnt, b.units}
		for i, what := range []string{"functions", "globals", "definitions", "definition sizes", "call targets", "unit bases"} {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%s: %s differ from dwarf.Reader's", filepath.Base(p[1]), what)
			}
		}
		if len(b.funcs) == 0 {
			t.Errorf("%s: no functions", p[1])
		}
	}
}
