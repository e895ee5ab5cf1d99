package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/protobuf/encoding/protowire"

	"viewer/web/ingest/otlptest"
	"viewer/web/profiles"
	"viewer/web/store"
)

// otlpResource is the resource an OTLP exporter names its process with.
var otlpResource = map[string]string{"service.name": "checkout", "host.name": "host-1", "process.executable.name": "checkout-svc"}

// postOTLP sends an OTLP request body with the given content type (and
// gzip Content-Encoding when gz) and returns the response and its body.
func postOTLP(t testing.TB, base, ctype string, body []byte, gz bool, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	if gz {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	req, _ := http.NewRequest(http.MethodPost, base+OTLPPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// rpcStatus decodes a google.rpc.Status body (code 1, message 2).
func rpcStatus(t testing.TB, ctype string, b []byte) (code int, msg string) {
	t.Helper()
	if ctype == "application/json" {
		var s struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("error body %q is not a JSON Status: %v", b, err)
		}
		return s.Code, s.Message
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("error body is not a protobuf Status")
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			code, b = int(v), b[m:]
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeString(b)
			msg, b = v, b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				t.Fatalf("error body is not a protobuf Status")
			}
			b = b[m:]
		}
	}
	return code, msg
}

// TestOTLPErrors checks the OTLP/HTTP error cases: each answers the spec's
// status with a google.rpc.Status body in the request's encoding naming
// what was wrong; overload is retryable with Retry-After; a profile that
// cannot be read is a partial success while the others are stored.
func TestOTLPErrors(t *testing.T) {
	pb, _ := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(testProfile(), otlpResource)).MarshalProto()
	js, _ := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(testProfile(), otlpResource)).MarshalJSON()
	// The next stored profile waits in AfterUpload on hold, once it is set.
	var (
		mu   sync.Mutex
		hold chan struct{}
		held = make(chan struct{}, 1)
	)
	holdNext := func() chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		hold = make(chan struct{})
		return hold
	}
	_, ts := newTestServer(t, Config{
		OTLP:      true,
		MaxUpload: 64 << 10,
		AuthToken: "s3cret",
		Limits:    Limits{MaxConcurrentUploads: 1, UploadWait: 200 * time.Millisecond},
		AfterUpload: func(string) {
			mu.Lock()
			h := hold
			hold = nil
			mu.Unlock()
			if h != nil {
				held <- struct{}{}
				<-h
			}
		},
	})
	auth := []string{"Authorization", "Bearer s3cret"}
	for _, tc := range []struct {
		name, ctype string
		body        []byte
		hdr         []string
		status      int
		code        int
		says        string
	}{
		{"malformed protobuf", "application/x-protobuf", pb[:len(pb)/2], auth, 400, 3, "OTLP"},
		{"malformed JSON", "application/json", []byte(`{"resourceProfiles": [`), auth, 400, 3, "OTLP"},
		{"protobuf sent as JSON", "application/json", pb, auth, 400, 3, "JSON"},
		{"unknown content type", "text/plain", pb, auth, 415, 3, "application/x-protobuf"},
		{"unknown version", "application/x-protobuf", pb, append(slices.Clone(auth), "otlp-profiles-development-version", "9"), 400, 3, "version"},
		{"oversize", "application/x-protobuf", make([]byte, 65<<10), auth, 413, 8, "limit"},
		{"missing token", "application/x-protobuf", pb, nil, 401, 16, "token"},
		{"another site's page", "application/json", js, append(slices.Clone(auth), "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"), 403, 7, "another site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := postOTLP(t, ts.URL, tc.ctype, tc.body, false, tc.hdr...)
			ct := "application/x-protobuf"
			if tc.ctype == "application/json" {
				ct = tc.ctype
			}
			code, msg := rpcStatus(t, ct, body)
			if resp.StatusCode != tc.status || code != tc.code || !strings.Contains(msg, tc.says) {
				t.Errorf("%s: %d code %d %q; want %d code %d naming %q", tc.name, resp.StatusCode, code, msg, tc.status, tc.code, tc.says)
			}
		})
	}

	// Overload: while the one parse slot is held (by a gzipped request,
	// spooled, which keeps its slot until its profiles are stored), the
	// next request gets 503 UNAVAILABLE with Retry-After, which OTLP
	// clients retry.
	h := holdNext()
	first := make(chan int, 1)
	go func() {
		resp, _ := postOTLP(t, ts.URL, "application/x-protobuf", pb, true, auth...)
		first <- resp.StatusCode
	}()
	<-held
	resp, body := postOTLP(t, ts.URL, "application/x-protobuf", pb, false, auth...)
	if code, _ := rpcStatus(t, "application/x-protobuf", body); resp.StatusCode != 503 || code != 14 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("while busy: %d code %d Retry-After %q; want 503, UNAVAILABLE, Retry-After", resp.StatusCode, code, resp.Header.Get("Retry-After"))
	}
	close(h)
	if st := <-first; st != 200 {
		t.Errorf("the held request: %d", st)
	}

	// A request read into memory hands its slot back once its profiles
	// are encoded: while it waits for the store, the next one is taken.
	h = holdNext()
	go func() {
		resp, _ := postOTLP(t, ts.URL, "application/x-protobuf", pb, false, auth...)
		first <- resp.StatusCode
	}()
	<-held
	pb2, _ := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(testProfile(), map[string]string{"service.name": "other"})).MarshalProto()
	if resp, _ := postOTLP(t, ts.URL, "application/x-protobuf", pb2, false, auth...); resp.StatusCode != 200 {
		t.Errorf("while another request waits for the store: %d, want 200", resp.StatusCode)
	}
	close(h)
	if st := <-first; st != 200 {
		t.Errorf("the held request: %d", st)
	}
}

// TestOTLPOff: without serve --otlp the endpoint answers 404 naming the flag.
func TestOTLPOff(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	pb, _ := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(testProfile(), otlpResource)).MarshalProto()
	resp, body := postOTLP(t, ts.URL, "application/x-protobuf", pb, false)
	if _, msg := rpcStatus(t, "application/x-protobuf", body); resp.StatusCode != 404 || !strings.Contains(msg, "--otlp") {
		t.Errorf("OTLP off: %d %q, want 404 naming --otlp", resp.StatusCode, msg)
	}
}

// TestOTLPStoredOnce: an OTLP profile is stored in one encoding, the
// converted pprof copy that every load and the download read (an OTLP
// request has no original bytes of its own to keep), and a restart reads
// it back without converting anything.
func TestOTLPStoredOnce(t *testing.T) {
	dir := t.TempDir()
	s, ts := newTestServer(t, Config{OTLP: true, DataDir: dir})
	pb, _ := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(testProfile(), otlpResource)).MarshalProto()
	resp, body := postOTLP(t, ts.URL, "application/x-protobuf", pb, false)
	id, _, _ := strings.Cut(resp.Header.Get("X-Viewer-Profiles"), ",")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("%s %q", resp.Status, body)
	}
	keys, err := s.prof.Store().(store.Lister).List(context.Background(), id+"/")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	want := []string{profiles.Key(id, profiles.KeyMeta), profiles.Key(id, profiles.KeyConverted)}
	if !slices.Equal(keys, want) {
		t.Errorf("stored %q, want only %q", keys, want)
	}
	dl, err := s.prof.Download(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := profile.Parse(dl)
	dl.Close()
	if err != nil || len(got.Sample) != len(testProfile().Sample) {
		t.Fatalf("download: %v, %+v", err, got)
	}
	// A second server on the same directory (a restart) loads it from
	// that copy, converting nothing.
	s2, _ := newTestServer(t, Config{OTLP: true, DataDir: dir})
	if _, err := s2.prof.Profile(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if n := s2.prof.Conversions(); n != 0 {
		t.Errorf("the restart converted %d times, want 0", n)
	}
}
