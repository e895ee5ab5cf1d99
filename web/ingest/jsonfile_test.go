package ingest

import (
	"context"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"viewer/web/heappeak"
)

// TestJSONFileMemory reads the JSON profile VIEWER_JSON_FILE names (a
// 1 GB trace, a 1M-sample .cpuprofile: testdata/bench/genv8) with
// ParseFile under the default --ingest-memory, and prints its peak heap
// and what the budget took: the figures BENCHMARKS.md gives for big
// inputs.
func TestJSONFileMemory(t *testing.T) {
	path := os.Getenv("VIEWER_JSON_FILE")
	if path == "" {
		t.Skip("set VIEWER_JSON_FILE to a JSON profile to measure")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	debug.FreeOSMemory()
	stop := heappeak.Watch()
	b := NewBudget(DefaultMemory, time.Second)
	start := time.Now()
	p, format, err := ParseFile(context.Background(), f, Limits{Memory: b, MaxSamples: 2_000_000})
	peak := stop()
	if err != nil {
		t.Fatalf("%s (%d bytes): %v", path, st.Size(), err)
	}
	t.Logf("%s (%s): %d bytes, %d samples kept in %v; peak heap %.1f MiB; the budget took %.1f MiB of %d MiB",
		path, format, st.Size(), len(p.Sample), time.Since(start).Round(time.Millisecond), float64(peak)/(1<<20), float64(b.peak.Load())/(1<<20), DefaultMemory>>20)
}
