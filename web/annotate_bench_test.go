package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"
)

// BenchmarkAnnotateLibc times annotate.json for a hot libc function of a
// perf.data (testdata/datatype/annotate-bench.sh records one and sets
// VIEWER_ANNOTATE_PERFDATA and VIEWER_ANNOTATE_FN). Each iteration drops
// the cached listing, so it measures the listing with libc's code and
// DWARF already open (warm); cold-ms is the first request, which opens
// them.
func BenchmarkAnnotateLibc(b *testing.B) {
	path, fn := os.Getenv("VIEWER_ANNOTATE_PERFDATA"), os.Getenv("VIEWER_ANNOTATE_FN")
	if path == "" || fn == "" {
		b.Skip("set VIEWER_ANNOTATE_PERFDATA and VIEWER_ANNOTATE_FN (testdata/datatype/annotate-bench.sh)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	id, err := s.Ingest(b.Context(), data, "libc.perf.data")
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	u := "/p/" + id + "/annotate.json?" + url.Values{"fn": {fn}}.Encode()
	get := func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %.500s", u, rec.Code, rec.Body.String())
		}
	}
	if _, err := s.Profile(b.Context(), id); err != nil { // parsed, as a page view finds it
		b.Fatal(err)
	}
	start := time.Now()
	get()
	cold := time.Since(start)
	b.ResetTimer()
	for range b.N {
		s.annotations.Purge()
		get()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "warm-ms")
	b.ReportMetric(float64(cold.Microseconds())/1000, "cold-ms")
}
