package web_test

import (
	"os"
	"runtime/debug"
	"testing"

	"viewer/web/ingest"
)

// BenchmarkUploadFile is an upload (POST /api/profiles) of the file
// VIEWER_BENCH_UPLOAD, its page and its first flame.json on a default
// server in this process: BenchmarkUploadShapes' sequence on one of
// testdata/bench/growth.sh's profiles (e.g. its 2M-sample deep shape), so
// that -cpuprofile and -memprofile show where growth.sh's server spends.
// The Go heap's soft limit is a default serve's (--ingest-memory plus
// 256 MiB), which decides how often the collector runs near the peak.
// first-cpu-s is the first round's CPU, later-cpu-s the mean of the
// others'.
//
//	DEFAULT_SERVER=1 testdata/bench/growth.sh 2m-deep  # writes /tmp/viewer-bench/bench-2m-deep.pb.gz
//	VIEWER_BENCH_UPLOAD=/tmp/viewer-bench/bench-2m-deep.pb.gz \
//	  go test -run '^$' -bench UploadFile -benchtime 4x -cpuprofile cpu.out ./web/
func BenchmarkUploadFile(b *testing.B) {
	path := os.Getenv("VIEWER_BENCH_UPLOAD")
	if path == "" {
		b.Skip("set VIEWER_BENCH_UPLOAD to a profile to upload")
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(ingest.DefaultMemory + 256<<20))
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	rounds := benchUploadAndView(b, data)
	b.ReportMetric(sum(rounds).Seconds()/float64(b.N), "cpu-s/op")
	// The first round writes memory the process never touched; later
	// rounds reuse what the collector freed. On a virtual machine whose
	// hypervisor charges the process for each fresh page (web/prefault's
	// BenchmarkFreshMemory), the two differ by about the peak RSS times
	// its cpu-ms/MiB: a fresh server's figure (growth.sh's), and that
	// of a process that freed as much memory before (not a server whose
	// earlier profiles are still cached: their memory is not free).
	b.ReportMetric(rounds[0].Seconds(), "first-cpu-s")
	if len(rounds) > 1 {
		b.ReportMetric(sum(rounds[1:]).Seconds()/float64(len(rounds)-1), "later-cpu-s")
	}
}
