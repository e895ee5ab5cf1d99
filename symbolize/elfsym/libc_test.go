package elfsym

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"viewer/symbolize/buildid"
)

// libcDebug returns the path of libc's separate debug file from libc6-dbg,
// found by the build ID of the libc this machine runs.
func libcDebug(t testing.TB) string {
	t.Helper()
	return debugFileOf(t, "/lib/x86_64-linux-gnu/libc.so.6")
}

// debugFileOf returns the path of the separate debug file libc6-dbg installs
// for lib (libc, ld.so), found by the build ID of the one this machine runs.
func debugFileOf(t testing.TB, lib string) string {
	t.Helper()
	lib, err := filepath.EvalSymlinks(lib)
	if err != nil {
		t.Fatalf("%s not found: %v", lib, err)
	}
	f, err := Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := buildid.Paths("/usr/lib/debug", f.BuildID(), buildid.Tree, buildid.Debuginfo)[0].Path
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("debug info %s of %s missing (package libc6-dbg): run make deps", p, lib)
	}
	return p
}

// libcAddrs picks n addresses inside libc's functions, from its symbol table.
func libcAddrs(t testing.TB, f *File, n int, seed uint64) []uint64 {
	var fns []Symbol
	for _, s := range f.Symbols() {
		if s.Size > 0 {
			fns = append(fns, s)
		}
	}
	if len(fns) < 1000 {
		t.Fatalf("only %d sized functions in libc's symbol table", len(fns))
	}
	r := rand.New(rand.NewPCG(seed, 1))
	addrs := make([]uint64, n)
	for i := range addrs {
		s := fns[r.IntN(len(fns))]
		addrs[i] = s.Addr + r.Uint64N(s.Size)
	}
	return addrs
}

type refFrame struct {
	fn, file string
	line     int
}

// llvmSymbolize runs llvm-symbolizer --inlining once over all addresses.
func llvmSymbolize(t testing.TB, obj string, addrs []uint64) [][]refFrame {
	t.Helper()
	bin, err := exec.LookPath("llvm-symbolizer")
	if err != nil {
		t.Fatalf("llvm-symbolizer not installed (package llvm): run make deps")
	}
	var in bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&in, "0x%x\n", a)
	}
	cmd := exec.Command(bin, "--inlining", "--obj="+obj)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llvm-symbolizer: %v", err)
	}
	var res [][]refFrame
	var cur []refFrame
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fn := sc.Text()
		if fn == "" {
			res = append(res, cur)
			cur = nil
			continue
		}
		if !sc.Scan() {
			break
		}
		loc := sc.Text() // file:line:col
		parts := strings.Split(loc, ":")
		fr := refFrame{fn: fn}
		if len(parts) >= 3 {
			fr.file = strings.Join(parts[:len(parts)-2], ":")
			fr.line, _ = strconv.Atoi(parts[len(parts)-2])
		}
		cur = append(cur, fr)
	}
	if len(res) != len(addrs) {
		t.Fatalf("llvm-symbolizer answered %d addresses of %d", len(res), len(addrs))
	}
	return res
}

func frameKey(fn, file string, line int) string {
	if fn == "" {
		fn = "??"
	}
	b := filepath.Base(file)
	if file == "" || file == "??" {
		b = "??"
	}
	return fmt.Sprintf("%s %s:%d", fn, b, line)
}

// TestLibcAgainstLLVMSymbolizer checks frames for thousands of addresses in
// Debian's libc (DWARF 5, zlib-compressed, separate debug file) against
// llvm-symbolizer: function, file base name, line and inline depth.
func TestLibcAgainstLLVMSymbolizer(t *testing.T) {
	dbg := libcDebug(t)
	f, err := Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.UseSymbolTableNames(true)
	addrs := libcAddrs(t, f, 20000, 42)
	want := llvmSymbolize(t, dbg, addrs)
	var bad []string
	var frames []Frame
	for i, a := range addrs {
		frames, err = f.Lookup(a, frames)
		if err != nil {
			t.Fatalf("lookup %#x: %v", a, err)
		}
		var got, exp []string
		for _, fr := range frames {
			got = append(got, frameKey(fr.Name, fr.File, fr.Line))
		}
		for _, fr := range want[i] {
			if fr.fn == "??" && fr.file == "??" && len(want[i]) == 1 {
				continue
			}
			// llvm-symbolizer keeps symbol versions (fnmatch@@GLIBC_2.2.5);
			// we drop them on purpose.
			exp = append(exp, frameKey(cleanName(fr.fn), fr.file, fr.line))
		}
		if strings.Join(got, " | ") != strings.Join(exp, " | ") {
			bad = append(bad, fmt.Sprintf("%#x:\n  got  %s\n  want %s", a, strings.Join(got, " | "), strings.Join(exp, " | ")))
		}
	}
	agree := 1 - float64(len(bad))/float64(len(addrs))
	t.Logf("%d of %d addresses agree with llvm-symbolizer (%.3f%%)", len(addrs)-len(bad), len(addrs), 100*agree)
	if agree < 0.999 {
		t.Errorf("agreement %.3f%% < 99.9%%; mismatches:\n%s", 100*agree, strings.Join(bad, "\n"))
	}
}
