package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/ingest/perfdata"
)

// TestParseGivesCallSites parses the frame-pointer recording, whose call
// chains run from the kernel into deep, libm and libc, and compares each
// frame with the call chain perf recorded (perf.data's own converter, return
// addresses): the leaf and the first user frame under kernel frames keep
// their address, every other caller is one less. Writing the profile and
// parsing it again (a re-upload of viewer's output) shifts nothing.
func TestParseGivesCallSites(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(perfDir, "fp.data"))
	if err != nil {
		t.Fatal(err)
	}
	raw := perfDataProfile(t, data)
	p, _, err := Parse(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != len(raw.Sample) {
		t.Fatalf("%d samples, %d in the recording", len(p.Sample), len(raw.Sample))
	}
	kernel := func(addr uint64) bool { return addr >= 1<<63 }
	shifted, boundary := 0, 0
	for i, s := range p.Sample {
		r := raw.Sample[i]
		if len(s.Location) != len(r.Location) {
			t.Fatalf("sample %d: %d frames, %d recorded", i, len(s.Location), len(r.Location))
		}
		for j, l := range s.Location {
			want := r.Location[j].Address
			switch {
			case j == 0: // the leaf
			case kernel(r.Location[j-1].Address) != kernel(want):
				boundary++
			default:
				want--
				shifted++
			}
			if l.Address != want {
				t.Errorf("sample %d frame %d: %#x, want %#x (recorded %#x)", i, j, l.Address, want, r.Location[j].Address)
			}
		}
	}
	if shifted < 100 || boundary == 0 {
		t.Errorf("%d callers shifted, %d user frames under the kernel kept: the recording should have both", shifted, boundary)
	}
	if !sampling.HasCallSites(p) {
		t.Error("parsed profile has no call-site mark")
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	q, _, err := Parse(b.Bytes(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range q.Sample {
		for j, l := range s.Location {
			if l.Address != p.Sample[i].Location[j].Address {
				t.Fatalf("re-parsed sample %d frame %d: %#x, was %#x", i, j, l.Address, p.Sample[i].Location[j].Address)
			}
		}
	}
	if n := strings.Count(strings.Join(q.Comments, "\n"), sampling.CallSiteMark); n != 1 {
		t.Errorf("re-parsed profile has the mark %d times", n)
	}
}

// perfDataProfile converts a perf.data straight to a profile, without
// ingest's limits: what perf.data's own converter makes of it.
func perfDataProfile(t *testing.T, data []byte) *profile.Profile {
	t.Helper()
	f, err := perfdata.Scan(data, perfdata.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := perfdata.Convert(f, perfdata.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
