package ingest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize"
	"viewer/symbolize/unwind"
)

// TestDeepDWARFStackKeptWhole parses testdata/fidelity's recording of a
// recursion 320 frames deep (perf record --call-graph=dwarf,32768),
// unwinding with the recorded binary: with the default depth limit every
// stack through the recursion is whole, down to main (perf script
// --max-stack=4096 prints 325 frames); under a 100-frame limit each such
// stack keeps its 99 leaf-most frames under "[truncated N frames]", N the
// frames cut, and the profile's warnings count the stacks cut.
func TestDeepDWARFStackKeptWhole(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "fidelity"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	// perf recorded the program elsewhere: its build-ID cache gives the
	// unwinder this very file.
	cmd := exec.Command(perf, "buildid-cache", "-a", filepath.Join(dir, "deeprec"))
	cmd.Env = append(os.Environ(), "HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("perf buildid-cache: %v\n%s", err, out)
	}
	finder := unwind.NewFinder(symbolize.New(symbolize.Config{BuildIDCacheDir: filepath.Join(home, ".debug"), DebuginfodCacheDir: "-"}))
	data, err := os.ReadFile(filepath.Join(dir, "deeprec-dwarf.data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, depth := range []int{DefaultMaxStackDepth, 100} {
		p, _, err := Parse(data, Limits{MaxStackDepth: depth, Binaries: finder})
		if err != nil {
			t.Fatal(err)
		}
		deep, cut, deepest := 0, 0, 0
		for _, s := range p.Sample {
			n := len(s.Location)
			root := s.Location[n-1]
			if len(root.Line) == 1 && strings.HasPrefix(root.Line[0].Function.Name, "[truncated ") {
				var m int
				fmt.Sscanf(root.Line[0].Function.Name, "[truncated %d frames]", &m)
				if n != depth || m < 320-depth {
					t.Errorf("limit %d: a stack of %d frames ends in %q", depth, n, root.Line[0].Function.Name)
				}
				cut++
				n += m - 1
			}
			deepest = max(deepest, n)
			if n > 320 {
				deep++
			}
		}
		warned := strings.Contains(strings.Join(p.Comments, "\n"), fmt.Sprintf("stacks were deeper than the %d-frame limit", depth))
		t.Logf("limit %d: %d samples, %d through the whole recursion, %d cut, deepest %d frames", depth, len(p.Sample), deep, cut, deepest)
		if deep < len(p.Sample)/2 {
			t.Errorf("limit %d: %d of %d samples unwound through the 320-frame recursion (deepest %d frames); want most", depth, deep, len(p.Sample), deepest)
		}
		switch {
		case depth == DefaultMaxStackDepth && (cut > 0 || warned):
			t.Errorf("limit %d: %d stacks cut", depth, cut)
		case depth == 100 && (cut < deep || !warned):
			t.Errorf("limit 100: %d of %d deep stacks end in a truncation frame; warned %v:\n%s", cut, deep, warned, strings.Join(p.Comments, "\n"))
		}
	}
}
