package web

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web/ingest/otlptest"
)

// TestOTLPQueue: with as many OTLP requests being worked as the queue
// takes (cores + 1, each held in the store here), the next ones wait and
// are worked in the order they arrived; one that waits past --upload-wait
// is answered 503 UNAVAILABLE with Retry-After, naming why.
func TestOTLPQueue(t *testing.T) {
	n := runtime.GOMAXPROCS(0) + 1
	type answer struct {
		i                 int
		status            int
		id, retry, detail string
	}
	for _, wait := range []time.Duration{10 * time.Second, 300 * time.Millisecond} {
		arrived, gate := make(chan string, 2*n), make(chan struct{})
		_, ts := newTestServer(t, Config{
			OTLP:        true,
			Limits:      Limits{MaxConcurrentUploads: 4 * n, UploadWait: wait},
			AfterUpload: func(id string) { arrived <- id; <-gate },
		})
		done := make(chan answer, 2*n)
		post := func(i int) {
			// One sample type (one OTLP profile) of a service of its own.
			p := testProfile()
			p.SampleType = p.SampleType[:1]
			for _, s := range p.Sample {
				s.Value = s.Value[:1]
			}
			b, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(p, map[string]string{"service.name": fmt.Sprint("svc-", i)})).MarshalProto()
			if err != nil {
				t.Error(err)
			}
			resp, detail := postOTLP(t, ts.URL, "application/x-protobuf", b, false)
			done <- answer{i, resp.StatusCode, resp.Header.Get("X-Viewer-Profiles"), resp.Header.Get("Retry-After"), string(detail)}
		}
		for i := range n {
			go post(i)
		}
		for range n {
			<-arrived
		}
		if wait < time.Second {
			// Every place stays taken for longer than the wait.
			go post(n)
			select {
			case a := <-done:
				if a.status != 503 || a.retry == "" || !strings.Contains(a.detail, "other OTLP requests") {
					t.Errorf("a request waiting past --upload-wait: %d, Retry-After %q, %q; want 503 with Retry-After naming the OTLP requests", a.status, a.retry, a.detail)
				}
			case <-arrived:
				t.Errorf("a request was worked beside %d others; want it to wait and be answered 503", n)
			case <-time.After(10 * wait):
				t.Errorf("a request waiting past --upload-wait (%v) was not answered in %v", wait, 10*wait)
			}
			close(gate)
			continue
		}
		// Two more wait: n, then n+1.
		go post(n)
		time.Sleep(300 * time.Millisecond)
		go post(n + 1)
		time.Sleep(300 * time.Millisecond)
		select {
		case id := <-arrived:
			close(gate)
			t.Fatalf("%s was worked beside %d others; want at most %d at once", id, n, n)
		default:
		}
		var worked []string
		for range 2 {
			gate <- struct{}{}
			worked = append(worked, <-arrived)
		}
		close(gate)
		ids := map[int]string{}
		for range n + 2 {
			a := <-done
			if a.status != 200 {
				t.Errorf("request %d: %d %q; want 200", a.i, a.status, a.detail)
			}
			ids[a.i] = a.id
		}
		if worked[0] != ids[n] || worked[1] != ids[n+1] {
			t.Errorf("after the first %d, the store got %v; want the request that came first (%s), then the next (%s)", n, worked, ids[n], ids[n+1])
		}
	}
}
