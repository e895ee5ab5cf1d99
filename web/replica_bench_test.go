package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"viewer/web"
	"viewer/web/store"
	"viewer/web/store/storetest"
	"viewer/web/webtest"
)

// BenchmarkStoreUploadFirstView compares the S3 backend (gofakes3 on
// loopback, through gocloud's s3blob and the AWS SDK, with replication on
// as serve --store runs it) with the local directory, on the 7.7 MB
// benchmark profile: the upload (POST /api/profiles) plus the first view
// (the page and flame.json), both on the server that took the upload
// ("same") and on a second server sharing the store that has nothing
// cached ("other": it reads the profile back from the store and parses it).
// Each iteration runs both backends, alternating which goes first, on fresh
// servers and fresh store locations, and reports milliseconds per backend
// and their ratio s3/dir.
//
//	go test -run '^$' -bench StoreUploadFirstView -benchtime 3x ./web/
//	# VIEWER_BENCH_PROFILE=FILE to reuse a generated profile
func BenchmarkStoreUploadFirstView(b *testing.B) {
	_, data := webtest.BenchProfile(b)
	s3 := storetest.NewS3(b)
	client := &http.Client{}
	open := func(backend string, i int) func() store.Store {
		switch backend {
		case "dir":
			dir := b.TempDir()
			return func() store.Store {
				d, err := store.NewDir(dir)
				if err != nil {
					b.Fatal(err)
				}
				return d
			}
		default:
			u := s3.URL + "&prefix=" + url.QueryEscape(fmt.Sprintf("bench-%d/", i))
			return func() store.Store { return s3.OpenURL(b, u) }
		}
	}
	serve := func(backend string, st store.Store) string {
		cfg := web.Config{Store: st}
		if backend == "s3" {
			cfg.Replica = &web.ReplicaConfig{}
		}
		s, err := web.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		b.Cleanup(func() { ts.Close(); s.CloseReplica() })
		return ts.URL
	}
	get := func(u string) {
		resp, err := client.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s: %s", u, resp.Status)
		}
	}
	run := func(backend string, i int) (same, other time.Duration) {
		st := open(backend, i)
		a, o := serve(backend, st()), serve(backend, st())
		start := time.Now()
		resp, err := client.Post(a+"/api/profiles", "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		var id struct{ ID string }
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("upload to %s: %s %s", backend, resp.Status, body)
		}
		if _, err := fmt.Sscanf(string(body), `{"id":%q`, &id.ID); err != nil {
			b.Fatalf("upload answer %s: %v", body, err)
		}
		uploaded := time.Since(start)
		get(a + "/p/" + id.ID)
		get(a + "/p/" + id.ID + "/flame.json")
		same = time.Since(start)
		start = time.Now()
		get(o + "/p/" + id.ID)
		get(o + "/p/" + id.ID + "/flame.json")
		other = uploaded + time.Since(start)
		return same, other
	}
	var dirSame, dirOther, s3Same, s3Other time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := []string{"dir", "s3"}
		if i%2 == 1 {
			order = []string{"s3", "dir"}
		}
		for _, backend := range order {
			same, other := run(backend, i)
			if backend == "dir" {
				dirSame, dirOther = dirSame+same, dirOther+other
			} else {
				s3Same, s3Other = s3Same+same, s3Other+other
			}
		}
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / n / 1e6 }
	b.ReportMetric(ms(dirSame), "dir-same-ms")
	b.ReportMetric(ms(s3Same), "s3-same-ms")
	b.ReportMetric(float64(s3Same)/float64(dirSame), "s3/dir-same")
	b.ReportMetric(ms(dirOther), "dir-other-ms")
	b.ReportMetric(ms(s3Other), "s3-other-ms")
	b.ReportMetric(float64(s3Other)/float64(dirOther), "s3/dir-other")
}
