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
//
//	DEFAULT_SERVER=1 testdata/bench/growth.sh 2m-deep  # writes /tmp/viewer-bench/bench-2m-deep.pb.gz
//	VIEWER_BENCH_UPLOAD=/tmp/viewer-bench/bench-2m-deep.pb.gz \
//	  go test -run '^$' -bench UploadFile -benchtime 2x -cpuprofile cpu.out ./web/
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
	spent := benchUploadAndView(b, data)
	b.ReportMetric(spent.Seconds()/float64(b.N), "cpu-s/op")
}
