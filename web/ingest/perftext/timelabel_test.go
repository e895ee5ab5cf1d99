package perftext

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"viewer/symbolize/sampling"
)

// TestScriptTimeLabel: perf script text with times keeps them as the
// perf.data converter does (sampling.TimeLabel). The text is the real
// perf script --ns of testdata/perf/fp.data; per thread and bucket the
// parsed profile counts the samples perf script -F tid,time prints there.
func TestScriptTimeLabel(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	file := "../../../testdata/perf/fp.data"
	script := func(args ...string) []byte {
		cmd := exec.Command(perf, append([]string{"script", "-f", "--ns", "-i", file}, args...)...)
		cmd.Env = append(os.Environ(), "PAGER=cat")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("perf script %v: %v", args, err)
		}
		return out
	}
	p, err := ParseScript(script(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var tids []string
	var times []int64
	for _, l := range strings.Split(string(script("-F", "tid,time")), "\n") {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(l), ":"))
		if len(f) != 2 {
			continue
		}
		sec, ns, _ := strings.Cut(f[1], ".")
		s, _ := strconv.ParseInt(sec, 10, 64)
		n, _ := strconv.ParseInt(ns, 10, 64)
		tids = append(tids, f[0])
		times = append(times, s*1e9+n)
	}
	if len(times) < 10 {
		t.Fatalf("perf script printed %d samples", len(times))
	}
	t0, t1 := times[0], times[0]
	for _, x := range times {
		t0, t1 = min(t0, x), max(t1, x)
	}
	w := int64(sampling.TimeBucket(uint64(t1 - t0)))
	want := map[string]int64{}
	for i, x := range times {
		want[fmt.Sprintf("%s@%d", tids[i], (x-t0)/w*w)]++
	}
	got := map[string]int64{}
	for _, s := range p.Sample {
		ts := s.NumLabel[sampling.TimeLabel]
		if len(ts) != 1 || s.NumUnit[sampling.TimeLabel][0] != "nanoseconds" {
			t.Fatalf("sample without a time label: %v", s.NumLabel)
		}
		got[fmt.Sprintf("%d@%d", s.NumLabel["tid"][0], ts[0])] += s.Value[0]
	}
	if len(want) < 2 {
		t.Errorf("the recording falls in %d thread×bucket cells of %d ns", len(want), w)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("thread@bucket %s: %d samples, perf script has %d", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d thread×bucket cells, perf script has %d", len(got), len(want))
	}
}
