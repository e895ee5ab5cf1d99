package debuginfod_test

// Every hostile server the hardening issue lists, checked the same way:
// the fetch fails with an error naming the server, nothing is cached, and a
// good server asked next for the same build ID still serves it (the failure
// is not remembered as "not found").

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
)

func TestHostileServers(t *testing.T) {
	t.Parallel()
	good := testFile(t, "hello.debug")
	other := testFile(t, "other.debug")
	junk := make([]byte, 64<<10)
	rand.Read(junk)
	var bomb bytes.Buffer
	// BestSpeed: the default level takes ~6x the CPU (30 s under -race
	// for these 256 MiB) for a bomb of the same effect (~1000:1).
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed)
	zeros := make([]byte, 1<<20)
	for range 256 {
		zw.Write(zeros) // 256 MiB of zeros in about 320 KiB
	}
	zw.Close()
	var endlessSent atomic.Int64

	cases := []struct {
		name    string
		cfg     debuginfod.Config
		handler func(w http.ResponseWriter, r *http.Request, n int64)
	}{
		{"wrong build ID", debuginfod.Config{}, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(other) }},
		{"not an ELF", debuginfod.Config{}, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(junk) }},
		{"truncated ELF", debuginfod.Config{}, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(good[:len(good)/3]) }},
		{"HTML error page with 200", debuginfod.Config{}, func(w http.ResponseWriter, r *http.Request, _ int64) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<!doctype html><title>Sign in</title><p>Your session expired.</p>"))
		}},
		{"endless body", debuginfod.Config{MaxSize: 4 << 20}, func(w http.ResponseWriter, r *http.Request, _ int64) {
			w.Write(good[:64]) // an ELF header, then garbage forever
			buf := make([]byte, 64<<10)
			for r.Context().Err() == nil {
				n, err := w.Write(buf)
				endlessSent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}},
		{"body that stalls", debuginfod.Config{Timeout: 300 * time.Millisecond, RetryLimit: -1}, func(w http.ResponseWriter, r *http.Request, _ int64) {
			w.Header().Set("Content-Length", "1000000")
			w.Write(good[:1000])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
		{"gzip bomb with Content-Encoding", debuginfod.Config{}, func(w http.ResponseWriter, r *http.Request, _ int64) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		}},
		{"redirect to a file", debuginfod.Config{}, func(w http.ResponseWriter, r *http.Request, _ int64) {
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		}},
		{"redirect loop", debuginfod.Config{}, func(w http.ResponseWriter, r *http.Request, _ int64) {
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
		}},
	}
	// A redirect to another host serving a wrong file.
	elsewhere := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(junk) })
	cases = append(cases, struct {
		name    string
		cfg     debuginfod.Config
		handler func(w http.ResponseWriter, r *http.Request, n int64)
	}{"redirect to another host", debuginfod.Config{}, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}})

	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			srv := newFake(t, tc.handler)
			cfg := tc.cfg
			cfg.URLs = []string{srv.URL}
			c := newClient(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			path, err := c.Fetch(ctx, helloID, debuginfod.KindDebuginfo, nil)
			if err == nil {
				t.Fatalf("Fetch from a hostile server succeeded: %s", path)
			}
			if !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error %q does not name the server %s", err, srv.URL)
			}
			if cerr := ctx.Err(); cerr != nil {
				t.Errorf("the fetch ran into the test's own 30s timeout: %v", err)
			}
			assertNothingCached(t, c, helloID)

			// The same cache with a good server: the build ID is fetched
			// and verified, so nothing of the hostile answer was kept.
			goodSrv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(good) })
			cfg.URLs = []string{goodSrv.URL}
			cfg.CacheDir = c.CacheDir()
			c2 := newClient(t, cfg)
			p, err := c2.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
			if err != nil {
				t.Fatalf("fetch from a good server after the hostile one: %v", err)
			}
			mustMatch(t, p, good)
		})
	}
	t.Cleanup(func() {
		if n := endlessSent.Load(); n > 64<<20 {
			t.Errorf("the endless body was read for %d MiB past a 4 MiB limit", n>>20)
		}
	})
}
