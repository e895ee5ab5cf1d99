package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"viewer/web"
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
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var spent time.Duration
	for b.Loop() {
		b.StopTimer()
		s, err := web.New(web.Config{DataDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		b.StartTimer()
		c0 := cpu()
		resp, err := http.Post(ts.URL+"/api/profiles", "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var id string
		if _, err := fmt.Sscanf(string(body), `{"id":%q`, &id); resp.StatusCode != http.StatusCreated || err != nil {
			b.Fatalf("upload: %s %s", resp.Status, body)
		}
		for _, u := range []string{"/p/" + id, "/p/" + id + "/flame.json"} {
			resp, err := http.Get(ts.URL + u)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("GET %s: %s", u, resp.Status)
			}
		}
		spent += cpu() - c0
		b.StopTimer()
		ts.Close()
		b.StartTimer()
	}
	b.ReportMetric(spent.Seconds()/float64(b.N), "cpu-s/op")
}
