package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestConvertPerfData converts a recorded perf.data to a pprof file and
// reads it back: samples, the kernel mapping and build IDs survive.
func TestConvertPerfData(t *testing.T) {
	out := filepath.Join(t.TempDir(), "fp.pb.gz")
	var stderr bytes.Buffer
	err := runWith(context.Background(), []string{"convert", "../../testdata/perf/fp.data", "-o", out}, stdio{out: &bytes.Buffer{}, err: &stderr})
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "as perf.data:") {
		t.Errorf("stderr %q does not name the detected format", stderr.String())
	}
	// The summary counts samples as perf script prints them, not stacks.
	script, err := exec.Command("perf", "script", "-F", "ip", "-i", "../../testdata/perf/fp.data").Output()
	if err != nil {
		t.Fatalf("perf script (package linux-perf): %v", err)
	}
	samples := len(strings.Split(strings.TrimSpace(string(script)), "\n\n"))
	if want := fmt.Sprintf(": %d samples,", samples); !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q does not say %q", stderr.String(), want)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	if n == 0 {
		t.Fatal("no samples")
	}
	ids := map[string]string{}
	for _, m := range p.Mapping {
		ids[filepath.Base(m.File)] = m.BuildID
	}
	if ids["[kernel.kallsyms]"] == "" || ids["deep"] == "" || ids["libm.so.6"] == "" {
		t.Errorf("build IDs by file: %v", ids)
	}
}

// TestConvertFoldedStdinToStdout pipes folded stacks through convert.
func TestConvertFoldedStdinToStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	in := strings.NewReader("main;work 3\nmain;idle 1\nbroken\n")
	if err := runWith(context.Background(), []string{"convert", "-", "-o", "-"}, stdio{in: in, out: &stdout, err: &stderr}); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 2 {
		t.Errorf("%d samples, want 2", len(p.Sample))
	}
	// 4 samples in 2 stacks: the summary counts samples, as flamegraph.pl would.
	if !strings.Contains(stderr.String(), ": 4 samples,") {
		t.Errorf("stderr %q does not say 4 samples", stderr.String())
	}
	if !strings.Contains(stderr.String(), "skipped 1 unreadable line: line 3") {
		t.Errorf("stderr %q does not report the bad line", stderr.String())
	}
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("\x00\x01 this is not a profile"), 0o644)
	trunc := filepath.Join(dir, "trunc.data")
	data, err := os.ReadFile("../../testdata/perf/fp.data")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(trunc, data[:len(data)/2], 0o644)
	for _, tc := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"convert"}, true, "exactly one input"},
		{[]string{"convert", garbage}, true, "-o"},
		{[]string{"convert", garbage, "-o", filepath.Join(dir, "x")}, false, "not a recognised profile"},
		{[]string{"convert", trunc, "-o", filepath.Join(dir, "y")}, false, "truncated"},
		{[]string{"convert", filepath.Join(dir, "missing"), "-o", filepath.Join(dir, "z")}, false, "no such file"},
	} {
		err := runWith(context.Background(), tc.args, stdio{out: &bytes.Buffer{}, err: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want it to mention %q", tc.args, err, tc.want)
			continue
		}
		if _, isUsage := err.(usageError); isUsage != tc.usage {
			t.Errorf("%v: usage error = %v, want %v", tc.args, isUsage, tc.usage)
		}
	}
}

// TestConvertDebugDirUnwinds converts a --call-graph=dwarf recording of a
// stripped binary (testdata/fidelity/stripped-dwarf.data, recorded from a
// directory that no longer exists) on a machine that does not hold it where
// perf ran it: convert's warning says to add it with --debug-dir, and with
// --debug-dir naming the directory that does hold it, the stacks unwind
// through it to their outermost frame, as perf script's do.
func TestConvertDebugDirUnwinds(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no perf build-ID cache that holds it
	t.Setenv("DEBUGINFOD_URLS", "")
	data := "../../testdata/fidelity/stripped-dwarf.data"
	convert := func(args ...string) (depth int, stderr string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.pb.gz")
		var e bytes.Buffer
		if err := runWith(context.Background(), append([]string{"convert", data, "-o", out}, args...), stdio{out: &bytes.Buffer{}, err: &e}); err != nil {
			t.Fatal(err, e.String())
		}
		for _, s := range readProfile(t, out).Sample { // the deepest run of the program's frames
			n := 0
			for _, l := range s.Location {
				if l.Mapping != nil && filepath.Base(l.Mapping.File) == "sorter-stripped" {
					n++
				}
			}
			depth = max(depth, n)
		}
		return depth, e.String()
	}
	depth, stderr := convert()
	if !strings.Contains(stderr, "with --debug-dir") || depth > 1 {
		t.Fatalf("without the binary: the program's frames %d deep, stderr %q; want its leaf only and a warning naming --debug-dir", depth, stderr)
	}
	depth, stderr = convert("--debug-dir", "../../testdata/fidelity")
	var unwound, all int
	if i := strings.Index(stderr, "unwound "); i >= 0 {
		fmt.Sscanf(stderr[i:], "unwound %d of %d", &unwound, &all)
	}
	t.Logf("with --debug-dir: %d of %d stacks unwound, the program's frames up to %d deep", unwound, all, depth)
	if all == 0 || unwound*100 < all*99 || depth < 4 {
		t.Errorf("with --debug-dir: %d of %d stacks unwound, the program's frames %d deep; want 99%% and its callers (stderr %q)", unwound, all, depth, stderr)
	}
}
