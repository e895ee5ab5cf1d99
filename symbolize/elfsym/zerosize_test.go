package elfsym

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// TestZeroSizeSymbols names the addresses after ld.so's size-less assembly
// labels (_start, _dl_start_user: a process's first frames) as
// llvm-symbolizer does in profiles' way (UseSymbolTableNames) and as GNU
// addr2line does in addr2line's way, from libc6-dbg's debug file of the
// ld.so this machine runs. Main named them _dl_help, the function before.
func TestZeroSizeSymbols(t *testing.T) {
	dbg := debugFileOf(t, "/lib64/ld-linux-x86-64.so.2")
	ef, err := elf.Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	ef.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Addresses at, inside and at the end of each size-less label in a code
	// section, up to the next symbol.
	var starts []uint64
	labels := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && int(s.Section) < len(ef.Sections) && ef.Sections[s.Section].Flags&elf.SHF_EXECINSTR != 0 {
			starts = append(starts, s.Value)
			if s.Size == 0 && s.Name != "" {
				labels[s.Name] = true
			}
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	var addrs []uint64
	for _, s := range syms {
		if s.Size != 0 || !labels[s.Name] {
			continue
		}
		i := sort.Search(len(starts), func(i int) bool { return starts[i] > s.Value })
		if i == len(starts) {
			continue // the last label (_etext) ends its section
		}
		next := starts[i]
		addrs = append(addrs, s.Value, s.Value+(next-s.Value)/2, next-1)
	}
	if !labels["_start"] || !labels["_dl_start_user"] {
		t.Fatalf("%s has no size-less _start and _dl_start_user labels; labels: %v", dbg, labels)
	}
	llvm := llvmSymbolize(t, dbg, addrs)
	gnu := gnuFunctions(t, dbg, addrs)
	// Each way on its own File: UseSymbolTableNames comes before lookups.
	lastName := func(f *File, a uint64) string {
		fr, err := f.Lookup(a, nil)
		if err != nil || len(fr) == 0 {
			return fmt.Sprintf("?? (%v)", err)
		}
		return fr[len(fr)-1].Name
	}
	f, err := Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.UseSymbolTableNames(true)
	g, err := Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i, a := range addrs {
		if got, want := lastName(f, a), cleanName(llvm[i][len(llvm[i])-1].fn); got != want {
			t.Errorf("%#x: named %s, llvm-symbolizer %s", a, got, want)
		}
		if got := lastName(g, a); got != gnu[i] {
			t.Errorf("%#x: addr2line's way names %s, GNU addr2line %s", a, got, gnu[i])
		}
	}
	t.Logf("%d addresses after %d size-less labels of %s", len(addrs), len(labels), dbg)
}

// gnuFunctions runs GNU addr2line -f once over addrs: the function name of
// each, "??" when it has none.
func gnuFunctions(t testing.TB, obj string, addrs []uint64) []string {
	t.Helper()
	bin, err := exec.LookPath("addr2line")
	if err != nil {
		t.Fatal("addr2line is not installed (package binutils): run make deps")
	}
	args := []string{"-f", "-e", obj}
	for _, a := range addrs {
		args = append(args, fmt.Sprintf("%#x", a))
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2*len(addrs) {
		t.Fatalf("addr2line printed %d lines for %d addresses", len(lines), len(addrs))
	}
	names := make([]string, len(addrs))
	for i := range addrs {
		names[i] = lines[2*i]
	}
	return names
}

// TestLastSizelessSymbol names the first address of python3.11's .fini,
// crti's size-less _fini and the binary's last code symbol, _fini in
// profiles' way, as perf and llvm-symbolizer do (python3.11-dbg's debug
// file): a process's exit sampled there showed an unnamed frame.
func TestLastSizelessSymbol(t *testing.T) {
	dbg := debugFileOf(t, "/usr/bin/python3.11")
	ef, err := elf.Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	fini := ef.Section(".fini")
	ef.Close()
	if fini == nil {
		t.Fatalf("%s has no .fini section", dbg)
	}
	f, err := Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.UseSymbolTableNames(true)
	for _, a := range []uint64{fini.Addr, fini.Addr + fini.Size - 1} {
		fr, err := f.Lookup(a, nil)
		if err != nil || len(fr) == 0 || fr[len(fr)-1].Name != "_fini" {
			t.Errorf("%#x (in .fini): frames %v, err %v; want _fini", a, fr, err)
		}
	}
	if fr, _ := f.Lookup(fini.Addr+fini.Size, nil); len(fr) > 0 && fr[len(fr)-1].Name == "_fini" {
		t.Errorf("%#x, past .fini's end, named _fini", fini.Addr+fini.Size)
	}
}
