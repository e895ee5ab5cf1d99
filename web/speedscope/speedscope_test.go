package speedscope_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/flame"
	"viewer/web/ingest"
	"viewer/web/ingest/jsonprof"
	"viewer/web/speedscope"
)

// stacks sums sample type si of p per stack of flame graph frame names,
// root first, ";"-joined; keep selects the samples.
func stacks(p *profile.Profile, si int, keep func(*profile.Sample) bool) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		if !keep(s) || s.Value[si] <= 0 {
			continue
		}
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i]
			if len(l.Line) == 0 {
				names = append(names, flame.FrameName(l, -1))
			}
			for j := len(l.Line) - 1; j >= 0; j-- {
				names = append(names, flame.FrameName(l, j))
			}
		}
		out[strings.Join(names, ";")] += s.Value[si]
	}
	return out
}

// TestRoundTrip writes real profiles in speedscope's format and reads
// them back with viewer's own speedscope reader: every sample type is a
// profile of the file, with the same stacks and weights (each profile's
// samples carry its name as comm).
func TestRoundTrip(t *testing.T) {
	for _, name := range []string{
		"testdata/peers/pprof/cppbench.heap",                                                // four types, bytes and counts, unsymbolized frames
		"testdata/peers/pprof/gobench.cpu",                                                  // samples and nanoseconds
		"testdata/peers/pprof/java.cpu",                                                     // Java frames
		"testdata/peers/pprof/go.crc32.cpu",                                                 // inlined frames
		"testdata/peers/speedscope-formats/sample/profiles/node/10.11.0/example.cpuprofile", // times
	} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("../..", name))
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := ingest.Parse(data, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := speedscope.Write(&buf, p, "prof"); err != nil {
				t.Fatal(err)
			}
			back, err := jsonprof.ParseSpeedscope(buf.Bytes(), jsonprof.Options{})
			if err != nil {
				t.Fatalf("viewer's speedscope reader: %v", err)
			}
			if !jsonprof.SniffSpeedscope(buf.Bytes()[:min(buf.Len(), 4096)]) {
				t.Error("the file is not sniffed as speedscope JSON")
			}
			for si, st := range p.SampleType {
				want := stacks(p, si, func(*profile.Sample) bool { return true })
				if len(want) == 0 {
					continue
				}
				comm := "prof: " + st.Type + " (" + st.Unit + ")"
				ofType := func(s *profile.Sample) bool { return len(s.Label["comm"]) == 1 && s.Label["comm"][0] == comm }
				bi := -1
				for i := range back.SampleType {
					for _, s := range back.Sample {
						if ofType(s) && s.Value[i] != 0 {
							bi = i
						}
					}
				}
				if bi < 0 {
					t.Errorf("sample type %s: no profile %q read back", st.Type, comm)
					continue
				}
				got := stacks(back, bi, ofType)
				if len(got) != len(want) {
					t.Errorf("sample type %s: %d stacks read back, want %d", st.Type, len(got), len(want))
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("sample type %s: stack %q weighs %d read back, want %d", st.Type, k, got[k], v)
						break
					}
				}
			}
		})
	}
}

// TestTimeOrder checks that the samples of a timestamped profile (a
// node --cpu-prof recording) are written in time order, as speedscope's
// time-order view shows them: the file's sequence of stacks and weights
// is the recording's, sorted by time.
func TestTimeOrder(t *testing.T) {
	data, err := os.ReadFile("../../testdata/peers/speedscope-formats/sample/profiles/node/10.11.0/example.cpuprofile")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := ingest.Parse(data, ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		at     int64
		stack  string
		weight int64
	}
	var want []step
	for _, s := range p.Sample {
		ts := s.NumLabel[sampling.TimeLabel]
		if len(ts) != 1 {
			t.Fatal("a sample without a time; the test wants a timestamped profile")
		}
		for k, v := range stacks(&profile.Profile{Sample: []*profile.Sample{s}}, 0, func(*profile.Sample) bool { return true }) {
			want = append(want, step{ts[0], k, v})
		}
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i].at < want[j].at })
	if len(want) < 10 || want[0].at == want[len(want)-1].at {
		t.Fatalf("%d timed samples; the test wants a recording over time", len(want))
	}
	var buf bytes.Buffer
	if err := speedscope.Write(&buf, p, "example"); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Shared struct {
			Frames []struct {
				Name string `json:"name"`
			} `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Samples [][]int `json:"samples"`
			Weights []int64 `json:"weights"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	got := f.Profiles[0]
	if len(got.Samples) != len(want) || len(got.Weights) != len(want) {
		t.Fatalf("%d samples and %d weights written, want %d", len(got.Samples), len(got.Weights), len(want))
	}
	for i, w := range want {
		var names []string
		for _, fi := range got.Samples[i] {
			names = append(names, f.Shared.Frames[fi].Name)
		}
		if k := strings.Join(names, ";"); k != w.stack || got.Weights[i] != w.weight {
			t.Fatalf("sample %d is %q weighing %d; want the one at %d ns, %q weighing %d", i, k, got.Weights[i], w.at, w.stack, w.weight)
		}
	}
}

// TestNoSamples checks that a profile without positive values is refused
// before anything is written.
func TestNoSamples(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	var buf bytes.Buffer
	if err := speedscope.Write(&buf, p, "x"); !errors.Is(err, speedscope.ErrNoSamples) || buf.Len() != 0 {
		t.Errorf("Write = %v with %d bytes; want ErrNoSamples and nothing written", err, buf.Len())
	}
}

// TestActiveProfile checks that speedscope opens on the sample type the
// flame page shows first: the profile's default, else the last (a Go CPU
// profile's cpu, not its sample count).
func TestActiveProfile(t *testing.T) {
	data, err := os.ReadFile("../../testdata/peers/pprof/gobench.cpu")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := ingest.Parse(data, ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	si, err := flame.SampleIndex(p, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := speedscope.Write(&buf, p, "prof"); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Active   int `json:"activeProfileIndex"`
		Profiles []struct {
			Name string `json:"name"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	want := "prof: " + p.SampleType[si].Type + " (" + p.SampleType[si].Unit + ")"
	if f.Active >= len(f.Profiles) || f.Profiles[f.Active].Name != want {
		t.Errorf("speedscope opens profile %d of %d; want %q", f.Active, len(f.Profiles), want)
	}
}
