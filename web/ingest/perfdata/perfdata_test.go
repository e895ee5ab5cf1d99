package perfdata

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

const dir = "../../../testdata/perf"

// recordings are the perf.data files testdata/perf/record.sh writes.
var recordings = []string{"fp", "flat", "dwarf", "pipe", "z", "pipez", "buildid", "multi", "read"}

func needPerf(t testing.TB) string {
	p, err := exec.LookPath("perf")
	if err != nil {
		t.Fatalf("perf is not installed (package linux-perf): run make deps")
	}
	return p
}

func readFile(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scriptSample is one sample as `perf script -F comm,tid,event,ip,dso` prints it.
type scriptSample struct {
	comm, tid, event string
	frames           []string // "dso:hexaddr", leaf first
}

func (s scriptSample) key() string {
	return s.comm + "|" + s.tid + "|" + s.event + "|" + strings.Join(s.frames, ";")
}

// perfScript runs the real perf script on a recording, with env added to its environment.
func perfScript(t *testing.T, file string, env ...string) []scriptSample {
	perf := needPerf(t)
	cmd := exec.Command(perf, "script", "-f", "--no-inline", "-F", "comm,tid,event,ip,dso", "-i", file)
	cmd.Env = append(append(os.Environ(), "PAGER=cat"), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("perf script -i %s: %v", file, err)
	}
	var ss []scriptSample
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
		case (line[0] == '\t' || line[0] == ' ') && !strings.Contains(line, ": "):
			// "addr (dso)"; pipe-mode files also get the symbol in between.
			fs := strings.Fields(line)
			dso := fs[len(fs)-1]
			if len(fs) < 2 || dso == "(inlined)" {
				continue
			}
			addr, err := strconv.ParseUint(fs[0], 16, 64)
			if err != nil {
				t.Fatalf("perf script frame line %q: %v", line, err)
			}
			s := &ss[len(ss)-1]
			s.frames = append(s.frames, fmt.Sprintf("%s:%x", strings.Trim(dso, "()"), addr))
		default:
			// "comm tid event: [addr (dso)]" where comm may hold spaces; without
			// call chains the sample's own (absolute) address follows the event.
			fs := strings.Fields(line)
			n := len(fs) - 1
			for n >= 0 && !strings.HasSuffix(fs[n], ":") {
				n--
			}
			if n < 2 {
				t.Fatalf("perf script header line %q", line)
			}
			s := scriptSample{comm: strings.Join(fs[:n-1], " "), tid: fs[n-1], event: strings.TrimSuffix(fs[n], ":")}
			if rest := fs[n+1:]; len(rest) >= 2 {
				s.frames = []string{strings.Trim(rest[len(rest)-1], "()") + ":" + strings.TrimLeft(rest[0], "0")}
			}
			ss = append(ss, s)
		}
	}
	return ss
}

// profileSamples expands a converted profile into per-sample keys like scriptSample's.
// raw renders absolute addresses, as perf script prints samples without call chains.
func profileSamples(t *testing.T, p *profile.Profile, leafOnly, raw bool) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, s := range p.Sample {
		for i := 0; i < len(p.SampleType); i += 2 {
			n := s.Value[i]
			if n == 0 {
				continue
			}
			var frames []string
			for _, l := range s.Location {
				if l.Mapping == nil {
					frames = append(frames, fmt.Sprintf("[unknown]:%x", l.Address))
					continue
				}
				if len(l.Line) != 0 {
					t.Errorf("location %#x has names from the recording machine: %v", l.Address, l.Line)
				}
				m := l.Mapping
				if l.Address < m.Start || l.Address >= m.Limit {
					t.Errorf("location %#x lies outside its mapping %s [%#x, %#x)", l.Address, m.File, m.Start, m.Limit)
				}
				if raw {
					frames = append(frames, fmt.Sprintf("%s:%x", m.File, l.Address))
				} else {
					frames = append(frames, fmt.Sprintf("%s:%x", m.File, l.Address-m.Start+m.Offset))
				}
			}
			if leafOnly && len(frames) > 1 {
				frames = frames[:1]
			}
			ev := strings.TrimSuffix(p.SampleType[i].Type, "_count")
			k := scriptSample{comm: s.Label["comm"][0], tid: strconv.FormatInt(s.NumLabel["tid"][0], 10), event: ev, frames: frames}.key()
			got[k] += int(n)
		}
	}
	return got
}

// TestAgainstPerfScript converts each recording and checks that the samples
// (thread, event, and every frame as DSO + file-relative address) are the
// ones perf script prints for the same file.
func TestAgainstPerfScript(t *testing.T) {
	for _, name := range recordings {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".data")
			p, err := Parse(readFile(t, name+".data"), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckValid(); err != nil {
				t.Fatal(err)
			}
			if dw := strings.Contains(strings.Join(p.Comments, "\n"), "--call-graph=dwarf; their user-space stacks were not unwound"); dw != (name == "dwarf") {
				t.Errorf("warning about DWARF-mode stacks shown: %v", dw)
			}
			leafOnly := name == "dwarf" // perf unwinds the copied user stacks; we keep the leaf
			want := map[string]int{}
			ss := perfScript(t, file)
			for _, s := range ss {
				if leafOnly && len(s.frames) > 1 {
					s.frames = s.frames[:1]
				}
				want[s.key()]++
			}
			got := profileSamples(t, p, leafOnly, name == "flat")
			total := 0
			for _, n := range got {
				total += n
			}
			if total != len(ss) {
				t.Errorf("profile holds %d samples, perf script prints %d", total, len(ss))
			}
			compareSamples(t, want, got)
		})
	}
}

// compareSamples reports the samples (counted by their key) that perf
// script printed and the profile holds a different number of times, and
// the reverse; at most 10 of them.
func compareSamples(t *testing.T, want, got map[string]int) {
	t.Helper()
	diffs := 0
	for k, n := range want {
		if got[k] != n && diffs < 5 {
			diffs++
			t.Errorf("perf script has %d× %s\n  profile has %d", n, k, got[k])
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok && diffs < 10 {
			diffs++
			t.Errorf("profile has %d× %s which perf script does not print", n, k)
		}
	}
}

// TestBuildIDs checks each mapping's build ID against perf buildid-list.
func TestBuildIDs(t *testing.T) {
	perf := needPerf(t)
	for _, name := range recordings {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(perf, "buildid-list", "-f", "-i", filepath.Join(dir, name+".data")).Output()
			if err != nil {
				t.Fatalf("perf buildid-list: %v", err)
			}
			want := map[string]string{}
			for _, line := range strings.Split(string(out), "\n") {
				fs := strings.Fields(line)
				if len(fs) == 2 {
					want[fs[1]] = fs[0]
				}
			}
			p, err := Parse(readFile(t, name+".data"), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, m := range p.Mapping {
				id, ok := want[m.File]
				if !ok {
					if m.BuildID != "" {
						t.Errorf("mapping %s has build ID %s; perf buildid-list has none", m.File, m.BuildID)
					}
					continue
				}
				seen++
				if m.BuildID != id {
					t.Errorf("mapping %s: build ID %q, perf buildid-list says %q", m.File, m.BuildID, id)
				}
			}
			if len(want) > 0 && seen == 0 {
				t.Errorf("no mapping carries one of perf buildid-list's build IDs %v", want)
			}
			for _, m := range p.Mapping {
				if m.File == KernelFile && m.BuildID == "" && len(want) > 0 {
					t.Errorf("the kernel mapping has no build ID")
				}
			}
		})
	}
}

// TestProfileShape checks the sample types, labels, mappings and comments a
// user sees for the two-event recording.
func TestProfileShape(t *testing.T) {
	p, err := Parse(readFile(t, "multi.data"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	want := []string{"cpu-clock_count/count", "cpu-clock/nanoseconds", "task-clock_count/count", "task-clock/nanoseconds"}
	if !slices.Equal(types, want) {
		t.Errorf("sample types %v, want %v", types, want)
	}
	comms := map[string]bool{}
	for _, s := range p.Sample {
		comms[s.Label["comm"][0]] = true
		if len(s.NumLabel["pid"]) != 1 || len(s.NumLabel["tid"]) != 1 {
			t.Errorf("sample without pid/tid labels: %v", s.NumLabel)
		}
	}
	for _, c := range []string{"threads", "worker-a", "worker-b"} {
		if !comms[c] {
			t.Errorf("no sample has comm %q; comms: %v", c, comms)
		}
	}
	files := map[string]int{}
	for _, m := range p.Mapping {
		files[m.File]++
		if m.File == KernelFile && m.Start < 0xffff000000000000 {
			t.Errorf("kernel mapping starts at %#x", m.Start)
		}
	}
	if files[KernelFile] != 1 || files["/work/main/testdata/perf/threads"] == 0 && !hasSuffix(files, "/testdata/perf/threads") {
		t.Errorf("mappings %v: want one %s and the threads binary", files, KernelFile)
	}
	cm := strings.Join(p.Comments, "\n")
	for _, w := range []string{"hostname: ", "os release: ", "cmdline: ", "perf record", "perf version: "} {
		if !strings.Contains(cm, w) {
			t.Errorf("comments lack %q:\n%s", w, cm)
		}
	}
	if p.DurationNanos <= 0 || p.TimeNanos <= 0 {
		t.Errorf("duration %d, time %d: multi.data has sample times and CLOCK_DATA", p.DurationNanos, p.TimeNanos)
	}
}

func hasSuffix(m map[string]int, suffix string) bool {
	for k := range m {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// BenchmarkParse reads and converts each checked-in recording; the
// side-by-side comparison with perf script is testdata/perf/bench.sh.
func BenchmarkParse(b *testing.B) {
	for _, name := range recordings {
		data := readFile(b, name+".data")
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(data, 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
