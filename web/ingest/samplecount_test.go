package ingest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestCountSamplesAsPerfDoes counts each recording's samples per event as
// `perf script -F event` prints them, one line a sample, and checks viewer
// counts the same, not its distinct stacks.
func TestCountSamplesAsPerfDoes(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	for _, name := range []string{"fp.data", "multi.data", "read.data", "system.data", "dwarf.data"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(perfDir, name)
			out, err := exec.Command(perf, "script", "-F", "event", "-i", file).Output()
			if err != nil {
				t.Fatalf("perf script: %v", err)
			}
			want := map[string]int64{}
			for _, l := range strings.Split(string(out), "\n") {
				if e := strings.TrimSuffix(strings.TrimSpace(l), ":"); e != "" {
					want[e]++
				}
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := Parse(data, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			c := CountSamples(p)
			got := map[string]int64{}
			for _, e := range c.Events {
				got[e.Event] = e.Samples
			}
			if len(got) != len(want) {
				t.Errorf("counted events %v, perf script prints %v", got, want)
			}
			for e, n := range want {
				if got[e] != n {
					t.Errorf("%s: %d samples counted, perf script prints %d", e, got[e], n)
				}
			}
			// Every sample type of an event counts with its event's count.
			for i, st := range p.SampleType {
				ci := CountIndex(p.SampleType, i)
				event := strings.TrimSuffix(st.Type, "_count")
				if ci < 0 || strings.TrimSuffix(p.SampleType[ci].Type, "_count") != event {
					t.Errorf("sample type %s counts with %d, want %s_count", st.Type, ci, event)
				}
			}
			if c.Stacks != len(p.Sample) {
				t.Errorf("stacks %d, want the %d sample records", c.Stacks, len(p.Sample))
			}
		})
	}
}

// TestCountSamplesGoCPU reads a Go CPU profile (samples/count and
// cpu/nanoseconds, from google/pprof's testdata): both types count with
// samples/count, whose total `go tool pprof -sample_index=samples -top`
// prints.
func TestCountSamplesGoCPU(t *testing.T) {
	file := filepath.Join("../../testdata/pprof", "go.crc32.cpu")
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "pprof", "-sample_index=samples", "-top", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`of ([0-9]+) total`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no total in go tool pprof's output:\n%s", out)
	}
	want, _ := strconv.ParseInt(string(m[1]), 10, 64)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	c := CountSamples(p)
	if len(c.Events) != 1 || c.Events[0].Samples != want {
		t.Errorf("counted %+v, go tool pprof totals %d samples", c.Events, want)
	}
	si := -1
	for i, st := range p.SampleType {
		if st.Type == "samples" {
			si = i
		}
	}
	for i, st := range p.SampleType {
		if ci := CountIndex(p.SampleType, i); ci != si {
			t.Errorf("%s/%s counts with type %d, want samples (%d)", st.Type, st.Unit, ci, si)
		}
	}
}

// TestCountSamplesWithoutCount: a profile whose only type is a time (or a
// heap profile's objects and bytes) has no sample count, only its stacks.
func TestCountSamplesWithoutCount(t *testing.T) {
	for _, types := range [][]*profile.ValueType{
		{{Type: "cpu", Unit: "nanoseconds"}},
		{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		{{Type: "lonely_count", Unit: "count"}}, // no "lonely" beside it: not perf's pair
	} {
		p := testProfile()
		p.SampleType = types
		p.Sample[0].Value = make([]int64, len(types))
		for i := range types {
			p.Sample[0].Value[i] = 7
			if CountIndex(types, i) != -1 {
				t.Errorf("%s/%s counts samples", types[i].Type, types[i].Unit)
			}
		}
		if c := CountSamples(p); len(c.Events) != 0 || c.Stacks != 1 {
			t.Errorf("%s: %+v, want no count and 1 stack", types[0].Type, c)
		}
	}
}
