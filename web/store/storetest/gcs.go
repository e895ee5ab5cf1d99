package storetest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"viewer/web/store"
)

// GCS is fake-gcs-server (the Cloud Storage emulator, as a library) on
// loopback, holding bucket "profiles", in front of which an outage can be
// switched on. Code under test reaches it through STORAGE_EMULATOR_HOST,
// as the Cloud Storage client reaches any emulator.
type GCS struct {
	// URL is the --store URL of the bucket.
	URL string
	// Endpoint is the server's http://127.0.0.1:PORT.
	Endpoint string
	Bucket   string
	fake     *fakestorage.Server
	down     atomic.Bool
}

// NewGCS starts the emulator on 127.0.0.1, stopped when the test ends, and
// points STORAGE_EMULATOR_HOST at it (so tests using it cannot run in
// parallel).
func NewGCS(t testing.TB) *GCS {
	t.Helper()
	g := &GCS{Bucket: "profiles"}
	srv := httptest.NewUnstartedServer(nil)
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true, Scheme: "http", Host: "127.0.0.1", PublicHost: "127.0.0.1", Port: uint16(srv.Listener.Addr().(*net.TCPAddr).Port),
	})
	if err != nil {
		t.Fatalf("starting fake-gcs-server: %v", err)
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: g.Bucket})
	g.fake = fake
	h := fake.HTTPHandler()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 503, "message": "injected outage"}})
			return
		}
		h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(func() { srv.Close(); fake.Stop() })
	g.Endpoint = srv.URL
	g.URL = "gs://" + g.Bucket
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL, "http://"))
	return g
}

// SetDown makes every request fail with 503 (true) or serves again.
func (g *GCS) SetDown(down bool) { g.down.Store(down) }

// Open opens the bucket through store.OpenURL, closed when the test ends.
func (g *GCS) Open(t testing.TB) *store.Blob { t.Helper(); return g.OpenURL(t, g.URL) }

// OpenURL opens u (this bucket's URL with parameters) through store.OpenURL.
func (g *GCS) OpenURL(t testing.TB, u string) *store.Blob {
	t.Helper()
	b, err := store.OpenURL(context.Background(), u)
	if err != nil {
		t.Fatalf("opening %s: %v", u, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// WithPrefix is the bucket's URL keeping keys under prefix.
func (g *GCS) WithPrefix(prefix string) string {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return g.URL + "?prefix=" + url.QueryEscape(prefix)
}

// Object returns the stored bytes of name, read from the emulator's own
// backend, as a test's independent check.
func (g *GCS) Object(name string) ([]byte, bool) {
	o, err := g.fake.GetObject(g.Bucket, name)
	if err != nil {
		return nil, false
	}
	return o.Content, true
}
