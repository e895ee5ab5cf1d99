package elfsym

import (
	"debug/elf"
	"slices"
	"sort"
	"strings"
)

// symtabLiner names addresses from .symtab, or .dynsym when the object is
// stripped: no lines, no inlined frames, but better than a bare address.
type symtabLiner struct {
	syms []sym // sorted by addr, one per address (llvm-symbolizer's choice)
	all  []sym // every function symbol, by addr, then table order (addr2line's)
	// hasPLT: syms holds the PLT stubs (the object has .rela.plt and .dynsym).
	hasPLT bool
}

type sym struct {
	addr, size uint64
	name       string
	file       string // the STT_FILE before a local symbol, as addr2line reports it
	secEnd     uint64 // end of the symbol's section
}

func newSymtabLiner(f *File) *symtabLiner {
	syms, err := f.elf.Symbols()
	if err != nil || len(syms) == 0 {
		syms, err = f.elf.DynamicSymbols()
	}
	if err != nil || len(syms) == 0 {
		return nil
	}
	l := &symtabLiner{syms: make([]sym, 0, len(syms))}
	file := ""
	for _, s := range syms {
		t := elf.ST_TYPE(s.Info)
		if t == elf.STT_FILE {
			file = s.Name
			continue
		}
		symFile := ""
		if elf.ST_BIND(s.Info) == elf.STB_LOCAL {
			symFile = file
		}
		if s.Section == elf.SHN_UNDEF || (s.Value == 0 && f.kind != elf.ET_REL) {
			continue
		}
		var sec *elf.Section
		if int(s.Section) < len(f.elf.Sections) {
			sec = f.elf.Sections[s.Section]
		}
		if !codeSymbol(t, s.Name, sec) {
			continue
		}
		var secEnd uint64
		if sec != nil {
			secEnd = sec.Addr + sec.Size
		}
		l.syms = append(l.syms, sym{addr: s.Value, size: s.Size, name: cleanName(s.Name), file: symFile, secEnd: secEnd})
	}
	l.all = make([]sym, len(l.syms))
	copy(l.all, l.syms)
	// Profiles name PLT stubs as perf does; addr2line's way (all) has none.
	plt := pltSymbols(f.elf)
	l.syms, l.hasPLT = append(l.syms, plt...), len(plt) > 0
	sort.SliceStable(l.all, func(i, j int) bool { return l.all[i].addr < l.all[j].addr })
	// Sort by address, then size; of the aliases at one address keep the last
	// (largest, then last in the table), which is the one llvm-symbolizer
	// prints: usually the public name rather than an internal __GI_ alias.
	sort.SliceStable(l.syms, func(i, j int) bool {
		a, b := l.syms[i], l.syms[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		return a.size < b.size
	})
	out := l.syms[:0]
	for _, s := range l.syms {
		if len(out) > 0 && s.addr == out[len(out)-1].addr {
			out[len(out)-1] = s
			continue
		}
		out = append(out, s)
	}
	l.syms = out
	f.size.Add(int64(len(out)+len(l.all)) * 64)
	return l
}

// codeSymbol reports whether a symbol names code: a function, or a label
// without a type in a code section, as assembly entry points such as
// ld.so's _start and _dl_start_user are. GNU addr2line, eu-addr2line,
// llvm-symbolizer and perf all name addresses after those labels; without
// them a process's start-up samples go to the function before (_dl_help).
// ARM's mapping symbols ($x, $d) and local labels (.L) name no function.
func codeSymbol(t elf.SymType, name string, sec *elf.Section) bool {
	switch t {
	case elf.STT_FUNC, elf.STT_GNU_IFUNC:
		return true
	case elf.STT_NOTYPE:
		return sec != nil && sec.Flags&elf.SHF_EXECINSTR != 0 && name != "" && name[0] != '$' && !strings.HasPrefix(name, ".L")
	}
	return false
}

// lookup returns the function symbol holding addr. A symbol without a size
// holds the addresses up to the next symbol or its section's end, the
// last one too (crti's _fini, alone in .fini after all other code).
func (l *symtabLiner) lookup(addr uint64) (string, uint64, bool) {
	lo, hi := 0, len(l.syms)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.syms[m].addr <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	if i < 0 {
		return "", 0, false
	}
	s := l.syms[i]
	if s.size > 0 && addr >= s.addr+s.size {
		return "", 0, false
	}
	if s.size == 0 && addr >= s.secEnd {
		return "", 0, false
	}
	return s.name, s.addr, true
}

// gnuLookup picks the symbol GNU addr2line names addr by: of the symbols
// whose extent holds it, the smallest (first in the table on ties); else
// the nearest symbol below it in the same section.
func (l *symtabLiner) gnuLookup(addr uint64) (sym, bool) {
	all := l.all
	i := sort.Search(len(all), func(i int) bool { return all[i].addr > addr }) - 1
	if i < 0 || addr >= all[i].secEnd {
		return sym{}, false
	}
	// A symbol without a size holds its first byte (bfd's
	// maybe_function_sym), so a label wins at its own address.
	extent := func(s sym) uint64 { return max(s.size, 1) }
	best := -1
	for j := i; j >= 0 && j > i-64; j-- {
		s := all[j]
		if addr < s.addr+extent(s) && (best < 0 || extent(s) <= extent(all[best])) {
			best = j
		}
	}
	if best >= 0 {
		return all[best], true
	}
	// The nearest start below; the first in table order among aliases.
	j := i
	for j > 0 && all[j-1].addr == all[i].addr {
		j--
	}
	return all[j], true
}

// Symbols returns the object's function symbols (address, size, name), sorted
// by address, one per address. Tests and benchmarks pick addresses from them.
func (f *File) Symbols() []Symbol {
	st := f.symtab()
	if st == nil {
		return nil
	}
	out := make([]Symbol, len(st.syms))
	for i, s := range st.syms {
		out[i] = Symbol{Addr: s.addr, Size: s.size, Name: s.name}
	}
	return out
}

// FuncStart returns where the function symbol whose extent holds addr (an
// object address, as Lookup takes it) starts, as llvm-symbolizer finds the
// symbol it names an address by; false when the symbol table has none.
func (f *File) FuncStart(addr uint64) (uint64, bool) {
	st := f.symtab()
	if st == nil {
		return 0, false
	}
	_, start, ok := st.lookup(addr)
	return start, ok && start <= addr
}

// Symbol is one function symbol of an object.
type Symbol struct {
	Addr, Size uint64
	Name       string
}

// signalTrampolines are the names of the functions a signal handler
// returns to (the sa_restorer the kernel puts on the handler's stack as its
// return address): glibc's and musl's __restore_rt, Go's
// runtime.sigreturn__sigaction (runtime.sigreturn before Go 1.21), the
// kernel's 32-bit vDSO's __kernel_rt_sigreturn.
var signalTrampolines = []string{"__restore_rt", "runtime.sigreturn__sigaction", "runtime.sigreturn", "__kernel_rt_sigreturn"}

// SignalTrampolineAt reports whether a signal return trampoline starts at
// addr (an address in the object, as Lookup takes). A call chain holds its
// start as the return address of the signal handler's frame, though no call
// instruction comes before it: that frame is named at addr itself, not at
// addr − 1, which is the padding after the function before it.
func (f *File) SignalTrampolineAt(addr uint64) bool {
	st := f.symtab()
	if st == nil {
		return false
	}
	// Every symbol at addr, aliases too (syms keeps one name an address).
	all := st.all
	for i := sort.Search(len(all), func(i int) bool { return all[i].addr >= addr }); i < len(all) && all[i].addr == addr; i++ {
		if slices.Contains(signalTrampolines, strings.TrimSuffix(all[i].name, ".abi0")) {
			return true
		}
	}
	return false
}
