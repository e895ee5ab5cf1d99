package elfsym

import (
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCorruptDWARF damages one DWARF section of a test binary at a time in
// several ways; lookups must return errors or symbol-table names, never
// panic or hang.
func TestCorruptDWARF(t *testing.T) {
	src := filepath.Join(testdataDir, "c-pie-dwarf5")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	damage := map[string]func(b []byte){
		"junk": func(b []byte) {
			for i := range b {
				b[i] = byte(i*7) | 0x80
			}
		},
		"zeros": func(b []byte) { clear(b) },
		"ones": func(b []byte) {
			for i := range b {
				b[i] = 0xff
			}
		},
		"shuffled": func(b []byte) {
			for i := 0; i+1 < len(b); i += 2 {
				b[i], b[i+1] = b[i+1], b[i]
			}
		},
		"tail": func(b []byte) { clear(b[len(b)/2:]) },
	}
	for _, sec := range []string{".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_rnglists", ".debug_line_str"} {
		s := ef.Section(sec)
		if s == nil {
			continue
		}
		for how, fn := range damage {
			t.Run(sec+"/"+how, func(t *testing.T) {
				bad := append([]byte(nil), data...)
				fn(bad[s.Offset+4 : s.Offset+s.FileSize])
				p := filepath.Join(t.TempDir(), "bad")
				if err := os.WriteFile(p, bad, 0o644); err != nil {
					t.Fatal(err)
				}
				f, err := Open(p)
				if err != nil {
					return // refusing the file is fine
				}
				defer f.Close()
				named := 0
				addrs := textAddrs(f)
				for _, a := range addrs {
					frames, err := f.Lookup(a, nil)
					if err != nil && !strings.Contains(err.Error(), p) {
						t.Errorf("error does not name the file: %v", err)
					}
					if len(frames) > 0 && frames[len(frames)-1].Name != "" {
						named++
					}
				}
				if named < len(addrs)/2 {
					t.Errorf("only %d of %d addresses named; the symbol table should name them", named, len(addrs))
				}
			})
		}
	}
}

// TestCompressedSectionErrors: a compressed section claiming an absurd size or
// holding a broken stream gives an error, not a crash or a huge allocation.
func TestCompressedSectionErrors(t *testing.T) {
	src := filepath.Join(testdataDir, "c-zlib")
	data, _ := os.ReadFile(src)
	ef, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	s := ef.Section(".debug_info")
	ef.Close()
	if s.Flags&elf.SHF_COMPRESSED == 0 {
		t.Fatal("c-zlib's .debug_info is not compressed; rebuild testdata")
	}
	for name, fn := range map[string]func(b []byte){
		"huge size":     func(b []byte) { b[8], b[13] = 0xff, 0x7f },
		"broken stream": func(b []byte) { clear(b[24:]) },
	} {
		bad := append([]byte(nil), data...)
		fn(bad[s.Offset : s.Offset+s.FileSize])
		p := filepath.Join(t.TempDir(), "bad")
		os.WriteFile(p, bad, 0o644)
		f, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.DWARFError(); err == nil || !strings.Contains(err.Error(), ".debug_info") {
			t.Errorf("%s: DWARFError = %v, want an error naming .debug_info", name, err)
		}
		if fr, _ := f.Lookup(0x1190, nil); len(fr) == 0 {
			t.Errorf("%s: no symbol-table fallback", name)
		}
		f.Close()
	}
}

// TestSectionPastEnd gives one DWARF section at a time a header claiming 3 GiB
// the file does not have, as a mutated debug file from a stranger may: the
// lookup must refuse the section, naming it, without allocating its claimed
// size (the fuzzer's worker died of that), and still name functions from the
// symbol table.
func TestSectionPastEnd(t *testing.T) {
	src := filepath.Join(testdataDir, "c-pie-dwarf5")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if ef.Class != elf.ELFCLASS64 {
		t.Fatal("test binary is not ELF64")
	}
	shoff := ef.ByteOrder.Uint64(data[0x28:])
	shentsize := uint64(ef.ByteOrder.Uint16(data[0x3a:]))
	for _, name := range []string{".debug_info", ".debug_line", ".debug_str", ".debug_abbrev"} {
		idx := -1
		for i, s := range ef.Sections {
			if s.Name == name {
				idx = i
			}
		}
		if idx < 0 {
			t.Fatalf("%s not in the test binary", name)
		}
		t.Run(name, func(t *testing.T) {
			bad := append([]byte(nil), data...)
			ef.ByteOrder.PutUint64(bad[shoff+uint64(idx)*shentsize+32:], 3<<30)
			p := filepath.Join(t.TempDir(), "bad")
			if err := os.WriteFile(p, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := Open(p)
			if err != nil {
				return // refusing the whole file is fine too
			}
			defer f.Close()
			named := 0
			addrs := textAddrs(f)
			for _, a := range addrs {
				if frames, _ := f.Lookup(a, nil); len(frames) > 0 && frames[len(frames)-1].Name != "" {
					named++
				}
			}
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > 256<<20 {
				t.Errorf("opening and looking up allocated %d MiB for a %d KiB file", got>>20, len(bad)>>10)
			}
			if err := f.DWARFError(); err == nil || !strings.Contains(err.Error(), "past the end of the file") || !strings.Contains(err.Error(), name) {
				t.Errorf("DWARF error = %v, want one naming %s and the end of the file", err, name)
			}
			if named < len(addrs)/2 {
				t.Errorf("only %d of %d addresses named; the symbol table should name them", named, len(addrs))
			}
		})
	}
}
