package elfsym

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenLookup opens mutated ELF files and looks up addresses in them, as
// symbolization does with debug files from untrusted servers:
// go test -fuzz FuzzOpenLookup ./symbolize/elfsym. Open and Lookup may fail
// but must not crash, hang or leave the file open.
func FuzzOpenLookup(f *testing.F) {
	for _, name := range []string{"c-pie-dwarf5", "c-nopie-dwarf4", "c-zlib", "c-zstd", "c-stripped", "c-stripped.debug", "libsym.so"} {
		b, err := os.ReadFile(filepath.Join(testdataDir, name))
		if err != nil {
			f.Fatalf("seed: %v", err)
		}
		f.Add(b, uint64(0x1139))
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"), uint64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		path := filepath.Join(dir, "fuzz.elf")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ef, err := Open(path)
		if err != nil {
			return
		}
		defer ef.Close()
		ef.UseSymbolTableNames(true)
		_ = ef.BuildID()
		_ = ef.DWARFError()
		var frames []Frame
		frames, _ = ef.Lookup(addr, frames)
		for i, s := range ef.Symbols() {
			if i == 64 {
				break
			}
			frames, _ = ef.Lookup(s.Addr, frames)
			frames, _ = ef.Lookup(s.Addr+s.Size/2, frames)
		}
		for _, fr := range frames {
			_ = Demangle(fr.Name, true)
		}
	})
}
