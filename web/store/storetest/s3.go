// Package storetest runs a real S3 server (gofakes3 with its in-memory
// backend) on loopback for tests, so the AWS SDK behind gocloud's s3blob
// speaks the S3 protocol over HTTP exactly as it would to S3 or MinIO, and
// a fake of Google Cloud Storage's JSON API for the gs:// driver (gcs.go).
package storetest

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	failPuts atomic.Bool
	putsLeft atomic.Int64 // > 0: PUTs that succeed before failPuts is set
	clock    *clock
	stall    atomic.Bool
	mu       sync.Mutex
	release  chan struct{} // closed when the stall ends
	parts    atomic.Int64  // part uploads begun
}

// clock is the server's time: the real time, behind by an offset.
type clock struct{ behind atomic.Int64 }

func (c *clock) Now() time.Time                  { return time.Now().Add(-time.Duration(c.behind.Load())).UTC() }
func (c *clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

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
	s := &S3{Bucket: "profiles", clock: &clock{}}
	backend := s3mem.New(s3mem.WithTimeSource(s.clock))
	if err := backend.CreateBucket("profiles"); err != nil {
		t.Fatal(err)
	}
	// The skew allowed between a request's date and the server's covers
	// SetClockBehind.
	faker := gofakes3.New(backend, gofakes3.WithTimeSource(s.clock), gofakes3.WithTimeSkewLimit(1000*time.Hour))
	h := faker.Server()
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Query().Has("uploadId") && r.URL.Query().Has("partNumber") {
			s.parts.Add(1)
			if s.stall.Load() {
				// The part is read (then the server notices the client
				// going away) and never stored.
				io.Copy(io.Discard, r.Body)
				s.mu.Lock()
				release := s.release
				s.mu.Unlock()
				select {
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
		}
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
	t.Cleanup(func() {
		s.StallParts(false)
		s.srv.Close()
	})
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

// SetClockBehind dates what the server stores from now on (objects'
// modification times, multipart uploads' start) behind the real time by
// d: what an earlier crash would have left, made now.
func (s *S3) SetClockBehind(d time.Duration) { s.clock.behind.Store(int64(d)) }

// StallParts makes the parts of multipart uploads (objects over 16 MiB)
// never arrive: each part is read and not stored, its request answered
// only once its client went away (or the stall ends), so a process killed
// meanwhile leaves its upload unfinished.
func (s *S3) StallParts(stall bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stall && !s.stall.Load() {
		s.release = make(chan struct{})
	}
	if !stall && s.stall.Load() {
		close(s.release)
	}
	s.stall.Store(stall)
}

// PartsBegun counts the multipart uploads' parts sent to the server.
func (s *S3) PartsBegun() int64 { return s.parts.Load() }

// Uploads lists the bucket's unfinished multipart uploads, as "KEY
// (begun TIME)", sorted: what holds parts no object listing shows.
func (s *S3) Uploads(t testing.TB) []string {
	t.Helper()
	resp, err := http.Get(s.Endpoint + "/" + s.Bucket + "?uploads")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil // gofakes3's answer for a bucket that never had one
	}
	var out struct {
		Uploads []struct {
			Key       string    `xml:"Key"`
			Initiated time.Time `xml:"Initiated"`
		} `xml:"Upload"`
		Truncated bool `xml:"IsTruncated"`
	}
	if err := xml.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Truncated {
		t.Fatalf("listing the multipart uploads: %s, %v (truncated %v)", resp.Status, err, out.Truncated)
	}
	var l []string
	for _, u := range out.Uploads {
		l = append(l, fmt.Sprintf("%s (begun %s)", u.Key, u.Initiated.UTC().Format(time.RFC3339)))
	}
	sort.Strings(l)
	return l
}

// BeginUpload begins a multipart upload of key and sends its first part,
// as a writer of a large object does, and leaves it unfinished: another
// replica's upload in progress.
func (s *S3) BeginUpload(t testing.TB, key string, part []byte) {
	t.Helper()
	resp, err := http.Post(s.Endpoint+"/"+s.Bucket+"/"+key+"?uploads", "application/octet-stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	var begun struct {
		UploadID string `xml:"UploadId"`
	}
	err = xml.NewDecoder(resp.Body).Decode(&begun)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || begun.UploadID == "" {
		t.Fatalf("beginning a multipart upload of %s: %s, %v", key, resp.Status, err)
	}
	req, _ := http.NewRequest(http.MethodPut, s.Endpoint+"/"+s.Bucket+"/"+key+"?partNumber=1&uploadId="+url.QueryEscape(begun.UploadID), bytes.NewReader(part))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a part of %s: %s", key, resp.Status)
	}
}

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
