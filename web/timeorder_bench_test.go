package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"viewer/web"
	"viewer/web/webtest"
)

// BenchmarkTimeOrder measures time.json of the 200k-sample benchmark
// profile with times over its 60 s in 8 threads (genprofile -times 8), at
// 1600 columns: the first view (the time-order index built, then the
// whole recording laid out), then one range of 1–10 s per iteration (not
// cached: each asks another), reporting the body's bytes (uncompressed) and boxes.
//
//	go test -run '^$' -bench TimeOrder -benchtime 20x ./web/
func BenchmarkTimeOrder(b *testing.B) {
	path := filepath.Join(b.TempDir(), "timed.pb.gz")
	if out, err := exec.Command("go", "run", "../testdata/bench/genprofile", "-times", "8", "-o", path).CombinedOutput(); err != nil {
		b.Fatalf("genprofile: %v\n%s", err, out)
	}
	s, err := web.New(web.Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ts := webtest.LoopbackServer(b, s.Handler())
	ts.Start()
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/api/profiles", "application/octet-stream", bytes.NewReader(readBytes(b, path)))
	if err != nil {
		b.Fatal(err)
	}
	var created struct{ URL string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		b.Fatalf("upload: HTTP %d, %v", resp.StatusCode, err)
	}
	fetch := func(query string) (int, int) {
		resp, err := http.Get(ts.URL + created.URL + "/time.json?w=1600" + query)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var d struct {
			Threads []struct{ Boxes []int64 }
		}
		if err := json.Unmarshal(body, &d); err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("time.json%s: HTTP %d, %v", query, resp.StatusCode, err)
		}
		boxes := 0
		for _, th := range d.Threads {
			boxes += len(th.Boxes) / 5
		}
		return len(body), boxes
	}
	t0 := time.Now()
	wholeSize, wholeBoxes := fetch("")
	first := time.Since(t0)
	b.ResetTimer()
	var sizes, all int
	for i := 0; i < b.N; i++ {
		from := float64(i%50) + 0.5
		size, boxes := fetch(fmt.Sprintf("&t=%g-%g", from, from+1+float64(i%10)))
		sizes += size
		all += boxes
	}
	b.ReportMetric(float64(first.Milliseconds()), "first-ms")
	b.ReportMetric(float64(wholeSize), "whole-bytes")
	b.ReportMetric(float64(wholeBoxes), "whole-boxes")
	b.ReportMetric(float64(sizes)/float64(b.N), "range-bytes")
	b.ReportMetric(float64(all)/float64(b.N), "range-boxes")
}

func readBytes(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
