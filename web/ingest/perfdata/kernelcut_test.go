package perfdata

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKernelCutChainsWarned converts testdata/fidelity's frame-pointer
// recording of a 320-deep recursion (perf record -g, the kernel's default
// limit of 127 frames): the kernel cut most chains, which nothing in the
// file marks, and the profile's warnings must count exactly the samples
// whose chain perf script --max-stack=4096 prints with 127 frames.
func TestKernelCutChainsWarned(t *testing.T) {
	perf := needPerf(t)
	file := "../../../testdata/fidelity/deeprec-fp.data"
	out, err := exec.Command(perf, "script", "-f", "--max-stack=4096", "-F", "ip", "-i", file).Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	full, n := 0, 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
			continue
		}
		if n >= defaultMaxStack {
			full++
		}
		n = 0
	}
	if full < 10 {
		t.Fatalf("perf script prints %d chains of %d frames; want at least 10", full, defaultMaxStack)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("warning: %d samples' call chains hold 127 frames, the most the kernel records", full)
	if cm := strings.Join(p.Comments, "\n"); !strings.Contains(cm, want) {
		t.Errorf("comments lack %q:\n%s", want, cm)
	}
}

// TestRaisedStackLimitNotWarned converts the same recursion recorded with
// kernel.perf_event_max_stack raised to 1024: its chains hold 322 frames,
// more than the 127 the file lets the converter assume, so none was cut
// and the profile must not say they probably were.
func TestRaisedStackLimitNotWarned(t *testing.T) {
	data, err := os.ReadFile("../../../testdata/fidelity/deeprec-fp-raised.data")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	deepest := 0
	for _, s := range p.Sample {
		deepest = max(deepest, len(s.Location))
	}
	if deepest <= defaultMaxStack {
		t.Fatalf("the deepest stack holds %d frames; want the recording's 322", deepest)
	}
	if cm := strings.Join(p.Comments, "\n"); strings.Contains(cm, "the most the kernel records") {
		t.Errorf("chains of up to %d frames are said to be cut:\n%s", deepest, cm)
	}
}

// TestThreadsNamedAsPerfNames converts the system-wide fidelity recording
// (perf record -a): every sample's comm label is a name perf script gives
// its thread. A thread with no COMM record of its own (started before the
// recording) takes its process's name, as perf's does; it had no comm
// label.
func TestThreadsNamedAsPerfNames(t *testing.T) {
	perf := needPerf(t)
	f, err := os.Open("../../../testdata/fidelity/system-fp.data.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "system.data")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(perf, "script", "-f", "-F", "comm,tid", "-i", file).Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	names := map[int64]map[string]bool{} // tid -> its names
	for _, l := range strings.Split(string(out), "\n") {
		fs := strings.Fields(l)
		if len(fs) < 2 {
			continue
		}
		tid, err := strconv.ParseInt(fs[len(fs)-1], 10, 64)
		if err != nil {
			continue
		}
		if names[tid] == nil {
			names[tid] = map[string]bool{}
		}
		names[tid][strings.Join(fs[:len(fs)-1], " ")] = true
	}
	p, err := Parse(data, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		tid := s.NumLabel["tid"]
		if len(tid) != 1 {
			t.Fatalf("a sample with tid labels %v", tid)
		}
		if c := s.Label["comm"]; len(c) != 1 || !names[tid[0]][c[0]] {
			t.Errorf("thread %d's sample has comm %q; perf script names it %v", tid[0], c, names[tid[0]])
		}
	}
}

// TestReplacedProgramWarned converts a recording of a program run twice
// from one path with the file replaced between the runs (mv over it):
// perf.data keeps one build ID for the path, the second file's, so the
// first run's frames would be named from the second file, as perf report
// names them; the profile must say so and say how to record instead.
// The other recordings here must not.
func TestReplacedProgramWarned(t *testing.T) {
	for file, warned := range map[string]bool{"replaced.data": true, "deeprec-fp.data": false} {
		data, err := os.ReadFile("../../../testdata/fidelity/" + file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(data, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		cm := strings.Join(p.Comments, "\n")
		if got := strings.Contains(cm, "/p was replaced while recording (mapped from 2 files)") && strings.Contains(cm, "--buildid-mmap"); got != warned {
			t.Errorf("%s: warned %v, want %v:\n%s", file, got, warned, cm)
		}
	}
}
