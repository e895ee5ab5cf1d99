package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web"
	"viewer/web/ingest"
	"viewer/web/ingest/otlptest"
	"viewer/web/webtest"
)

// TestTricklingUploadsHoldNoMemory is issue 33's slow uploads: four
// clients announce 4 MiB OTLP bodies and send them just above
// --upload-min-rate. Memory is reserved as their bytes arrive, so an honest
// 1.4 MB OTLP request sent meanwhile, needing 9 times its size of a
// budget the four would have taken all but 8 MiB of by their
// Content-Length (as before), is stored and its profile served; the four
// keep going.
func TestTricklingUploadsHoldNoMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("trickles bodies at --upload-min-rate (2 s): skipped with -short")
	}
	const trickle = ingest.OTLPInMemory // the largest body read into memory
	budget := int64(4*9*trickle + 8<<20)
	s, err := web.New(web.Config{DataDir: t.TempDir(), OTLP: true, Limits: web.Limits{IngestMemory: budget}})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
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

// TestTricklingSymbolizeRequests is the slow-upload attack on the
// symbolization API: more clients than the requests worked at once (the
// cores) announce 8 MiB /api/symbolize bodies and send them just above
// --upload-min-rate. An honest request sent meanwhile is answered 200:
// a request takes its turn and its memory for its body as the bytes
// arrive, not for what it announced (before, the first ones took every
// turn and 24 MiB each before a byte came, and the honest request waited
// --upload-wait for a turn and got 503). A client sending slower than
// --upload-min-rate is dropped with a 400 naming the flag.
func TestTricklingSymbolizeRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("trickles bodies at --upload-min-rate (2.5 s): skipped with -short")
	}
	_, base := webtest.SymbolizingServerWith(t, nil, 1, web.Config{Limits: web.Limits{IngestMemory: 64 << 20, UploadWait: time.Second}})
	tricklers := runtime.GOMAXPROCS(0) + 2
	stop := make(chan struct{})
	defer close(stop)
	ended := make(chan string, tricklers)
	for i := range tricklers {
		pr, pw := io.Pipe()
		go func() { // 12 KiB a second: above the 10 KiB/s minimum
			defer pw.Close()
			pw.Write([]byte(`{"debuginfod": false, "binaries": [`))
			chunk := bytes.Repeat([]byte(" "), 12<<10)
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
			req, _ := http.NewRequest(http.MethodPost, base+"/api/symbolize", pr)
			req.ContentLength = 8 << 20
			req.Header.Set("Content-Type", "application/json")
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
	time.Sleep(1500 * time.Millisecond) // they have sent their headers and first bytes

	for i := range 3 {
		if code, b := symbolizeAPI(t, base, randomBinaries(t, 1, 10, false)); code != http.StatusOK {
			t.Errorf("honest request %d during %d trickling ones: %d %.300s; want 200", i, tricklers, code, b)
		}
	}
	select {
	case e := <-ended:
		t.Errorf("a trickling request above the minimum rate ended early: %.300s", e)
	default:
	}

	// Below the minimum rate (10 bytes a second for a 1 s window): dropped.
	_, slowBase := webtest.SymbolizingServerWith(t, nil, 1, web.Config{Limits: web.Limits{UploadRateWindow: time.Second}})
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		for range 20 {
			if _, err := pw.Write([]byte(" ")); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	req, _ := http.NewRequest(http.MethodPost, slowBase+"/api/symbolize", pr)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "--upload-min-rate") {
		t.Errorf("a request trickled at 10 bytes a second: %s %.300s; want 400 naming --upload-min-rate", resp.Status, b)
	}
}
