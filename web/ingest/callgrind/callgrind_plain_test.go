package callgrind

import (
	"bufio"
	"bytes"
	"io"
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
// --tool=callgrind --cache-sim=yes and reads the file: each function's
// self cost of every event, and the total, is what callgrind_annotate
// lists for it (cache misses are few and spread over many paths, where
// rounding each path's share alone lost or added some), and spin's cost
// is shared between heavy and light 2:1, as their calls' inclusive costs
// say.
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
	run("valgrind", "--tool=callgrind", "--cache-sim=yes", "--callgrind-out-file="+out, bin)

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
	// Where the calls to a function claim more than its whole cost (a
	// call of _Exit, which never returns), its self cost is what the
	// calls claim, as speedscope reads callgrind files; callgrind_annotate
	// lists its own self cost.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rd, err := read(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	overclaimed := overclaimedFunctions(&rd.g)
	t.Logf("functions whose calls claim more than their cost: %v", overclaimed)
	index := map[string]int{}
	for i, st := range p.SampleType {
		index[st.Type] = i
	}
	// callgrind_annotate's "N (pct)  file:function [object]" lines, summed
	// per function name (it lists a function's inlined lines apart, under
	// the inlined file's name).
	lineRe := regexp.MustCompile(`^\s*([\d,]+) \([ \d.]+%\)\s+(.*):([^:\[\] ]+|\(below main\))( \[.*\])?$`)
	for _, ev := range []string{"Ir", "I1mr", "D1mr", "DLmr", "Dw"} {
		si, ok := index[ev]
		if !ok {
			t.Fatalf("sample types %v, want %s", p.SampleType, ev)
		}
		annotate := run("callgrind_annotate", "--threshold=100", "--show="+ev, out)
		want := map[string]int64{}
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
		if ev == "Ir" && (len(want) < 10 || want["spin"] == 0) {
			t.Fatalf("callgrind_annotate listed %d functions, spin %d:\n%s", len(want), want["spin"], annotate)
		}
		got := map[string]int64{}
		var gotTotal int64
		for _, s := range p.Sample {
			leaf := s.Location[0].Line[0].Function.Name
			got[leaf] += s.Value[si]
			gotTotal += s.Value[si]
		}
		var over int64
		for fn, w := range want {
			if o := overclaimed[fn]; o != nil && o[si] {
				if got[fn] < w {
					t.Errorf("%s: self %s %d, less than callgrind_annotate's %d", fn, ev, got[fn], w)
				}
				over += got[fn] - w
			} else if got[fn] != w {
				t.Errorf("%s: self %s %d, callgrind_annotate %d", fn, ev, got[fn], w)
			}
		}
		if gotTotal != wantTotal+over {
			t.Errorf("total %s %d, callgrind_annotate %d (and %d claimed by calls over their callees' cost)", ev, gotTotal, wantTotal, over)
		}
		for fn, g := range got {
			if _, ok := want[fn]; !ok && g != 0 {
				t.Errorf("%s: self %s %d, not listed by callgrind_annotate", fn, ev, g)
			}
		}
	}
	callers := map[string]int64{}
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name == "spin" && len(s.Location) > 1 {
			callers[s.Location[1].Line[0].Function.Name] += s.Value[index["Ir"]]
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

// overclaimedFunctions names the functions of g whose callers' calls
// claim more of an event than the function's whole cost (its self cost
// and its own calls'), by event.
func overclaimedFunctions(g *graph) map[string][]bool {
	claimed := make([][]float64, len(g.fns))
	for f := range g.fns {
		claimed[f] = make([]float64, g.nev)
	}
	for _, m := range g.callees {
		for to, c := range m {
			for e, v := range c {
				claimed[to][e] += v
			}
		}
	}
	out := map[string][]bool{}
	for f, k := range g.fns {
		for e := 0; e < g.nev; e++ {
			whole := g.self[f][e]
			for _, c := range g.callees[f] {
				whole += c[e]
			}
			if claimed[f][e] > whole {
				if out[k.name] == nil {
					out[k.name] = make([]bool, g.nev)
				}
				out[k.name][e] = true
			}
		}
	}
	return out
}
