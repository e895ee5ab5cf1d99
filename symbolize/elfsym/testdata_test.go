package elfsym

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/symbolize/golden")

const testdataDir = "../../testdata/symbolize"

// testBinaries are the checked-in test binaries (see testdata/symbolize/build.sh).
var testBinaries = []string{"c-pie-dwarf5", "c-nopie-dwarf4", "c-zlib", "c-stripped.debug", "libsym.so", "c-lib", "cxx-dwarf5"}

func openTestdata(t *testing.T, name string) *File {
	t.Helper()
	f, err := Open(filepath.Join(testdataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	f.UseSymbolTableNames(true)
	return f
}

// textAddrs returns every third address inside the binary's own functions
// (not the C runtime's), enough to hit each line and inlined range.
func textAddrs(f *File) []uint64 {
	skip := map[string]bool{"_start": true, "deregister_tm_clones": true, "register_tm_clones": true,
		"__do_global_dtors_aux": true, "frame_dummy": true, "_init": true, "_fini": true}
	var addrs []uint64
	for _, s := range f.Symbols() {
		// The C++ standard library's instantiations would swell the golden
		// files; llvm-symbolizer checks them all the same.
		if skip[s.Name] || s.Size == 0 || strings.HasPrefix(s.Name, "_ZNSt") || strings.HasPrefix(s.Name, "_ZSt") {
			continue
		}
		for a := s.Addr; a < s.Addr+s.Size; a += 3 {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

func formatFrames(a uint64, frames []Frame) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%#x\n", a)
	if len(frames) == 0 {
		b.WriteString("  ??\n")
	}
	for _, fr := range frames {
		name := Demangle(fr.Name, true)
		if name == "" {
			name = "??"
		}
		fmt.Fprintf(&b, "  %s %s:%d\n", name, fr.File, fr.Line)
	}
	return b.String()
}

// TestGolden symbolizes every third address of each test binary's functions
// and compares with the golden files (-update rewrites them).
func TestGolden(t *testing.T) {
	for _, name := range testBinaries {
		t.Run(name, func(t *testing.T) {
			f := openTestdata(t, name)
			if err := f.DWARFError(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			for _, a := range textAddrs(f) {
				frames, err := f.Lookup(a, nil)
				if err != nil {
					t.Fatalf("%#x: %v", a, err)
				}
				out.WriteString(formatFrames(a, frames))
			}
			golden := filepath.Join(testdataDir, "golden", name+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("%s differs from %s; run go test ./symbolize/elfsym -run TestGolden -update and review the diff", name, golden)
			}
		})
	}
}

// TestTestdataAgainstLLVMSymbolizer checks the same addresses against
// llvm-symbolizer, so the golden files are known right, not just unchanged.
func TestTestdataAgainstLLVMSymbolizer(t *testing.T) {
	for _, name := range testBinaries {
		t.Run(name, func(t *testing.T) {
			f := openTestdata(t, name)
			addrs := textAddrs(f)
			want := llvmSymbolize(t, filepath.Join(testdataDir, name), addrs)
			bad := 0
			for i, a := range addrs {
				frames, err := f.Lookup(a, nil)
				if err != nil {
					t.Fatal(err)
				}
				var got, exp []string
				for j, fr := range frames {
					name := Demangle(fr.Name, true)
					// llvm-symbolizer 14 leaves some long template names mangled.
					if j < len(want[i]) && strings.HasPrefix(want[i][j].fn, "_Z") {
						name = fr.Name
					}
					got = append(got, frameKey(noClone(name), fr.File, fr.Line))
				}
				for _, fr := range want[i] {
					fn := cleanName(fr.fn)
					// llvm-symbolizer gives a PLT stub to the symbol before
					// it (_init); viewer names it as perf and objdump do
					// (TestPLTSymbols checks those names against objdump).
					if len(frames) == 1 && strings.HasSuffix(frames[0].Name, "@plt") && len(want[i]) == 1 {
						fn = frames[0].Name
					}
					exp = append(exp, frameKey(noClone(fn), fr.file, fr.line))
				}
				if g, e := strings.Join(got, " | "), strings.Join(exp, " | "); g != e {
					bad++
					if bad <= 20 {
						t.Errorf("%#x:\n  got  %s\n  want %s", a, g, e)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d addresses differ from llvm-symbolizer", bad, len(addrs))
			}
		})
	}
}

// noClone drops a clone suffix, which demanglers spell differently:
// "f() [clone .isra.0]" (GNU, ours) and "f() (.isra.0)" (llvm).
var cloneRE = regexp.MustCompile(` (\[clone [^]]*\]|\(\.[a-z_]+\.[0-9]+\))`)

func noClone(s string) string { return cloneRE.ReplaceAllString(s, "") }

// TestZstdSections checks that zstd-compressed DWARF (c-zstd) gives the same
// frames as the same binary uncompressed (c-pie-dwarf5): llvm-symbolizer here
// cannot read zstd sections to compare with directly.
func TestZstdSections(t *testing.T) {
	z := openTestdata(t, "c-zstd")
	plain := openTestdata(t, "c-pie-dwarf5")
	if z.BuildID() != plain.BuildID() {
		t.Fatalf("c-zstd is not c-pie-dwarf5 recompressed: build IDs %s, %s", z.BuildID(), plain.BuildID())
	}
	addrs := textAddrs(plain)
	n := 0
	for _, a := range addrs {
		fz, err := z.Lookup(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		fp, _ := plain.Lookup(a, nil)
		if formatFrames(a, fz) != formatFrames(a, fp) {
			t.Fatalf("zstd:\n%splain:\n%s", formatFrames(a, fz), formatFrames(a, fp))
		}
		if len(fz) > 0 && fz[0].Line > 0 {
			n++
		}
	}
	if n < len(addrs)/2 {
		t.Errorf("only %d of %d addresses have lines", n, len(addrs))
	}
}

// TestGoBinary builds a Go program and checks lookups in it (Go's DWARF: no
// .debug_aranges, its own inlining records) against llvm-symbolizer.
func TestGoBinary(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(t.TempDir(), "goprog")
	cmd := exec.Command(goBin, "build", "-o", bin, "./testdata/symbolize/goprog")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.UseSymbolTableNames(true)
	if dw, err := f.dwarf(); err != nil {
		t.Fatal(err)
	} else if _, ok := dw.(*fastLiner); !ok {
		t.Error("Go binary fell back to debug/dwarf")
	}
	var addrs []uint64
	inlined := false
	for _, s := range f.Symbols() {
		// go:textfipsstart and the like are linker markers, not code:
		// llvm-symbolizer gives them a file "go.go" we do not.
		if s.Size == 0 || strings.HasPrefix(s.Name, "go:") {
			continue
		}
		step := uint64(1)
		if !strings.HasPrefix(s.Name, "main.") {
			step = 97 // a sample of the runtime
		}
		for a := s.Addr; a < s.Addr+s.Size; a += step {
			addrs = append(addrs, a)
		}
	}
	want := llvmSymbolize(t, bin, addrs)
	bad := 0
	for i, a := range addrs {
		frames, err := f.Lookup(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got, exp []string
		for _, fr := range frames {
			got = append(got, frameKey(fr.Name, fr.File, fr.Line))
		}
		if len(frames) == 2 && frames[0].Name == "main.add" && frames[1].Name == "main.work" {
			inlined = true
		}
		for _, fr := range want[i] {
			exp = append(exp, frameKey(fr.fn, fr.file, fr.line))
		}
		if g, e := strings.Join(got, " | "), strings.Join(exp, " | "); g != e {
			bad++
			if bad <= 10 {
				t.Errorf("%#x:\n  got  %s\n  want %s", a, g, e)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d addresses differ from llvm-symbolizer", bad, len(addrs))
	}
	if !inlined {
		t.Error("main.add never shows inlined into main.work")
	}
}

// TestRelocatableObject looks up addresses in a .o file (as kernel modules
// are), whose DWARF needs relocating, and compares with GNU addr2line.
func TestRelocatableObject(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatal("gcc not installed: run make deps")
	}
	a2l, err := exec.LookPath("addr2line")
	if err != nil {
		t.Fatal("addr2line not installed (binutils): run make deps")
	}
	obj := filepath.Join(t.TempDir(), "lib.o")
	if out, err := exec.Command(gcc, "-O2", "-g", "-c", filepath.Join(testdataDir, "lib.c"), "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var in strings.Builder
	var addrs []uint64
	for a := uint64(0); a < 0x40; a += 2 {
		addrs = append(addrs, a)
		fmt.Fprintf(&in, "%#x\n", a)
	}
	cmd := exec.Command(a2l, "-f", "-i", "-a", "-e", obj)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// Parse addr2line -a -f -i: an address line, then name and file:line pairs.
	want := map[uint64][]string{}
	var cur uint64
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "0x") {
			fmt.Sscanf(lines[i], "0x%x", &cur)
			continue
		}
		if i+1 < len(lines) {
			want[cur] = append(want[cur], lines[i]+" "+filepath.Base(lines[i+1]))
			i++
		}
	}
	for _, a := range addrs {
		frames, err := f.Lookup(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, fr := range frames {
			loc := "??:0"
			if fr.File != "" {
				loc = fmt.Sprintf("%s:%d", filepath.Base(fr.File), fr.Line)
				// addr2line repeats the row's discriminator on every frame.
				if d := frames[0].Discriminator; d > 0 {
					loc += fmt.Sprintf(" (discriminator %d)", d)
				}
			}
			name := fr.Name
			if name == "" {
				name = "??"
			}
			got = append(got, name+" "+loc)
		}
		if strings.Join(got, " | ") != strings.Join(want[a], " | ") {
			t.Errorf("%#x: got %v, addr2line %v", a, got, want[a])
		}
	}
}
