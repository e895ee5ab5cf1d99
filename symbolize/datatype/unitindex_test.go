package datatype

import (
	"debug/dwarf"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestUnitScanMatchesReader reads every compile unit of the test binaries,
// libc's debug file (libc6-dbg) and, when $VIEWER_VMLINUX names one, a
// kernel, both with unitScan and with dwarf.Reader (indexEntries): the
// functions, globals, definitions and declarations found are the same, in
// the same order, and unitScan reads every unit itself.
func TestUnitScanMatchesReader(t *testing.T) {
	libc, libcDebug := libcPaths(t)
	paths := [][2]string{{libc, libcDebug}}
	for _, name := range []string{"datatype-dw5-pie", "datatype-dw4-pie", "datatype-dw4-nopie", "datatype-dw5-nopie", "datatype-dw5-O0",
		"datatype-arm64", "datatype-vmlinux", "index", "index-nopie", "libdatatype.so", "skid", "extern"} {
		p := filepath.Join(testdataDir, name)
		paths = append(paths, [2]string{p, p})
	}
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
		var nf, ng, nd int
		for u := range units {
			found := b.scanUnit(u)
			if found.slow {
				t.Errorf("%s: unit %d at %#x: unitScan could not read it", path, u, b.units[u].off)
				continue
			}
			reset(b)
			r := b.dw.Reader()
			r.Seek(dwarf.Offset(b.units[u].die))
			if err := b.indexEntries(r, u, b.units[u].end); err != nil {
				t.Fatalf("%s: unit %d: %v", path, u, err)
			}
			want := take(b)
			reset(b)
			b.addFound(&found)
			got := take(b)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: unit %d at %#x: unitScan found\n%+v\ndwarf.Reader found\n%+v", path, u, b.units[u].off, got, want)
			}
			nf, ng, nd = nf+len(want.funcs), ng+len(want.globals), nd+len(want.defs)+len(want.declared)
		}
		if nf == 0 {
			t.Errorf("%s: no functions compared", path)
		}
		t.Logf("%s: %d units, %d function ranges, %d globals, %d definitions and declarations", filepath.Base(path), len(units), nf, ng, nd)
	}
}
