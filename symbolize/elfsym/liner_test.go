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
			useDebugDWARF = true
			slow, err := Open(path)
			if err == nil {
				_, err = slow.dwarf()
			}
			useDebugDWARF = false
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
