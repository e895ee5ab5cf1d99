package ingest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"viewer/web/heappeak"
)

// TestMemoryEstimate prints, for each pprof input in
// $VIEWER_ESTIMATE_FILES (colon-separated), what its parse takes from the
// memory budget against the peak heap the parse really reaches, as the
// streamed decode of a gzipped upload reads it and as the pre-scanned
// parse of the same bytes uncompressed does, under the collector's
// default pacing (GOGC 100) and a tight one (GOGC 10, about the live
// heap). It fails when an estimate is under the live peak: the budget is
// what keeps the server alive. BENCHMARKS.md records its figures.
func TestMemoryEstimate(t *testing.T) {
	files := os.Getenv("VIEWER_ESTIMATE_FILES")
	if files == "" {
		t.Skip("set VIEWER_ESTIMATE_FILES to pprof files (colon-separated) to measure")
	}
	for _, path := range strings.Split(files, ":") {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		plain := raw
		if isGzip(raw) {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if plain, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if c, err := prescanPprof(bufio.NewReader(bytes.NewReader(plain)), Limits{}); err == nil {
			t.Logf("%s: %d bytes inflated, %+v", filepath.Base(path), len(plain), c)
		}
		// Only a pprof protobuf's estimate is measured: the others are
		// logged, not checked.
		check := sniffPprof(plain[:min(len(plain), sniffLen)])
		gz := raw
		if !isGzip(raw) {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(plain)
			zw.Close()
			gz = b.Bytes()
		}
		dir := t.TempDir()
		gzPath, plainPath := filepath.Join(dir, "up.gz"), filepath.Join(dir, "up")
		os.WriteFile(gzPath, gz, 0o600)
		os.WriteFile(plainPath, plain, 0o600)
		raw, plain, gz = nil, nil, nil
		for _, gc := range []int{100, 10} {
			old := debug.SetGCPercent(gc)
			est, peak := measureParse(t, gzPath)
			t.Logf("%s streamed, GOGC %d: estimate %.1f MiB, peak heap %.1f MiB (%.2f×)", filepath.Base(path), gc, mibs(est), mibs(peak), float64(est)/float64(peak))
			if check && gc == 10 && est < peak {
				t.Errorf("%s streamed: estimate %d MiB under the live peak %d MiB", path, est>>20, peak>>20)
			}
			est, peak = measureParse(t, plainPath)
			t.Logf("%s pre-scanned, GOGC %d: estimate %.1f MiB, peak heap %.1f MiB (%.2f×)", filepath.Base(path), gc, mibs(est), mibs(peak), float64(est)/float64(peak))
			if check && gc == 10 && est < peak {
				t.Errorf("%s pre-scanned: estimate %d MiB under the live peak %d MiB", path, est>>20, peak>>20)
			}
			debug.SetGCPercent(old)
		}
	}
}

// measureParse parses the file at path as ParseFile does, with no limits
// but the stack depth's, and returns the most the parse held of its
// memory budget and the peak heap over the parse, the profile's finish
// (limitFrames, call sites) included.
func measureParse(t *testing.T, path string) (est, peak int64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := NewBudget(1<<40, time.Second)
	lim := Limits{MaxStackDepth: DefaultMaxStackDepth, MaxLineBytes: DefaultMaxLineBytes, Memory: b, SpoolDir: t.TempDir()}
	stop := heappeak.Watch()
	p, _, err := ParseFile(context.Background(), f, lim)
	peak = int64(stop())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	runtime.KeepAlive(p)
	return b.peak.Load(), peak
}

func mibs(n int64) float64 { return float64(n) / (1 << 20) }
