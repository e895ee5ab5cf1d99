package elfsym

import (
	"bytes"
	"debug/elf"
	"fmt"
	"sort"
)

// pltSymbols names the x86-64 PLT stubs "name@plt", as perf and objdump do:
// a sample in a stub (the jump to a library function) is otherwise given
// to the symbol before it (_init). As objdump does, it reads each stub's
// indirect jump (jmp *GOT(%rip)) and names it after the relocation of that
// GOT slot: .rela.plt's in .plt and .plt.sec (IBT), .rela.dyn's in .plt.got.
// It returns nil when the object does not hold the stubs' code, the
// relocations and the dynamic symbols, as a separate debug file does not
// (their sections are NOBITS there).
func pltSymbols(ef *elf.File) []sym {
	if ef.Machine != elf.EM_X86_64 || ef.Class != elf.ELFCLASS64 {
		return nil
	}
	dyn, err := ef.DynamicSymbols()
	if err != nil || len(dyn) == 0 {
		return nil
	}
	// The name each GOT slot's relocation gives, by the slot's address.
	slots := map[uint64]string{}
	for _, n := range []string{".rela.plt", ".rela.dyn"} {
		rel := ef.Section(n)
		if rel == nil || rel.Type != elf.SHT_RELA || rel.Size > 64<<20 {
			continue
		}
		data, err := rel.Data()
		if err != nil {
			continue
		}
		for i := 0; (i+1)*24 <= len(data); i++ {
			off := ef.ByteOrder.Uint64(data[i*24:])
			info := ef.ByteOrder.Uint64(data[i*24+8:])
			switch elf.R_X86_64(info & 0xffffffff) {
			case elf.R_X86_64_JMP_SLOT, elf.R_X86_64_GLOB_DAT:
				if k := int(info>>32) - 1; k >= 0 && k < len(dyn) && dyn[k].Name != "" {
					slots[off] = cleanName(dyn[k].Name)
				}
			case elf.R_X86_64_IRELATIVE:
				// A call to a local ifunc (libc's string functions):
				// objdump names it by the resolver's address, the addend.
				slots[off] = fmt.Sprintf("*ABS*+%#x", ef.ByteOrder.Uint64(data[i*24+16:]))
			}
		}
	}
	if len(slots) == 0 {
		return nil
	}
	var out []sym
	for _, n := range pltSections {
		sec := ef.Section(n)
		if sec == nil || sec.Type != elf.SHT_PROGBITS || sec.Size > 64<<20 {
			continue
		}
		code, err := sec.Data()
		if err != nil {
			continue
		}
		stub := sec.Entsize
		if stub < 8 || stub > 32 {
			stub = 16
		}
		end := sec.Addr + sec.Size
		for o := uint64(0); o+stub <= uint64(len(code)); o += stub {
			// The first jmp *disp32(%rip) (ff 25) of the stub, maybe after
			// endbr64 and a bnd prefix.
			st := code[o : o+stub]
			j := bytes.Index(st, []byte{0xff, 0x25})
			if j < 0 || j+6 > len(st) {
				continue
			}
			disp := int32(ef.ByteOrder.Uint32(st[j+2:]))
			addr := sec.Addr + o
			if name, ok := slots[addr+uint64(j)+6+uint64(int64(disp))]; ok {
				out = append(out, sym{addr: addr, size: stub, name: name + "@plt", secEnd: end})
			}
		}
	}
	return out
}

// pltSections are the sections that hold PLT stubs.
var pltSections = []string{".plt", ".plt.sec", ".plt.got"}

// InPLT reports whether object address addr is in the object's PLT
// (.plt, .plt.sec or .plt.got), by its section headers, which separate debug files
// keep though they drop the stubs' code.
func (f *File) InPLT(addr uint64) bool {
	for _, n := range pltSections {
		if s := f.elf.Section(n); s != nil && addr >= s.Addr && addr < s.Addr+s.Size {
			return true
		}
	}
	return false
}

// PLTNamed reports whether lookups (UseSymbolTableNames) name the PLT
// stubs: the object holds what names them (.rela.plt and .dynsym), or
// UsePLTOf gave them. A separate debug file does not, so its stubs stay
// unnamed until the executable is at hand.
func (f *File) PLTNamed() bool {
	if f.plt.Load() != nil {
		return true
	}
	st := f.symtab()
	return st != nil && st.hasPLT
}

// UsePLTOf names the PLT stubs of this object, a separate debug file, from
// exe, the executable or library it belongs to (checked by the caller to
// have its build ID), as objdump and perf name them ("strlen@plt"). It is
// safe while lookups run: a binary's debug file is loaded and shared
// before a profile shows that it needs the executable.
func (f *File) UsePLTOf(exe *File) {
	var err error
	defer recoverInto(&err, exe.path) // a corrupt executable names no stubs
	stubs := pltSymbols(exe.elf)
	if len(stubs) == 0 {
		return
	}
	sort.Slice(stubs, func(i, j int) bool { return stubs[i].addr < stubs[j].addr })
	f.size.Add(int64(len(stubs)) * 64)
	f.plt.Store(&stubs)
}

// pltName is the name UsePLTOf gave the stub holding addr.
func (f *File) pltName(addr uint64) (string, bool) {
	p := f.plt.Load()
	if p == nil {
		return "", false
	}
	stubs := *p
	i := sort.Search(len(stubs), func(i int) bool { return stubs[i].addr > addr }) - 1
	if i < 0 || addr >= stubs[i].addr+stubs[i].size {
		return "", false
	}
	return stubs[i].name, true
}
