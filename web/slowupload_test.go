package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web"
	"viewer/web/ingest"
	"viewer/web/ingest/otlptest"
)

// TestTricklingUploadsHoldNoMemory is issue 33's slow uploads: four
// clients announce 4 MiB OTLP bodies and send them just above
// --upload-min-rate. Memory is reserved as their bytes arrive, so an honest
// 1.4 MB OTLP request sent meanwhile, needing 9 times its size of a
// budget the four would have taken all but 8 MiB of by their
// Content-Length (as before), is stored and its profile served; the four
// keep going.
func TestTricklingUploadsHoldNoMemory(t *testing.T) {
	const trickle = ingest.OTLPInMemory // the largest body read into memory
	budget := int64(4*9*trickle + 8<<20)
	s, err := web.New(web.Config{DataDir: t.TempDir(), OTLP: true, Limits: web.Limits{IngestMemory: budget}})
	if err != nil {
		t.Fatal(err)
	}
	ts := loopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)

	stop := make(chan struct{})
	defer close(stop)
	ended := make(chan string, 4)
	for i := range 4 {
		pr, pw := io.Pipe()
		go func() { // 12 KiB a second: above the 10 KiB/s minimum
			defer pw.Close()
			chunk := make([]byte, 12<<10)
			for {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
				select {
				case <-stop:
					pw.CloseWithError(fmt.Errorf("trickle %d stopped", i))
					return
				case <-time.After(time.Second):
				}
			}
		}()
		go func() {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+web.OTLPPath, pr)
			req.ContentLength = trickle
			req.Header.Set("Content-Type", "application/x-protobuf")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				ended <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ended <- resp.Status + " " + string(b)
		}()
	}
	time.Sleep(1500 * time.Millisecond) // the four have sent their headers and first bytes

	honest, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.EBPFLike(170000, 7), nil)).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	if need := 9 * int64(len(honest)); need <= 8<<20 {
		t.Fatalf("the honest request is %d bytes, needing %d: too small to be refused before", len(honest), need)
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+web.OTLPPath, bytes.NewReader(honest))
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Viewer-Profiles") == "" {
		t.Fatalf("an honest %d-byte OTLP request during four trickling ones: %s %s", len(honest), resp.Status, b)
	}
	for _, id := range strings.Split(resp.Header.Get("X-Viewer-Profiles"), ",") {
		r, err := http.Get(ts.URL + "/p/" + id + "/profile.pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("profile %s, acknowledged, is not served: %s", id, r.Status)
		}
	}
	select {
	case e := <-ended:
		t.Errorf("a trickling upload above the minimum rate ended early: %s", e)
	default:
	}
}
