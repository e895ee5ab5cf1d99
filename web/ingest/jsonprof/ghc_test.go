package jsonprof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize/sampling"
)

// TestGHCTotals checks that a GHC JSON profile's two sample types sum to
// what GHC reports for the run: total_ticks of tick_interval µs (798
// ticks of 1 ms) and total_alloc bytes, with names MODULE.LABEL and the
// file and line of the cost centre's src_loc.
func TestGHCTotals(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpus, "haskell/simple.prof"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseGHC(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "time" || p.SampleType[1].Type != "alloc" || p.DefaultSampleType != "time" {
		t.Fatalf("sample types %v %v, default %q; want time and alloc, time the default", p.SampleType[0], p.SampleType[len(p.SampleType)-1], p.DefaultSampleType)
	}
	var ns, bytes int64
	for _, s := range p.Sample {
		ns += s.Value[0]
		bytes += s.Value[1]
	}
	if ns != 798e6 || bytes != 1921672664 {
		t.Errorf("time %d ns, alloc %d bytes; want GHC's totals, 798 ticks of 1 ms and 1921672664 bytes", ns, bytes)
	}
	found := false
	for _, fn := range p.Function {
		if fn.Name == "Main.make" {
			found = true
			if !strings.HasSuffix(fn.Filename, ".hs") {
				t.Errorf("Main.make's file is %q, want the .hs of its src_loc", fn.Filename)
			}
		}
	}
	if !found {
		t.Error("no function Main.make")
	}
}

// TestGHCBadInput checks that a GHC profile cut short, or without its
// tree, is refused with an error saying so.
func TestGHCBadInput(t *testing.T) {
	for in, want := range map[string]string{
		`{"program":"p","rts_arguments":[],"initial_capabilities":0,"cost_centres":[]}`:                           `no "profile" tree`,
		`{"program":"p","rts_arguments":[],"initial_capabilities":0,"cost_centres":[],"profile":{"id":1,"ticks":`: "ends early",
	} {
		if _, err := ParseGHC([]byte(in), Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseGHC(%.40q) = %v; want an error saying %q", in, err, want)
		}
	}
}

// TestSafariTimes checks that a Safari recording's samples keep their
// timestamps: the time labels span the samples' (4.47 s to 4.80 s, 326
// ms) and the weights sum to the sampleDurations (34 ms).
func TestSafariTimes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpus, "Safari/13.1/simple.html-recording.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseSafari(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, sum := int64(1<<62), int64(-1<<62), int64(0)
	for _, s := range p.Sample {
		at := s.NumLabel[sampling.TimeLabel]
		if len(at) != 1 {
			t.Fatalf("a sample without a time: %v", s.NumLabel)
		}
		lo, hi = min(lo, at[0]), max(hi, at[0])
		sum += s.Value[0]
	}
	if span := hi - lo; span < 300e6 || span > 330e6 {
		t.Errorf("the samples' times span %d ns; want the recording's 326 ms (within a time bucket)", span)
	}
	if sum < 33.9e6 || sum > 34.1e6 {
		t.Errorf("the samples weigh %d ns; want the sampleDurations' 34 ms", sum)
	}
	if _, err := ParseSafari([]byte(`{"version":1,"recording":{"displayName":"R","records":[]}}`), Options{}); err == nil || !strings.Contains(err.Error(), "sampleStackTraces") {
		t.Errorf("a recording without samples: %v; want an error naming sampleStackTraces", err)
	}
}
