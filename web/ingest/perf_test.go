package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestFoldedHalfBad uploads folded stacks with as many bad lines as good
// ones (a stack and a stray line), spooled as an upload is: they are read
// as folded stacks, the stack kept and the bad line named in a warning, as
// flamegraph.pl draws the stack and ignores the line. Fewer good lines than
// bad is still not claimed as folded stacks, and its refusal says how many
// lines are stacks, the first that is not, and what to do.
func TestFoldedHalfBad(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"main;work;leaf 7\nthis is not a stack\n", "skipped 1 unreadable line: line 2"},
		{"# a comment\nmain;a 3\nmain;b 4\nbroken\nalso broken\n", "skipped 2 unreadable lines: line 4"},
	} {
		f, err := os.CreateTemp(t.TempDir(), "upload")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(tc.in)
		p, format, err := ParseFile(context.Background(), f, Limits{Memory: NewBudget(64<<20, time.Second)})
		f.Close()
		if err != nil || format != "folded stacks" {
			t.Fatalf("%q: format %q, error %v; want folded stacks", tc.in, format, err)
		}
		if len(p.Sample) == 0 || !slices.ContainsFunc(p.Comments, func(c string) bool { return strings.Contains(c, tc.want) }) {
			t.Errorf("%q: %d samples, comments %q; want its stacks and %q", tc.in, len(p.Sample), p.Comments, tc.want)
		}
	}
	_, _, err := Parse([]byte("main;work 1\nnot a stack\nnor this\n"), Limits{})
	if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), `only 1 of its first 3 lines is a stack (line 2 is not: "not a stack")`) ||
		!strings.Contains(err.Error(), "remove or fix the others") {
		t.Errorf("one stack among two bad lines: error %v; want ErrUnknownFormat naming the lines and what to do", err)
	}
	if _, _, err := Parse([]byte("just some text\nnothing more\n"), Limits{}); err == nil || strings.Contains(err.Error(), "folded") && strings.Contains(err.Error(), "If it is") {
		t.Errorf("text without a stack: error %v; want no word of folded stacks", err)
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
