package elfsym

import (
	"debug/elf"
	"sort"
)

// symtabLiner names addresses from .symtab, or .dynsym when the object is
// stripped: no lines, no inlined frames, but better than a bare address.
type symtabLiner struct {
	syms []sym // sorted by addr
}

type sym struct {
	addr, size uint64
	name       string
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
	for _, s := range syms {
		t := elf.ST_TYPE(s.Info)
		if (t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC) || s.Section == elf.SHN_UNDEF || s.Value == 0 {
			continue
		}
		l.syms = append(l.syms, sym{addr: s.Value, size: s.Size, name: cleanName(s.Name)})
	}
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
	f.size.Add(int64(len(out)) * 48)
	return l
}

// lookup returns the function symbol holding addr. A symbol without a size
// holds the addresses up to the next symbol.
func (l *symtabLiner) lookup(addr uint64) (string, uint64, bool) {
	i := sort.Search(len(l.syms), func(i int) bool { return l.syms[i].addr > addr }) - 1
	if i < 0 {
		return "", 0, false
	}
	s := l.syms[i]
	if s.size > 0 && addr >= s.addr+s.size {
		return "", 0, false
	}
	if s.size == 0 && i+1 == len(l.syms) {
		return "", 0, false
	}
	return s.name, s.addr, true
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

// Symbol is one function symbol of an object.
type Symbol struct {
	Addr, Size uint64
	Name       string
}
