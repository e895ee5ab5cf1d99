package web

// Issue 33's attacks on the OTLP intake: dictionary tables of tens of
// millions of entries in a few hundred kilobytes, a stack named by a
// million samples, and tens of thousands of profiles in one request. Each
// is refused naming the limit and its flag, within a bounded heap, and
// honest OTLP requests are answered 200 while four run at once.

import (
	"bytes"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web/heappeak"
	"viewer/web/ingest"
	"viewer/web/ingest/otlptest"
)

// otlpEntries is a gzipped OTLP request whose dictionary's table field
// (1 mappings, 2 locations, 5 strings, 7 stacks …) holds n empty
// entries, 2 bytes each on the wire.
func otlpEntries(t testing.TB, field, n int) []byte {
	var head pbuf
	head.varint(2<<3 | 2) // dictionary
	head.varint(uint64(2 * n))
	chunk := bytes.Repeat([]byte{byte(field<<3 | 2), 0}, 1<<20)
	return gzipWith(t, func(w io.Writer) {
		w.Write(head.b)
		for n > 0 {
			k := min(n, 1<<20)
			w.Write(chunk[:2*k])
			n -= k
		}
	})
}

// otlpJSONLocations is a gzipped OTLP JSON request of n empty locations.
func otlpJSONLocations(t testing.TB, n int) []byte {
	chunk := bytes.Repeat([]byte("{},"), 1<<20)
	return gzipWith(t, func(w io.Writer) {
		io.WriteString(w, `{"dictionary":{"locationTable":[`)
		for n > 1 {
			k := min(n-1, 1<<20)
			w.Write(chunk[:3*k])
			n -= k
		}
		io.WriteString(w, `{}]}}`)
	})
}

// otlpRequest is a gzipped OTLP request of profiles profiles of samples
// samples each, all naming one stack of depth frames of one location.
func otlpRequest(t testing.TB, profiles, samples, depth int) []byte {
	var p pbuf
	p.msg(2, func(d *pbuf) {
		d.msg(2, func(l *pbuf) { l.uint(2, 0x401000) })             // location 0
		d.msg(7, func(s *pbuf) { s.bytes(1, make([]byte, depth)) }) // stack 0: location 0, depth times
		d.bytes(5, nil)
		d.bytes(5, []byte("samples"))
		d.bytes(5, []byte("count"))
	})
	p.msg(1, func(r *pbuf) {
		r.msg(2, func(sc *pbuf) {
			for range profiles {
				sc.msg(2, func(pr *pbuf) {
					pr.msg(1, func(vt *pbuf) { vt.uint(1, 1); vt.uint(2, 2) })
					for range samples {
						pr.msg(2, func(s *pbuf) { s.uint(1, 0) })
					}
				})
			}
		})
	})
	return gzipWith(t, func(w io.Writer) { w.Write(p.b) })
}

// TestHostileOTLP sends each attack to a server with the default limits
// (the OTLP intake on): it must be refused with 413 naming the limit and
// its flag, the heap stay within the row's bound, and, for the four at
// once, honest OTLP requests sent meanwhile must all be answered 200.
func TestHostileOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("sends hundreds of megabytes of OTLP tables")
	}
	if raceDetector {
		t.Skip("heavy: skipped under -race (make test runs it without)")
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(ingest.DefaultMemory + 256*mib))
	_, ts := newTestServer(t, Config{OTLP: true})
	honest, _ := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(testProfile(), otlpResource)).MarshalProto()
	for _, r := range []struct {
		name  string
		input func(t testing.TB) []byte
		json  bool
		at    int
		says  string
		peak  uint64
	}{
		{name: "50M locations", input: func(t testing.TB) []byte { return otlpEntries(t, 2, 50_000_000) }, says: "more than 4000000 locations (restart the server with a larger --max-locations", peak: 96 * mib},
		{name: "50M strings", input: func(t testing.TB) []byte { return otlpEntries(t, 5, 50_000_000) }, says: "more than 8000000 strings (restart the server with a larger --max-strings", peak: 96 * mib},
		{name: "50M stacks", input: func(t testing.TB) []byte { return otlpEntries(t, 7, 50_000_000) }, says: "more than 2000000 stacks (restart the server with a larger --max-samples", peak: 96 * mib},
		{name: "50M attributes", input: func(t testing.TB) []byte { return otlpEntries(t, 6, 50_000_000) }, says: "more than 8000000 attributes (restart the server with a larger --max-strings", peak: 96 * mib},
		{name: "50M locations as JSON", json: true, input: func(t testing.TB) []byte { return otlpJSONLocations(t, 50_000_000) }, says: "more than 4000000 locations (restart the server with a larger --max-locations", peak: 96 * mib},
		{name: "a 100k-frame stack named by 100k samples", input: func(t testing.TB) []byte { return otlpRequest(t, 1, 100_000, 100_000) }, says: "more than 50000000 frames (restart the server with a larger --max-frames", peak: 96 * mib},
		{name: "20,000 profiles", input: func(t testing.TB) []byte { return otlpRequest(t, 20_000, 1, 1) }, says: "more than 10000 profiles (restart the server with a larger --max-otlp-profiles", peak: 96 * mib},
		{name: "4 × 50M locations at once", at: 4, input: func(t testing.TB) []byte { return otlpEntries(t, 2, 50_000_000) }, says: "--max-locations", peak: 192 * mib},
	} {
		t.Run(r.name, func(t *testing.T) {
			data := r.input(t)
			ctype := "application/x-protobuf"
			if r.json {
				ctype = "application/json"
			}
			at := max(r.at, 1)
			// Honest requests, one after the other, while the attack runs.
			var served, refused atomic.Int64
			var refusals sync.Map
			stopHonest := make(chan struct{})
			var honestDone sync.WaitGroup
			if at > 1 {
				honestDone.Go(func() {
					for {
						select {
						case <-stopHonest:
							return
						default:
						}
						resp, body := postOTLP(t, ts.URL, "application/x-protobuf", honest, false)
						if resp.StatusCode == 200 {
							served.Add(1)
						} else {
							refused.Add(1)
							refusals.Store(resp.StatusCode, string(body))
						}
						time.Sleep(20 * time.Millisecond)
					}
				})
			}
			stop := heappeak.Watch()
			codes, msgs := make([]int, at), make([]string, at)
			var wg sync.WaitGroup
			start := time.Now()
			for i := range at {
				wg.Go(func() {
					resp, body := postOTLP(t, ts.URL, ctype, data, false, "Content-Encoding", "gzip")
					_, msgs[i] = rpcStatus(t, ctype, body)
					codes[i] = resp.StatusCode
				})
			}
			wg.Wait()
			took := time.Since(start)
			close(stopHonest)
			honestDone.Wait()
			peak := stop()
			t.Logf("%d-byte request ×%d: %v in %v, peak heap %d MiB", len(data), at, codes, took.Round(time.Millisecond), peak/mib)
			for i := range at {
				if codes[i] != 413 || !strings.Contains(msgs[i], r.says) {
					t.Errorf("request %d: %d %q; want 413 naming %q", i, codes[i], msgs[i], r.says)
				}
			}
			if peak > r.peak {
				t.Errorf("peak heap %d MiB; want at most %d MiB", peak/mib, r.peak/mib)
			}
			if at > 1 {
				t.Logf("honest OTLP requests meanwhile: %d served, %d refused", served.Load(), refused.Load())
				if served.Load() == 0 || refused.Load() > 0 {
					var seen []string
					refusals.Range(func(k, v any) bool { seen = append(seen, fmt.Sprintf("%v %.200s", k, v)); return true })
					t.Errorf("honest OTLP requests during the attack: %d served, %d refused (%v); want all served", served.Load(), refused.Load(), seen)
				}
			}
			if resp, body := postOTLP(t, ts.URL, "application/x-protobuf", honest, false); resp.StatusCode != 200 {
				t.Errorf("an honest OTLP request after the attack: %d %.300s", resp.StatusCode, body)
			}
		})
	}
}
