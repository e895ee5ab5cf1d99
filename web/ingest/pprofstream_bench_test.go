package ingest

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// BenchmarkParseFile parses the gzipped pprof file VIEWER_BENCH_PPROF as an
// upload is parsed (ParseFile: inflate, decode, CallSites), reporting the
// process's CPU time per parse beside the wall time; the growth script's
// profiles are the inputs, e.g.
//
//	testdata/bench/growth.sh 2m   # writes /tmp/viewer-bench/bench-2m.pb.gz
//	VIEWER_BENCH_PPROF=/tmp/viewer-bench/bench-2m.pb.gz \
//	  go test -run '^$' -bench ParseFile -benchtime 3x ./web/ingest/
func BenchmarkParseFile(b *testing.B) {
	path := os.Getenv("VIEWER_BENCH_PPROF")
	if path == "" {
		b.Skip("set VIEWER_BENCH_PPROF to a .pb.gz to parse")
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ReportAllocs()
	c0 := cpu()
	for b.Loop() {
		if _, _, err := ParseFile(context.Background(), f, Limits{SpoolDir: b.TempDir()}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpu()-c0).Seconds()/float64(b.N), "cpu-s/op")
}
