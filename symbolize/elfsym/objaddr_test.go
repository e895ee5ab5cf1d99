package elfsym

import (
	"debug/elf"
	"testing"
)

// TestObjAddr translates runtime addresses to object addresses for the
// layouts a profile meets, pprof elfexec.GetBase's cases among them.
func TestObjAddr(t *testing.T) {
	load := func(off, vaddr, size uint64, flags elf.ProgFlag) elf.ProgHeader {
		return elf.ProgHeader{Type: elf.PT_LOAD, Off: off, Vaddr: vaddr, Filesz: size, Memsz: size, Flags: flags}
	}
	cases := []struct {
		name                       string
		kind                       elf.Type
		progs                      []elf.ProgHeader
		addr, start, limit, offset uint64
		want                       uint64
	}{
		{"PIE text segment", elf.ET_DYN,
			[]elf.ProgHeader{load(0, 0, 0x1000, elf.PF_R), load(0x1000, 0x1000, 0x2000, elf.PF_R|elf.PF_X)},
			0x555555555123, 0x555555555000, 0x555555557000, 0x1000, 0x1123},
		{"non-PIE executable", elf.ET_EXEC,
			[]elf.ProgHeader{load(0, 0x400000, 0x1000, elf.PF_R), load(0x1000, 0x401000, 0x2000, elf.PF_R|elf.PF_X)},
			0x401234, 0x401000, 0x403000, 0x1000, 0x401234},
		{"non-PIE described with offset 0 at its link address", elf.ET_EXEC,
			[]elf.ProgHeader{load(0, 0x400000, 0x3000, elf.PF_R|elf.PF_X)},
			0x401234, 0x400000, 0x403000, 0, 0x401234},
		{"shared library whose text is not at its file offset", elf.ET_DYN,
			[]elf.ProgHeader{load(0, 0, 0x1000, elf.PF_R), load(0x1000, 0x201000, 0x3000, elf.PF_R|elf.PF_X)},
			0x7f0000002010, 0x7f0000001000, 0x7f0000004000, 0x1000, 0x202010},
		{"second of two executable segments", elf.ET_DYN,
			[]elf.ProgHeader{load(0x1000, 0x1000, 0x1000, elf.PF_R|elf.PF_X), load(0x2000, 0x10000, 0x1000, elf.PF_R|elf.PF_X)},
			0x7f0000000010, 0x7f0000000000, 0x7f0000001000, 0x2000, 0x10010},
	}
	for _, tc := range cases {
		f := &File{path: tc.name, kind: tc.kind, progs: tc.progs}
		got, err := f.ObjAddr(tc.addr, tc.start, tc.limit, tc.offset)
		if err != nil || got != tc.want {
			t.Errorf("%s: ObjAddr(%#x) = %#x, %v; want %#x", tc.name, tc.addr, got, err, tc.want)
		}
	}
	f := &File{path: "x", kind: elf.ET_DYN, progs: []elf.ProgHeader{load(0, 0, 0x1000, elf.PF_R|elf.PF_X)}}
	if _, err := f.ObjAddr(0x5000, 0x1000, 0x2000, 0); err == nil {
		t.Error("an address outside its mapping translated without error")
	}
	// A separate debug file's zeroed segment offsets are estimated.
	est := estimateOffsets([]elf.ProgHeader{{Type: elf.PT_LOAD, Vaddr: 0, Off: 0, Filesz: 0x3b4, Memsz: 0x25388}, {Type: elf.PT_LOAD, Vaddr: 0x26000, Memsz: 0x1550fc, Flags: elf.PF_X}})
	if est[1].Off != 0x26000 || est[1].Filesz != 0x1550fc {
		t.Errorf("estimated %+v", est[1])
	}
}
