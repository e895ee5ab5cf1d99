package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"viewer/testdata/bench/gen"
	"viewer/web"
)

// BenchmarkUploadShapes is an upload (POST /api/profiles), its page and
// its first flame.json on a default server, for each of issue 36's
// profile shapes (gen.Variants) at the benchmark profile's counts
// (200,000 samples, 50,000 stacks, 20,000 functions): a cost that grows
// with one shape's option (records, depth, locations, names, inlining,
// labels, sample types) shows there beside the others. cpu-ms/op is the
// process's CPU time, what to compare on a shared machine;
// testdata/bench/growth.sh 2m-NAME measures the same at 2M samples in a
// server of its own.
//
//	go test -run '^$' -bench UploadShapes -benchtime 3x ./web/
func BenchmarkUploadShapes(b *testing.B) {
	for _, v := range gen.Variants {
		b.Run(v.Name, func(b *testing.B) {
			sh, _ := gen.Variant(v.Name, 200000, 50000, 20000, 20, 1)
			var buf bytes.Buffer
			if err := sh.WriteStream(&buf); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			spent := sum(benchUploadAndView(b, data))
			b.ReportMetric(float64(spent.Milliseconds())/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(len(data))/(1<<20), "gz-MiB")
		})
	}
}

// benchUploadAndView runs b's loop: each round uploads data to a fresh
// default server in this process, then GETs its page and first
// flame.json, and returns the process's CPU time (user and system) of
// each round's timed part, what to compare on a shared machine.
func benchUploadAndView(b *testing.B, data []byte) (rounds []time.Duration) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
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
		rounds = append(rounds, cpu()-c0)
		b.StopTimer()
		ts.Close()
		b.StartTimer()
	}
	return rounds
}

// sum is the total of ds.
func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}
