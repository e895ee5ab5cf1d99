package web_test

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/web"
	"viewer/web/webtest"
)

// TestPageCountsSamplesAsPerf uploads a perf.data and checks its flame page
// says as many samples as `perf script` prints, on each of its sample
// types, and never the number of distinct stacks; a profile with only a
// time value says "Stacks".
func TestPageCountsSamplesAsPerf(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf is not installed (package linux-perf): run make deps")
	}
	const file = "../testdata/perf/fp.data"
	out, err := exec.Command(perf, "script", "-F", "ip", "-i", file).Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	// -F ip without -G prints the call chain, one address a line, then an
	// empty line after each sample.
	samples := 0
	for _, block := range strings.Split(strings.TrimSpace(string(out)), "\n\n") {
		if strings.TrimSpace(block) != "" {
			samples++
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServerWith(t, web.Config{})
	id := webtest.PostProfile(t, base, "fp.data", data)
	want := fmt.Sprintf("<dt>Samples</dt><dd>%s</dd>", group(samples))
	for _, si := range []string{"cpu-clock", "cpu-clock_count"} {
		_, _, page := fetchURL(t, base+"/p/"+id+"?"+url.Values{"si": {si}}.Encode())
		if !strings.Contains(page, want) {
			t.Errorf("si=%s: the page lacks %s (perf script prints %d samples); stats: %s", si, want, samples, stats(page))
		}
	}

	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{{ID: 1, Address: 0x1000}}, Value: []int64{30e6}},
			{Location: []*profile.Location{{ID: 2, Address: 0x2000}}, Value: []int64{10e6}},
		},
	}
	p.Location = []*profile.Location{p.Sample[0].Location[0], p.Sample[1].Location[0]}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	id = webtest.PostProfile(t, base, "time.pb.gz", b.Bytes())
	_, _, page := fetchURL(t, base+"/p/"+id)
	if !strings.Contains(page, "<dt>Stacks</dt><dd>2</dd>") || strings.Contains(page, "<dt>Samples</dt>") {
		t.Errorf("a time-only profile of 2 stacks: stats %s, want Stacks 2", stats(page))
	}
}

// group writes n with thousands separators ("3,864").
func group(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func stats(page string) string {
	i := strings.Index(page, `<dl class="stats">`)
	if i < 0 {
		return "(none)"
	}
	j := strings.Index(page[i:], "</dl>")
	return page[i : i+j]
}
