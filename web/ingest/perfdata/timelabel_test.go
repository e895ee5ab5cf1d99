package perfdata

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"viewer/symbolize/sampling"
)

// TestTimeLabel checks each sample's time bucket against perf script's
// own timestamps: per thread and bucket, the samples counted in the
// profile are the sample lines perf script prints with that time.
func TestTimeLabel(t *testing.T) {
	perf := needPerf(t)
	for _, name := range []string{"fp", "multi", "system"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".data")
			p, err := Parse(readFile(t, name+".data"), 1<<30, 0)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(perf, "script", "-f", "--ns", "-F", "tid,time", "-i", file)
			cmd.Env = append(os.Environ(), "PAGER=cat")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("perf script: %v", err)
			}
			var times []int64
			var tids []string
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(sc.Text()), ":"))
				if len(f) != 2 {
					continue
				}
				sec, ns, ok := strings.Cut(f[1], ".")
				s, err1 := strconv.ParseInt(sec, 10, 64)
				n, err2 := strconv.ParseInt(ns, 10, 64)
				if !ok || err1 != nil || err2 != nil || len(ns) != 9 {
					t.Fatalf("perf script line %q: no time in ns", sc.Text())
				}
				times = append(times, s*1e9+n)
				tids = append(tids, f[0])
			}
			if len(times) == 0 {
				t.Fatal("perf script printed no samples")
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
				if len(ts) != 1 || len(s.NumUnit[sampling.TimeLabel]) != 1 || s.NumUnit[sampling.TimeLabel][0] != "nanoseconds" {
					t.Fatalf("sample without one time label in nanoseconds: %v %v", s.NumLabel, s.NumUnit)
				}
				var n int64
				for j := 0; j < len(s.Value); j += 2 { // the *_count types
					n += s.Value[j]
				}
				got[fmt.Sprintf("%d@%d", s.NumLabel["tid"][0], ts[0])] += n
			}
			if len(got) < 2 {
				t.Errorf("only %d thread×bucket cells; the recording spans %d ns in buckets of %d", len(got), t1-t0, w)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("thread@bucket %s: %d samples, perf script has %d", k, got[k], v)
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("thread@bucket %s: %d samples, perf script has none", k, v)
				}
			}
		})
	}
}
