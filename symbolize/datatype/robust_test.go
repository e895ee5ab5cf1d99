package datatype

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestOpenErrors(t *testing.T) {
	dir := testdataDir
	for _, c := range []struct {
		name, exec, debug, want string
	}{
		{"missing executable", filepath.Join(dir, "nonexistent"), "", "open executable"},
		{"debug file passed as the executable", filepath.Join(dir, "datatype-dw5-pie.debug"), filepath.Join(dir, "datatype-dw5-pie.debug"), "has no code"},
		{"stripped executable without debug info", filepath.Join(dir, "datatype-dw5-pie.stripped"), filepath.Join(dir, "datatype-dw5-pie.stripped"), "no usable DWARF"},
		{"missing debug file", filepath.Join(dir, "datatype-dw5-pie.stripped"), filepath.Join(dir, "nonexistent.debug"), "open debug info"},
		{"not an ELF file", filepath.Join(dir, "datatype.c"), "", "open executable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Open(c.exec, c.debug)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%s, %s) = %v, %v; want error containing %q", c.exec, c.debug, b, err, c.want)
			}
		})
	}
}

// TestEveryInstruction attributes every instruction of every variant: no
// panic, a known kind, a reason for every unknown, and an in-bounds member
// for every attributed access.
func TestEveryInstruction(t *testing.T) {
	for _, v := range append(variants, variant{"O0", "datatype-dw5-O0", "datatype-dw5-O0"}, variant{"shared library", "libdatatype.so", "libdatatype.so"}) {
		b, err := Open(filepath.Join(testdataDir, v.exec), filepath.Join(testdataDir, v.debug))
		if err != nil {
			t.Fatal(err)
		}
		funcs := disasm(t, filepath.Join(testdataDir, strings.Replace(v.exec, ".stripped", "", 1)))
		n := 0
		for fn, insns := range funcs {
			for _, in := range insns {
				a := b.Attribute(in.addr)
				n++
				switch a.Kind {
				case KindUnknown:
					if a.Reason == "" {
						t.Errorf("%s: %s %#x %q: unknown without a reason", v.name, fn, in.addr, in.text)
					}
				case KindStackOp:
				case KindMember, KindGlobal:
					if a.Offset < 0 || a.Offset >= a.TypeSize || a.MemberOffset+a.MemberSize > a.TypeSize {
						t.Errorf("%s: %s %#x %q: out of bounds %+v", v.name, fn, in.addr, in.text, a)
					}
				default:
					t.Errorf("%s: %s %#x: kind %q", v.name, fn, in.addr, a.Kind)
				}
			}
		}
		if n < 50 {
			t.Errorf("%s: only %d instructions disassembled", v.name, n)
		}
	}
}

// TestCorruptDebugInfo damages the DWARF sections of a test binary in many
// ways: Open must fail with an error or succeed, and Attribute must return,
// never panic (debug info comes from untrusted uploads and servers), with
// the DWARF indexed in full or one unit at a time.
func TestCorruptDebugInfo(t *testing.T) {
	src := filepath.Join(testdataDir, "datatype-dw5-pie")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	var secs []*elf.Section
	for _, s := range ef.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || s.Name == ".eh_frame" {
			secs = append(secs, s)
		}
	}
	ef.Close()
	funcs := disasm(t, src)
	var pcs []uint64
	for _, insns := range funcs {
		for _, in := range insns {
			pcs = append(pcs, in.addr)
		}
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	opened := 0
	for i := 0; i < 60; i++ {
		bad := append([]byte(nil), data...)
		s := secs[i%len(secs)]
		for j := 0; j < 1+r.IntN(16); j++ {
			off := s.Offset + r.Uint64N(s.Size)
			bad[off] = byte(r.Uint32())
		}
		p := filepath.Join(dir, "bad")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(p, p)
		if err == nil {
			opened++
			for _, pc := range pcs {
				a := b.Attribute(pc)
				if a.Kind == "" {
					t.Fatalf("damaged %s (round %d): Attribute(%#x) returned no kind", s.Name, i, pc)
				}
			}
		}
		// Indexed one unit at a time, as a kernel is (unitScan, or
		// dwarf.Reader for a unit it cannot read), the whole batch at once.
		saved := lazyIndexBytes
		lazyIndexBytes = -1
		b, err = Open(p, p)
		lazyIndexBytes = saved
		if err == nil {
			var samples []Sample
			for _, pc := range pcs {
				samples = append(samples, Sample{PC: pc, Weight: 1})
			}
			agg := NewAggregator()
			agg.Add("bad", b, samples)
			_ = agg.Profile()
		}
	}
	if opened == 0 {
		t.Errorf("no damaged binary could be opened: the test exercised nothing past Open")
	}
}

// TestDamagedSectionSize opens a binary whose section headers claim
// gigabytes for its DWARF sections, as a damaged or hostile debug file
// may (CI's fuzzer found one): Open fails or reads what is there, without
// allocating what the headers claim.
func TestDamagedSectionSize(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testdataDir, "datatype-dw5-pie"))
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Class != elf.ELFCLASS64 || ef.ByteOrder != binary.LittleEndian {
		t.Fatal("the test binary should be little-endian ELF64")
	}
	// e_shoff and e_shentsize; sh_size is at 32 in each header.
	shoff, shentsize := binary.LittleEndian.Uint64(data[0x28:]), uint64(binary.LittleEndian.Uint16(data[0x3a:]))
	patched := 0
	for i, s := range ef.Sections {
		if strings.HasPrefix(s.Name, ".debug_") {
			binary.LittleEndian.PutUint64(data[shoff+uint64(i)*shentsize+32:], 0xffff0000) // sh_size
			patched++
		}
	}
	if patched < 3 {
		t.Fatalf("%d DWARF sections patched", patched)
	}
	path := filepath.Join(t.TempDir(), "damaged")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := Open(path, path)
	runtime.ReadMemStats(&after)
	if err == nil {
		_ = b.Attribute(0x1380)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("Open allocated %d MiB for a %d-byte file whose sections claim 4 GiB each (err %v)", got>>20, len(data), err)
	}
}
