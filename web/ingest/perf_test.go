package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const perfDir = "../../testdata/perf"

// TestPerfFormatsDetected sends each perf input through Parse, as an upload
// would, plain and gzipped, and checks the format the content was detected as.
func TestPerfFormatsDetected(t *testing.T) {
	cases := map[string]string{
		"fp.data": "perf.data", "dwarf.data": "perf.data", "pipe.data": "perf.data", "z.data": "perf.data",
		"buildid.data": "perf.data", "pipez.data": "perf.data", "flat.data": "perf.data", "multi.data": "perf.data", "read.data": "perf.data",
		"fp.script": "perf script", "pipe.pid.script": "perf script",
		"fp.folded": "folded stacks", "fp.json": "perf JSON",
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(perfDir, name))
			if err != nil {
				t.Fatal(err)
			}
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write(data)
			zw.Close()
			for _, in := range [][]byte{data, gz.Bytes()} {
				p, format, err := Parse(in, Limits{MaxBytes: 64 << 20, MaxSamples: 100000})
				if err != nil {
					t.Fatal(err)
				}
				if format != want {
					t.Errorf("detected as %q, want %q", format, want)
				}
				if len(p.Sample) == 0 {
					t.Errorf("no samples")
				}
				if err := p.CheckValid(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestPerfLimits checks that a perf.data over the sample limit is refused as too large.
func TestPerfLimits(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(perfDir, "fp.data"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Parse(data, Limits{MaxSamples: 2})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	z, err := os.ReadFile(filepath.Join(perfDir, "z.data"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Parse(z, Limits{MaxBytes: int64(len(z)) + 100})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "compressed") {
		t.Fatalf("err = %v, want ErrTooLarge about the compressed records", err)
	}
}

// TestLongLineUpload checks that a 10 MB single-line folded stack is
// refused by its line length, not as an unrecognised input.
func TestLongLineUpload(t *testing.T) {
	line := []byte(strings.Repeat("main;work;", 1<<20) + "leaf 1")
	_, _, err := Parse(line, Limits{MaxBytes: 64 << 20})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "line 1 is longer than the 4194304-byte limit") {
		t.Errorf("error %v; want the line length named", err)
	}
}
