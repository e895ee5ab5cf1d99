package ingest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordedMaxStackKept records testdata/perf/deep with
// --call-graph=fp,24 (perf writes 24 as the event's sample_max_stack) and
// parses it with a depth limit of 8: the limit is raised to the recorded
// 24, so every chain perf kept is kept whole, as perf script prints it,
// and none ends in a "[truncated N frames]" frame. The same limit still
// cuts a plain -g recording of it, which records no depth.
func TestRecordedMaxStackKept(t *testing.T) {
	if testing.Short() {
		t.Skip("records with perf: make test runs it")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	tmp := t.TempDir()
	parse := func(callGraph string) (deepest, cut int) {
		file := filepath.Join(tmp, strings.ReplaceAll(callGraph, ",", "")+".data")
		cmd := exec.Command(perf, "record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph="+callGraph, "-o", file, "--", filepath.Join(perfDir, "deep"), "0.3")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("perf record: %v\n%s", err, out)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := Parse(data, Limits{MaxStackDepth: 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Sample {
			deepest = max(deepest, len(s.Location))
			for _, l := range s.Location {
				for _, ln := range l.Line {
					if strings.HasPrefix(ln.Function.Name, "[truncated ") {
						cut++
					}
				}
			}
		}
		return deepest, cut
	}
	if deepest, cut := parse("fp,24"); cut > 0 || deepest <= 8 || deepest > 24 {
		t.Errorf("recorded with fp,24 and parsed with a depth limit of 8: %d stacks cut, the deepest %d frames; want none cut, the deepest over 8 and at most 24", cut, deepest)
	}
	if _, cut := parse("fp"); cut == 0 {
		t.Errorf("recorded with fp (no depth recorded): no stack cut at the depth limit of 8")
	}
}
