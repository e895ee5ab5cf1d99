package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestParseFilePrescansAsItInflates checks that the pre-scan made while a
// gzipped upload inflates (prescanStream) counts what the pre-scan of the
// inflated file counts, and that ParseFile still refuses a gzipped
// profile over a limit, through one gzip layer or two, and still reads a
// gzipped input that is not pprof.
func TestParseFilePrescansAsItInflates(t *testing.T) {
	p := testProfile()
	p.Sample = append(p.Sample, p.Sample[0], p.Sample[0])
	raw := encode(t, p, false)
	want, err := prescanPprof(bufio.NewReader(bytes.NewReader(raw)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := prescanStream(bytes.NewReader(raw), Limits{})
	if !got.scanned || got.err != nil || got.c != want {
		t.Fatalf("prescanStream = %+v, want the counts %+v of prescanPprof", got, want)
	}
	if got := prescanStream(strings.NewReader("main;work 3\n"), Limits{}); got.scanned {
		t.Errorf("prescanStream scanned folded stacks as pprof: %+v", got)
	}

	gz := func(b []byte) []byte {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	parseFile := func(b []byte, lim Limits) (int64, string, error) {
		t.Helper()
		lim.SpoolDir = t.TempDir()
		q, format, err := ParseFile(context.Background(), spoolFile(t, b), lim)
		if err != nil {
			return 0, "", err
		}
		var n int64
		for _, s := range q.Sample {
			n += s.Value[0]
		}
		return n, format, nil
	}
	for name, b := range map[string][]byte{"gzip": gz(raw), "gzip of gzip": gz(gz(raw))} {
		if n, format, err := parseFile(b, Limits{}); err != nil || n != 9 || format != "pprof" {
			t.Errorf("%s: %d samples, format %q, err %v; want 9, pprof", name, n, format, err)
		}
		if _, _, err := parseFile(b, Limits{MaxSamples: 2}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-samples") {
			t.Errorf("%s, 3 records over --max-samples 2: err = %v, want ErrTooLarge naming --max-samples", name, err)
		}
		if _, _, err := parseFile(b, Limits{Memory: NewBudget(int64(len(raw)), 0)}); err == nil {
			t.Errorf("%s: parsed within a memory budget of the input's size, which the estimate is over", name)
		}
	}
	if n, format, err := parseFile(gz([]byte("main;work 3\nmain 4\n")), Limits{}); err != nil || n != 7 || format != "folded stacks" {
		t.Errorf("gzipped folded stacks: %d samples, format %q, err %v; want 7, folded stacks", n, format, err)
	}
}
