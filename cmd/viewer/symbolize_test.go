package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/elfsym"
)

// TestSymbolizeCommand symbolizes a profile of bare addresses in the C test
// program plus one binary that exists nowhere, and checks the written
// profile and the per-binary summary.
func TestSymbolizeCommand(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	dir := t.TempDir()
	// The binary lives only in a --debug-dir, under its build ID.
	bin, _ := filepath.Abs(filepath.Join(symbolizeTestdata, "c-pie-dwarf5"))
	f, err := elfsym.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	bid := f.BuildID()
	syms := f.Symbols()
	f.Close()
	debugDir := filepath.Join(dir, "debug")
	os.MkdirAll(filepath.Join(debugDir, ".build-id", bid[:2]), 0o755)
	data, _ := os.ReadFile(bin)
	os.WriteFile(filepath.Join(debugDir, ".build-id", bid[:2], bid[2:]+".debug"), data, 0o644)

	ef, _ := elf.Open(bin)
	var text elf.ProgHeader
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			text = p.ProgHeader
		}
	}
	ef.Close()
	const base = 0x555555554000
	m := &profile.Mapping{ID: 1, Start: base + text.Vaddr&^0xfff, Limit: base + (text.Vaddr+text.Memsz+0xfff)&^0xfff, Offset: text.Off &^ 0xfff, File: "/opt/app/bin/app", BuildID: bid}
	gone := &profile.Mapping{ID: 2, Start: 0x7f0000000000, Limit: 0x7f0000010000, File: "/usr/lib/libgone.so.1", BuildID: "00aa11bb22cc33dd44ee55ff66778899aabbccdd"}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Mapping:    []*profile.Mapping{m, gone},
	}
	var compute uint64
	for _, s := range syms {
		if s.Name == "compute" {
			compute = s.Addr
		}
	}
	if compute == 0 {
		t.Fatal("no function compute in the test program")
	}
	// An address inside compute's inlined sum_squares/square and one in libgone.
	for i, a := range []uint64{base + compute + 2, 0x7f0000000123} {
		mm := m
		if i == 1 {
			mm = gone
		}
		loc := &profile.Location{ID: uint64(i + 1), Mapping: mm, Address: a}
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{int64(10 * (i + 1))}})
	}
	in := filepath.Join(dir, "in.pb.gz")
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(in, buf.Bytes(), 0o644)
	out := filepath.Join(dir, "out.pb.gz")

	var stdout, stderr bytes.Buffer
	err = runWith(context.Background(), []string{"symbolize", "--debug-dir", debugDir, in, "-o", out}, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr})
	if err != nil {
		t.Fatalf("symbolize: %v\n%s", err, stderr.String())
	}
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	q, err := profile.Parse(fh)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ln := range q.Location[0].Line {
		names = append(names, ln.Function.Name)
	}
	if got := strings.Join(names, " < "); !strings.HasSuffix(got, "compute") || len(names) < 2 {
		t.Errorf("frames at compute+2: %s; want inlined frames ending in compute", got)
	}
	if q.Location[0].Address != base+compute+2 || len(q.Location[1].Line) != 0 {
		t.Errorf("addresses not kept, or the missing binary got frames")
	}
	if q.Sample[1].Value[0] != 20 {
		t.Errorf("samples changed")
	}
	summary := stderr.String()
	for _, want := range []string{"symbolized", "app", "--debug-dir build-ID tree", "no symbols", "libgone.so.1", "no debug info found", "1 of 2 binaries symbolized"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

func TestSymbolizeCommandUsage(t *testing.T) {
	for _, args := range [][]string{{"symbolize"}, {"symbolize", "in.pb.gz"}, {"symbolize", "a", "b", "-o", "x"}} {
		err := runWith(context.Background(), args, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &bytes.Buffer{}})
		if _, ok := err.(usageError); !ok {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
	dir := t.TempDir()
	notProfile := filepath.Join(dir, "x.txt")
	os.WriteFile(notProfile, []byte("hello"), 0o644)
	err := runWith(context.Background(), []string{"symbolize", notProfile, "-o", filepath.Join(dir, "o.pb.gz")}, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "not a profile") {
		t.Errorf("text input: %v, want an error saying it is not a profile", err)
	}
}

// TestSymbolizePerfData symbolizes a recorded perf.data directly: the
// program's own functions come from its binary, found by build ID in a
// --debug-dir of plain files.
func TestSymbolizePerfData(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "out.pb.gz")
	var stderr bytes.Buffer
	err := runWith(context.Background(), []string{"symbolize", "--debug-dir", "../../testdata/perf", "../../testdata/perf/fp.data", "-o", out}, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &stderr})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	p, err := profile.Parse(fh)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, fn := range p.Function {
		names[fn.Name] = true
	}
	if !names["leaf"] || !names["main"] {
		t.Errorf("functions of the recorded program missing; have %v\n%s", names, stderr.String())
	}
	if !strings.Contains(stderr.String(), "deep") {
		t.Errorf("summary does not name the program:\n%s", stderr.String())
	}
}
