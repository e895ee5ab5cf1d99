package web

import (
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPeerInputsUpload posts every peer input in testdata/peers (google/pprof's
// legacy profiles, FlameGraph's and speedscope's perf script and folded
// samples) through the upload handler and opens its top table; their
// numbers are checked against go tool pprof and stackcollapse-perf.pl in
// web/ingest, and one JSON profile of each format speedscope's corpus
// has that viewer reads. A foreign format is refused with its name.
func TestPeerInputsUpload(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	files, _ := filepath.Glob("../testdata/peers/*/*")
	n := 0
	for _, f := range files {
		base := filepath.Base(f)
		if st, err := os.Stat(f); err != nil || st.IsDir() || base == "LICENSE" || base == "README.md" || strings.HasSuffix(base, ".py") || strings.HasSuffix(base, ".collapsed-pid.txt") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		id := upload(t, ts.URL, data)
		if r := get(t, ts.URL+"/p/"+id+"/top"); r.status != http.StatusOK || !strings.Contains(string(r.body), "Total") {
			t.Errorf("%s: /top answered %d", base, r.status)
		}
		n++
	}
	if n < 40 {
		t.Errorf("uploaded %d peer inputs, want the 12 pprof, 13 FlameGraph and 17 speedscope ones", n)
	}
	// One file of each JSON format of speedscope's corpus viewer reads
	// (all of them are compared with speedscope in web/ingest), with a
	// function its top table shows.
	for file, fn := range map[string]string{
		"Chrome/65/simple.cpuprofile":                  "d",
		"Chrome/69/Heap-20181005T144546.heapprofile":   "(root)",
		"Chrome/70/worker.json":                        "(program)",
		"trace-event/multiprocess.json":                "alpha",
		"Firefox/61/recursion.json":                    "beta",
		"speedscope/0.6.0/two-sampled.speedscope.json": "a",
	} {
		data, err := os.ReadFile("../testdata/peers/speedscope-formats/sample/profiles/" + file)
		if err != nil {
			t.Fatal(err)
		}
		id := upload(t, ts.URL, data)
		if r := get(t, ts.URL+"/p/"+id+"/top"); r.status != http.StatusOK || !strings.Contains(string(r.body), html.EscapeString(fn)) {
			t.Errorf("%s: /top answered %d without %q: %s", file, r.status, fn, r.body)
		}
	}
	body, ct := multipartBody(t, "file", "app", append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...))
	resp, err := http.Post(ts.URL+"/api/profiles", ct, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "This is an ELF executable") {
		t.Errorf("an ELF upload: %d %s", resp.StatusCode, msg)
	}
}
