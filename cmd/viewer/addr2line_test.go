package main

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const symbolizeTestdata = "../../testdata/symbolize"

// funcAddrs lists, as hex, addresses at and after the start of every function
// symbol of the ELF file (or of its debug file when it is stripped).
func funcAddrs(t *testing.T, path string) []string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	var out []string
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		for d := uint64(0); d < 40; d += 5 {
			out = append(out, fmt.Sprintf("%#x", s.Value+d))
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no function symbols", path)
	}
	return out
}

// TestAddr2lineMatchesGNU runs viewer addr2line and GNU addr2line on the same
// addresses with the same flags and requires the same output, byte for byte.
func TestAddr2lineMatchesGNU(t *testing.T) {
	gnu, err := exec.LookPath("addr2line")
	if err != nil {
		t.Fatalf("GNU addr2line not installed (package binutils): run make deps")
	}
	cases := []struct {
		bin, syms string
		flags     []string
	}{
		{"c-pie-dwarf5", "c-pie-dwarf5", []string{"-a", "-f", "-i"}},
		{"c-nopie-dwarf4", "c-nopie-dwarf4", []string{"-f", "-i"}},
		{"cxx-dwarf5", "cxx-dwarf5", []string{"-a", "-f", "-i", "-C"}},
		{"cxx-dwarf5", "cxx-dwarf5", []string{"-f"}},
		{"c-lib", "c-lib", []string{"-a", "-p", "-f", "-i"}},
		{"c-zlib", "c-zlib", []string{"-s", "-i"}},
		{"c-pie-dwarf5", "c-pie-dwarf5", []string{"-afiC"}},
		{"c-pie-dwarf5", "c-pie-dwarf5", []string{"--functions", "--inlines", "--pretty-print"}},
		// Stripped: both follow .gnu_debuglink to c-stripped.debug.
		{"c-stripped", "c-stripped.debug", []string{"-a", "-f", "-i"}},
	}
	for _, tc := range cases {
		t.Run(tc.bin+strings.Join(tc.flags, ""), func(t *testing.T) {
			bin := filepath.Join(symbolizeTestdata, tc.bin)
			addrs := funcAddrs(t, filepath.Join(symbolizeTestdata, tc.syms))
			input := strings.Join(addrs, "\n") + "\n"
			cmd := exec.Command(gnu, append(append([]string{}, tc.flags...), "-e", bin)...)
			cmd.Stdin = strings.NewReader(input)
			want, err := cmd.Output()
			if err != nil {
				t.Fatalf("addr2line: %v", err)
			}
			var out, errb bytes.Buffer
			args := append(append([]string{"addr2line"}, tc.flags...), "-e", bin)
			if err := runWith(context.Background(), args, stdio{in: strings.NewReader(input), out: &out, err: &errb}); err != nil {
				t.Fatalf("viewer addr2line: %v\n%s", err, errb.String())
			}
			if out.String() != string(want) {
				t.Errorf("output differs from GNU addr2line\n%s", lineDiff(string(want), out.String()))
			}
			// Addresses as arguments give the same output as on stdin.
			var out2 bytes.Buffer
			if err := runWith(context.Background(), append(args, addrs...), stdio{in: strings.NewReader(""), out: &out2, err: &errb}); err != nil {
				t.Fatal(err)
			}
			if out2.String() != out.String() {
				t.Errorf("addresses as arguments give other output than on stdin")
			}
		})
	}
}

// lineDiff shows the first differing lines of two outputs.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < max(len(w), len(g)) && n < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  GNU:    %q\n  viewer: %q\n", i+1, wl, gl)
			n++
		}
	}
	return b.String()
}

func TestAddr2lineErrors(t *testing.T) {
	var errb bytes.Buffer
	err := runWith(context.Background(), []string{"addr2line", "-e", filepath.Join(symbolizeTestdata, "prog.c"), "0x10"}, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &errb})
	if err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("a C source as -e: got %v, want an error saying it is not an ELF object", err)
	}
	err = runWith(context.Background(), []string{"addr2line", "--bogus"}, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &errb})
	if _, ok := err.(usageError); !ok {
		t.Errorf("unknown flag: got %v, want a usage error", err)
	}
}
