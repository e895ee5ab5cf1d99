// Package storetest runs a real S3 server (gofakes3 with its in-memory
// backend) on loopback for tests, so the AWS SDK behind gocloud's s3blob
// speaks the S3 protocol over HTTP exactly as it would to S3 or MinIO, and
// a fake of Google Cloud Storage's JSON API for the gs:// driver (gcs.go).
package storetest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"viewer/web/store"
)

// S3 is a running S3 server with one bucket.
type S3 struct {
	// URL is the --store URL of the bucket.
	URL string
	// Endpoint is the server's http://127.0.0.1:PORT.
	Endpoint string
	Bucket   string
	srv      *httptest.Server
	down     atomic.Bool
	requests atomic.Int64
	failPuts atomic.Bool
	putsLeft atomic.Int64 // > 0: PUTs that succeed before failPuts is set
}

// NewS3 starts an S3 server on 127.0.0.1 holding bucket "profiles", closed
// when the test ends. It sets the AWS environment the SDK needs (dummy
// credentials, no instance metadata, no ~/.aws files), so tests using it
// cannot run in parallel.
func NewS3(t testing.TB) *S3 {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "viewer-test",
		"AWS_SECRET_ACCESS_KEY":       "viewer-test-secret",
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  "us-east-1",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             "/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
		"AWS_PROFILE":                 "",
	} {
		t.Setenv(k, v)
	}
	backend := s3mem.New()
	if err := backend.CreateBucket("profiles"); err != nil {
		t.Fatal(err)
	}
	faker := gofakes3.New(backend)
	s := &S3{Bucket: "profiles"}
	h := faker.Server()
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Method == http.MethodPut && s.putsLeft.Load() > 0 && s.putsLeft.Add(-1) == 0 {
			s.failPuts.Store(true)
		}
		if s.down.Load() || (s.failPuts.Load() && r.Method == http.MethodPut) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>injected outage</Message></Error>`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	s.srv.Start() // httptest listens on 127.0.0.1
	t.Cleanup(s.srv.Close)
	s.Endpoint = s.srv.URL
	q := url.Values{
		"endpoint":       {s.srv.URL},
		"region":         {"us-east-1"},
		"use_path_style": {"true"},
		"disable_https":  {"true"},
	}
	s.URL = "s3://" + s.Bucket + "?" + q.Encode()
	return s
}

// SetDown makes every request fail with 503 ServiceUnavailable (true) or
// serves again (false), as an outage of the store would.
func (s *S3) SetDown(down bool) { s.down.Store(down) }

// SetFailPuts makes writes fail with 503 while reads still work.
func (s *S3) SetFailPuts(fail bool) { s.failPuts.Store(fail) }

// FailPutsAfter lets n more writes through, then makes writes fail as
// SetFailPuts(true) does: a store that fills up in the middle of an upload.
func (s *S3) FailPutsAfter(n int64) {
	s.failPuts.Store(false)
	s.putsLeft.Store(n + 1)
}

// Requests counts the HTTP requests the server received.
func (s *S3) Requests() int64 { return s.requests.Load() }

// Open opens the bucket through store.OpenURL, closed when the test ends.
func (s *S3) Open(t testing.TB) *store.Blob {
	t.Helper()
	return s.OpenURL(t, s.URL)
}

// OpenURL opens u (this server's URL with changed parameters, e.g. a
// prefix) through store.OpenURL.
func (s *S3) OpenURL(t testing.TB, u string) *store.Blob {
	t.Helper()
	b, err := store.OpenURL(context.Background(), u)
	if err != nil {
		t.Fatalf("opening %s: %v", u, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// WithPrefix is the bucket's URL keeping keys under prefix.
func (s *S3) WithPrefix(prefix string) string {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return s.URL + "&prefix=" + url.QueryEscape(prefix)
}
