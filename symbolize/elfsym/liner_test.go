package elfsym

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestFastLinerMatchesDebugDWARF checks the fast decoder against the
// debug/dwarf one on every test binary and on libc, address by address.
func TestFastLinerMatchesDebugDWARF(t *testing.T) {
	files := []string{libcDebug(t)}
	for _, b := range append(testBinaries, "c-zstd") {
		files = append(files, filepath.Join(testdataDir, b))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			fast, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fast.Close()
			if dw, err := fast.dwarf(); err != nil {
				t.Fatal(err)
			} else if _, ok := dw.(*fastLiner); !ok {
				t.Fatalf("%s: fell back to debug/dwarf", path)
			}
			slow, err := Open(path)
			if err == nil {
				slow.debugDWARF = true
				var dw liner
				if dw, err = slow.dwarf(); err == nil {
					if _, ok := dw.(*dwarfLiner); !ok {
						t.Fatalf("%s: debugDWARF set, but decoded with %T", path, dw)
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			addrs := textAddrs(fast)
			if len(addrs) > 30000 {
				addrs = libcAddrs(t, fast, 30000, 7)
			}
			bad := 0
			for _, a := range addrs {
				f1, err1 := fast.Lookup(a, nil)
				f2, err2 := slow.Lookup(a, nil)
				if fmt.Sprint(f1, err1) != fmt.Sprint(f2, err2) {
					bad++
					if bad < 5 {
						t.Errorf("%#x:\n  fast  %v %v\n  debug/dwarf %v %v", a, f1, err1, f2, err2)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d addresses differ", bad, len(addrs))
			}
		})
	}
}

// TestLazyPerUnit: one lookup in libc decodes one compile unit of its
// thousands, and inflates .debug_info only as far as that unit.
func TestLazyPerUnit(t *testing.T) {
	f, err := Open(libcDebug(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dw, err := f.dwarf()
	if err != nil {
		t.Fatal(err)
	}
	l, ok := dw.(*fastLiner)
	if !ok {
		t.Fatal("libc fell back to debug/dwarf")
	}
	// The function whose unit comes first in .debug_info.
	idx := *l.index.Load()
	slots := *l.slotsPtr.Load()
	first := idx[0]
	for _, r := range idx {
		if slots[r.slot].off < slots[first.slot].off {
			first = r
		}
	}
	frames, err := f.Lookup(first.lo, nil)
	if err != nil || len(frames) == 0 {
		t.Fatalf("lookup %#x: %v %v", first.lo, frames, err)
	}
	decoded := 0
	l.mu.Lock()
	for _, u := range l.units {
		if u.data.Load() != nil {
			decoded++
		}
	}
	units := len(slots)
	l.mu.Unlock()
	if decoded != 1 {
		t.Errorf("%d units decoded for one address, want 1 (of %d)", decoded, units)
	}
	if n, total := l.info.filled.Load(), len(l.info.data); n > int64(total)/2 {
		t.Errorf(".debug_info inflated to %d of %d bytes for a unit at its start", n, total)
	}
}
