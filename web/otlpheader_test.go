package web

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// distinctProfiles is a gzipped OTLP request of n profiles of one sample
// each, each sample's value its profile's number, so that each is stored
// apart (the same bytes would be stored once).
func distinctProfiles(t testing.TB, n int) []byte {
	var p pbuf
	p.msg(2, func(d *pbuf) {
		d.msg(2, func(l *pbuf) { l.uint(2, 0x401000) })
		d.msg(7, func(s *pbuf) { s.bytes(1, []byte{0}) })
		d.bytes(5, nil)
		d.bytes(5, []byte("samples"))
		d.bytes(5, []byte("count"))
	})
	p.msg(1, func(r *pbuf) {
		r.msg(2, func(sc *pbuf) {
			for i := range n {
				sc.msg(2, func(pr *pbuf) {
					pr.msg(1, func(vt *pbuf) { vt.uint(1, 1); vt.uint(2, 2) })
					pr.msg(2, func(s *pbuf) {
						s.uint(1, 0)
						var v pbuf
						v.varint(uint64(i + 1))
						s.bytes(4, v.b) // values
					})
				})
			}
		})
	})
	return gzipWith(t, func(w io.Writer) { w.Write(p.b) })
}

// TestOTLPProfilesHeaderBounded: a request of --max-otlp-profiles
// profiles (10,000) is stored whole, and its answer's header stays within
// the 4 KiB that nginx's default proxy_buffer_size holds (its IDs made a
// 210 KB X-Viewer-Profiles): the header lists the first IDs, each served,
// and X-Viewer-Profiles-Count says how many were stored.
func TestOTLPProfilesHeaderBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 10,000 profiles")
	}
	_, ts := newTestServer(t, Config{OTLP: true})
	const n = 10_000 // ingest.DefaultMaxOTLPProfiles
	resp, body := postOTLP(t, ts.URL, "application/x-protobuf", distinctProfiles(t, n), false, "Content-Encoding", "gzip")
	er := pprofileotlp.NewExportResponse()
	if err := er.UnmarshalProto(body); resp.StatusCode != http.StatusOK || err != nil || er.PartialSuccess().RejectedProfiles() != 0 {
		t.Fatalf("%d profiles: %s %.300s", n, resp.Status, er.PartialSuccess().ErrorMessage())
	}
	size := len("HTTP/1.1 200 OK\r\n\r\n")
	for k, vs := range resp.Header {
		for _, v := range vs {
			size += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	if size > 4<<10 {
		t.Errorf("the response header is %d bytes (X-Viewer-Profiles: %d); want at most 4 KiB", size, len(resp.Header.Get("X-Viewer-Profiles")))
	}
	if got := resp.Header.Get("X-Viewer-Profiles-Count"); got != strconv.Itoa(n) {
		t.Errorf("X-Viewer-Profiles-Count %q; want %d", got, n)
	}
	ids := strings.Split(resp.Header.Get("X-Viewer-Profiles"), ",")
	if len(ids) < 50 {
		t.Errorf("the header lists %d IDs; want the first 50 at least", len(ids))
	}
	t.Logf("%d profiles stored: a %d-byte response header listing %d IDs", n, size, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("ID %s listed twice: the profiles were not stored apart", id)
		}
		seen[id] = true
		r, err := http.Get(ts.URL + "/p/" + id + "/profile.pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("listed profile %s: %s", id, r.Status)
		}
	}
}
