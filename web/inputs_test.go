package web

import (
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
// web/ingest. A foreign format is refused with its name.
func TestPeerInputsUpload(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	files, _ := filepath.Glob("../testdata/peers/*/*")
	n := 0
	for _, f := range files {
		base := filepath.Base(f)
		if base == "LICENSE" || strings.HasSuffix(base, ".collapsed-pid.txt") {
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
	body, ct := multipartBody(t, "file", "app.cpuprofile", []byte(`{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":""},"hitCount":0}],"startTime":0,"endTime":1,"samples":[1],"timeDeltas":[1]}`))
	resp, err := http.Post(ts.URL+"/api/profiles", ct, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "This is a Chrome .cpuprofile") {
		t.Errorf("a .cpuprofile upload: %d %s", resp.StatusCode, msg)
	}
}
