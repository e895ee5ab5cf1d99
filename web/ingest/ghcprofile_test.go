package ingest_test

import (
	"errors"
	"os"
	"strings"
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

// TestNamedFormatErrors checks that a Papyrus log or GHC report that
// cannot be read is answered with why (a FormatError naming the format),
// not with the list of every format tried: their first line names them.
func TestNamedFormatErrors(t *testing.T) {
	for in, want := range map[string]struct{ format, says string }{
		"Script_a log opened (PC)\nLog closed\n":                  {"Papyrus profile", "no events"},
		"\tFri Time and Allocation Profiling Report  (Final)\n\n": {"GHC profiling report", "no cost centre tree"},
	} {
		_, _, err := ingest.Parse([]byte(in), ingest.Limits{})
		var fe *ingest.FormatError
		if !errors.As(err, &fe) || fe.Format != want.format || !strings.Contains(err.Error(), want.says) || !errors.Is(err, ingest.ErrUnknownFormat) {
			t.Errorf("Parse(%.40q) = %v; want a FormatError of %s saying %q", in, err, want.format, want.says)
		}
	}
}
