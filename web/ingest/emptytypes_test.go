package ingest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestSystemWideDummyEventDropped reads a `perf record -a` recording: perf
// lists two events (cpu-clock and the side-band dummy:HG) but `perf script`
// prints samples of cpu-clock only. The profile keeps the events perf
// script has samples of, with the same count, and drops the others with a
// warning naming them.
func TestSystemWideDummyEventDropped(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	file := filepath.Join(perfDir, "system.data")
	out, err := exec.Command(perf, "evlist", "-i", file).Output()
	if err != nil {
		t.Fatalf("perf evlist: %v", err)
	}
	events := strings.Fields(string(out))
	out, err = exec.Command(perf, "script", "-F", "event", "-i", file).Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	perSample := map[string]int64{}
	for _, l := range strings.Split(string(out), "\n") {
		if e := strings.TrimSuffix(strings.TrimSpace(l), ":"); e != "" {
			perSample[e]++
		}
	}
	if len(events) < 2 || len(perSample) == len(events) {
		t.Fatalf("the recording should list an event without samples: evlist %v, samples per event %v", events, perSample)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := Parse(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	warning := ""
	for _, c := range p.Comments {
		if strings.HasPrefix(c, "warning: ") && strings.Contains(c, "no samples") {
			warning = c
		}
	}
	for _, e := range events {
		idx := -1
		for i, st := range p.SampleType {
			if st.Type == e+"_count" {
				idx = i
			}
		}
		if n := perSample[e]; n > 0 {
			if idx < 0 {
				t.Errorf("event %s has %d samples in perf script but no %s_count sample type: %v", e, n, e, typeNames(p))
				continue
			}
			var total int64
			for _, s := range p.Sample {
				total += s.Value[idx]
			}
			if total != n {
				t.Errorf("%s_count totals %d, perf script prints %d samples", e, total, n)
			}
			continue
		}
		if idx >= 0 || hasType(p, e) {
			t.Errorf("event %s has no samples but is still a sample type: %v", e, typeNames(p))
		}
		if !strings.Contains(warning, e) {
			t.Errorf("no warning names the dropped event %s (comments %q)", e, p.Comments)
		}
	}
	if err := p.CheckValid(); err != nil {
		t.Error(err)
	}
}

// TestDropEmptySampleTypes checks the values stay with their types, the
// default moves off a dropped type, and a profile with no values at all is
// left whole.
func TestDropEmptySampleTypes(t *testing.T) {
	p := testProfile()
	p.SampleType = append(p.SampleType, &profile.ValueType{Type: "idle", Unit: "count"})
	p.DefaultSampleType = "idle"
	p.Sample[0].Value = []int64{3, 30, 0}
	dropEmptySampleTypes(p)
	if got := typeNames(p); got != "samples cpu" {
		t.Errorf("sample types %q, want samples cpu", got)
	}
	if v := p.Sample[0].Value; len(v) != 2 || v[0] != 3 || v[1] != 30 {
		t.Errorf("values %v, want [3 30]", v)
	}
	if p.DefaultSampleType != "" {
		t.Errorf("default sample type %q still names the dropped type", p.DefaultSampleType)
	}
	if len(p.Comments) != 1 || !strings.Contains(p.Comments[0], "idle") {
		t.Errorf("comments %q, want one warning naming idle", p.Comments)
	}
	if err := p.CheckValid(); err != nil {
		t.Error(err)
	}

	empty := testProfile()
	empty.Sample[0].Value = []int64{0, 0}
	dropEmptySampleTypes(empty)
	if got := typeNames(empty); got != "samples cpu" || len(empty.Comments) != 0 {
		t.Errorf("an all-zero profile became %q with comments %q; want it unchanged", got, empty.Comments)
	}
}

func typeNames(p *profile.Profile) string {
	var s []string
	for _, st := range p.SampleType {
		s = append(s, st.Type)
	}
	return strings.Join(s, " ")
}

func hasType(p *profile.Profile, name string) bool {
	for _, st := range p.SampleType {
		if st.Type == name {
			return true
		}
	}
	return false
}
