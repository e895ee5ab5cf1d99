package callgrind

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestValgrindRecording records a small C program with valgrind
// --tool=callgrind and reads the file: each function's self cost is what
// callgrind_annotate lists for it, and spin's cost is shared between
// heavy and light 2:1, as their calls' inclusive costs say.
func TestValgrindRecording(t *testing.T) {
	for _, tool := range []string{"gcc", "valgrind", "callgrind_annotate"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (.ci/deps installs it): %v", tool, err)
		}
	}
	dir := t.TempDir()
	src, bin, out := filepath.Join(dir, "prog.c"), filepath.Join(dir, "prog"), filepath.Join(dir, "callgrind.out")
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) []byte {
		t.Helper()
		b, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
		return b
	}
	run("gcc", "-O1", "-g", "-o", bin, src)
	run("valgrind", "--tool=callgrind", "--callgrind-out-file="+out, bin)
	annotate := run("callgrind_annotate", "--threshold=100", out)

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 1 || p.SampleType[0].Type != "Ir" {
		t.Fatalf("sample types %v, want Ir", p.SampleType)
	}

	// callgrind_annotate's "N (pct)  file:function [object]" lines, summed
	// per function name (it lists a function's inlined lines apart, under
	// the inlined file's name).
	want := map[string]int64{}
	lineRe := regexp.MustCompile(`^\s*([\d,]+) \([ \d.]+%\)\s+(.*):([^:\[\] ]+)( \[.*\])?$`)
	sc := bufio.NewScanner(bytes.NewReader(annotate))
	var wantTotal int64
	for sc.Scan() {
		m := lineRe.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
		want[m[3]] += n
		wantTotal += n
	}
	if len(want) < 10 || want["spin"] == 0 {
		t.Fatalf("callgrind_annotate listed %d functions, spin %d:\n%s", len(want), want["spin"], annotate)
	}
	got := map[string]int64{}
	var gotTotal int64
	callers := map[string]int64{}
	for _, s := range p.Sample {
		leaf := s.Location[0].Line[0].Function.Name
		got[leaf] += s.Value[0]
		gotTotal += s.Value[0]
		if leaf == "spin" && len(s.Location) > 1 {
			callers[s.Location[1].Line[0].Function.Name] += s.Value[0]
		}
	}
	if math.Abs(float64(gotTotal-wantTotal)) > float64(wantTotal)*1e-4 {
		t.Errorf("total Ir %d, callgrind_annotate %d", gotTotal, wantTotal)
	}
	for fn, w := range want {
		// Each sample's cost is rounded on its own.
		if d := math.Abs(float64(got[fn] - w)); d > float64(w)*1e-3+float64(len(p.Sample)) {
			t.Errorf("%s: self Ir %d, callgrind_annotate %d", fn, got[fn], w)
		}
	}
	if r := float64(callers["heavy"]) / float64(callers["light"]); math.Abs(r-2) > 0.01 {
		t.Errorf("spin under heavy %d, under light %d: ratio %.3f, want 2", callers["heavy"], callers["light"], r)
	}
	// fib recurses: its stacks unroll under light.
	deepest := 0
	for _, s := range p.Sample {
		n := 0
		for _, l := range s.Location {
			if l.Line[0].Function.Name == "fib" || strings.HasPrefix(l.Line[0].Function.Name, "fib'") {
				n++
			}
		}
		if n > 0 && !onStack(s, "light") {
			t.Errorf("fib on a stack without light: %v", names(s))
		}
		deepest = max(deepest, n)
	}
	if deepest < 3 {
		t.Errorf("fib is at most %d deep on a stack; want its recursion unrolled", deepest)
	}
}
