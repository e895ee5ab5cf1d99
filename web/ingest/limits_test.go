package ingest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// TestPerfDataRecordLimit checks a perf.data with more records than
// MaxRecords is refused as too large, naming the count and the flag.
func TestPerfDataRecordLimit(t *testing.T) {
	data, err := os.ReadFile("../../testdata/perf/flat.data")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Parse(data, Limits{MaxRecords: 1 << 20}); err != nil {
		t.Fatalf("under the limit: %v", err)
	}
	_, _, err = Parse(data, Limits{MaxRecords: 5})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "records, over the limit of 5") || !strings.Contains(err.Error(), "--max-records") {
		t.Fatalf("over the limit: %v; want ErrTooLarge naming the count and --max-records", err)
	}
}

// TestPerfDataRefusedAsRead uploads a real recording (ParseFile, mapped,
// as the server reads it) to limits it passes and wants it refused after
// the first read of its records, before any stack is aggregated, with a
// message naming each limit passed and its flag.
func TestPerfDataRefusedAsRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		lim  Limits
		want []string
	}{
		{"samples", Limits{MaxSamples: 10}, []string{"about 28 distinct samples, over the limit of 10 (--max-samples)"}},
		{"frames", Limits{MaxFrames: 100}, []string{"about 493 frames in their stacks, over the limit of 100 (--max-frames)"}},
		{"memory", Limits{Memory: NewBudget(perfScanMemory+4<<10, time.Second)}, []string{"of memory to convert, more than the server's 17 MiB for uploads", "--ingest-memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open("../../testdata/perf/fp.data")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var phases []string
			ctx := WithProgress(context.Background(), func(phase string, done, total int64) {
				if len(phases) == 0 || phases[len(phases)-1] != phase {
					phases = append(phases, phase)
				}
			})
			_, _, err = ParseFile(ctx, f, tc.lim)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			for _, w := range append(tc.want, "even with one time bucket for the whole recording") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
			if strings.Join(phases, ",") != "reading records" {
				t.Errorf("phases reported: %v, want the reading of the records only", phases)
			}
		})
	}
}

// TestPerfDataCoarserTimeBuckets converts a 0.2 s recording whose 1 ms
// time buckets keep 95 samples under a limit of 50 (20 ms ones still 53):
// it is converted with one bucket instead of refused, every sample record
// counted, and the profile says what its time label's resolution became.
func TestPerfDataCoarserTimeBuckets(t *testing.T) {
	data, err := os.ReadFile("../../testdata/perf/fp.data")
	if err != nil {
		t.Fatal(err)
	}
	fine, _, err := Parse(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../../testdata/perf/fp.data")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, _, err := ParseFile(context.Background(), f, Limits{MaxSamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	count := func(p *profile.Profile) (n int64) {
		for _, s := range p.Sample {
			n += s.Value[0]
		}
		return n
	}
	if len(fine.Sample) <= 50 || len(p.Sample) > 50 || count(p) != count(fine) {
		t.Errorf("%d samples (%d records) at the finest buckets; with --max-samples 50: %d samples (%d records)",
			len(fine.Sample), count(fine), len(p.Sample), count(p))
	}
	cm := strings.Join(p.Comments, "\n")
	if !strings.Contains(cm, "time buckets of 200ms instead of 1ms: finer ones would keep about 95 distinct samples, over the limit of 50 (--max-samples)") {
		t.Errorf("comments do not give the coarser buckets:\n%s", cm)
	}
	for _, s := range p.Sample {
		if at := s.NumLabel[sampling.TimeLabel]; len(at) != 1 || at[0]%200_000_000 != 0 {
			t.Fatalf("time label %v is not a 200 ms bucket", at)
		}
	}
}
