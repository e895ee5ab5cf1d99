package ingest_test

import (
	"os"
	"testing"

	"viewer/web/ingest"
)

// TestGHCReports checks that Parse tells GHC's reports apart by content:
// the text reports (+RTS -p, -P) and the JSON one (+RTS -pj) of one run
// of a real program, each with time and alloc.
func TestGHCReports(t *testing.T) {
	for file, want := range map[string]string{
		"ghcprof/testdata/bt-P.prof":  "GHC profiling report",
		"ghcprof/testdata/bt-p.prof":  "GHC profiling report",
		"ghcprof/testdata/bt-pj.prof": "GHC profile",
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, format, err := ingest.Parse(data, ingest.Limits{})
		if err != nil || format != want {
			t.Errorf("%s: read as %q, %v; want %q", file, format, err, want)
			continue
		}
		if len(p.SampleType) != 2 || p.SampleType[0].Type != "time" || p.SampleType[1].Type != "alloc" {
			t.Errorf("%s: sample types %v, want time and alloc", file, sampleTypes(p))
		}
	}
}
