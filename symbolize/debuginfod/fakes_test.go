package debuginfod_test

// Servers that misbehave in ways the real debuginfod cannot be made to.

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
	"viewer/testdata/poll"
)

// fake is an httptest server counting its requests.
type fake struct {
	*httptest.Server
	n       atomic.Int64
	mu      sync.Mutex
	headers []http.Header
}

func newFake(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int64)) *fake {
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := f.n.Add(1)
		f.mu.Lock()
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		h(w, r, n)
	}))
	t.Cleanup(f.Close)
	return f
}

// assertNothingCached checks a failed fetch left no file, temp file or
// negative entry for id.
func assertNothingCached(t *testing.T, c *debuginfod.Client, id string) {
	t.Helper()
	if names := listDir(t, filepath.Join(c.CacheDir(), id)); len(names) != 0 {
		t.Errorf("cache holds %v for %s after a failed fetch, want nothing", names, id)
	}
}

func TestFakeWrongBuildIDIsDiscarded(t *testing.T) {
	t.Parallel()
	other := testFile(t, "other.debug")
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(other) })
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	var ve *debuginfod.VerifyError
	if !errors.As(err, &ve) || ve.Got != otherID || ve.Want != helloID {
		t.Fatalf("Fetch: %v; want a VerifyError with build ID %s instead of %s", err, otherID, helloID)
	}
	for _, want := range []string{srv.URL, otherID, helloID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if errors.Is(err, debuginfod.ErrNotFound) {
		t.Error("a wrong file must not read as not found")
	}
	assertNothingCached(t, c, helloID)
	if srv.n.Load() != 1 {
		t.Errorf("a wrong file was retried: %d requests", srv.n.Load())
	}
}

func TestFakeHTMLErrorPageWithStatus200(t *testing.T) {
	t.Parallel()
	page := "<!DOCTYPE html>\n<html><body>Please log in</body></html>\n"
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	})
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	_, err := c.Fetch(context.Background(), helloID, debuginfod.KindExecutable, nil)
	var ve *debuginfod.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), fmt.Sprintf("text/html, %d bytes", len(page))) || strings.Contains(err.Error(), "log in") {
		t.Fatalf("Fetch: %v; want a VerifyError giving the page's type and size, not its text", err)
	}
	assertNothingCached(t, c, helloID)

	// For a source file, the Content-Type gives the page away.
	_, err = c.Fetch(context.Background(), helloID, debuginfod.SourceKind("/usr/src/hello.c"), nil)
	if !errors.As(err, &ve) {
		t.Fatalf("source fetch of an HTML page: %v; want a VerifyError", err)
	}
	assertNothingCached(t, c, helloID)
}

func TestFakeOversizedBody(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello.debug")
	for _, announce := range []bool{true, false} {
		t.Run(fmt.Sprintf("content-length=%v", announce), func(t *testing.T) {
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
				if announce {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				} else {
					w.(http.Flusher).Flush() // chunked: size unknown until the end
				}
				w.Write(body)
			})
			c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, MaxSize: 1000})
			_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
			var tl *debuginfod.TooLargeError
			if !errors.As(err, &tl) || tl.Limit != 1000 {
				t.Fatalf("Fetch: %v; want a TooLargeError for the 1000-byte limit", err)
			}
			if got := srv.headers[0].Get("X-Debuginfod-Maxsize"); got != "1000" {
				t.Errorf("X-DEBUGINFOD-MAXSIZE sent as %q, want 1000", got)
			}
			assertNothingCached(t, c, helloID)
		})
	}
	t.Run("server says 406", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
			http.Error(w, "too big", http.StatusNotAcceptable)
		})
		c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, MaxSize: 1000})
		_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
		var tl *debuginfod.TooLargeError
		if !errors.As(err, &tl) {
			t.Fatalf("Fetch: %v; want a TooLargeError", err)
		}
		assertNothingCached(t, c, helloID)
	})
}

// A body that stops arriving is given up after DEBUGINFOD_TIMEOUT.
func TestFakeStalledBody(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Length", "100000")
		w.Write([]byte("\x7fELF"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, Timeout: 300 * time.Millisecond, RetryLimit: -1})
	start := time.Now()
	_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	var se *debuginfod.StalledError
	if !errors.As(err, &se) {
		t.Fatalf("Fetch: %v; want a StalledError", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("gave up after %v, want about the 300ms timeout", d)
	}
	assertNothingCached(t, c, helloID)
}

// MAXTIME bounds the whole fetch, retries included.
func TestFakeMaxTime(t *testing.T) {
	t.Parallel()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, MaxTime: 200 * time.Millisecond, RetryLimit: 100, RetryBackoff: 50 * time.Millisecond})
	_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	var me *debuginfod.MaxTimeError
	if !errors.As(err, &me) {
		t.Fatalf("Fetch: %v; want a MaxTimeError", err)
	}
	assertNothingCached(t, c, helloID)
}

func TestFakeRetriesServerErrors(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello.debug")
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		switch n {
		case 1:
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			w.Write(body)
		}
	})
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, RetryLimit: 2})
	path, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	if err != nil {
		t.Fatalf("Fetch after a 503 and a 429: %v", err)
	}
	mustMatch(t, path, body)
	if n := srv.n.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}

	// Past the retry limit the error says what the server answered (its
	// status, type and size, never its text: users of a shared server read
	// it), and no negative entry is written: the file may well exist.
	down := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Error(w, "maintenance", http.StatusBadGateway)
	})
	c = newClient(t, debuginfod.Config{URLs: []string{down.URL}, RetryLimit: 1})
	_, err = c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	var se *debuginfod.StatusError
	if !errors.As(err, &se) || se.Status != 502 || !strings.Contains(err.Error(), "HTTP status 502 (text/plain; charset=utf-8, 12 bytes)") || strings.Contains(err.Error(), "maintenance") {
		t.Fatalf("Fetch from a failing server: %v; want its 502, type and size, without the body", err)
	}
	if n := down.n.Load(); n != 2 {
		t.Errorf("%d requests with RETRY_LIMIT=1, want 2", n)
	}
	assertNothingCached(t, c, helloID)
}

func TestFakeFirstServer404SecondWins(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello")
	miss := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { http.NotFound(w, r) })
	has := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		time.Sleep(50 * time.Millisecond) // let the 404 come first
		// No Content-Length: the total comes from X-DEBUGINFOD-SIZE.
		w.Header().Set("X-Debuginfod-Size", strconv.Itoa(len(body)))
		w.(http.Flusher).Flush()
		w.Write(body)
	})
	c := newClient(t, debuginfod.Config{URLs: []string{miss.URL, has.URL + "/"}})
	var rec recorder
	path, err := c.Fetch(context.Background(), helloID, debuginfod.KindExecutable, rec.add)
	if err != nil {
		t.Fatal(err)
	}
	mustMatch(t, path, body)
	if miss.n.Load() != 1 || has.n.Load() != 1 {
		t.Errorf("requests: %d to the 404 server, %d to the good one; want 1 each", miss.n.Load(), has.n.Load())
	}
	saw := false
	for _, p := range rec.ps {
		if p.Phase == debuginfod.PhaseDownloading {
			saw = true
			if p.Server != has.URL || p.Total != int64(len(body)) {
				t.Errorf("downloading %+v: want server %s, total %d from X-DEBUGINFOD-SIZE", p, has.URL, len(body))
			}
		}
	}
	if !saw {
		t.Error("no downloading progress")
	}
}

// When the server that answered first sends a wrong file, the others that
// were cancelled are asked again and the good file wins.
func TestFakeBadWinnerFallsBackToOtherServer(t *testing.T) {
	t.Parallel()
	good := testFile(t, "hello.debug")
	bad := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(testFile(t, "other.debug")) })
	slow := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Write(good)
	})
	c := newClient(t, debuginfod.Config{URLs: []string{bad.URL, slow.URL}})
	path, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	mustMatch(t, path, good)
}

// All servers are asked at once: a slow one does not delay a fast one.
func TestFakeServersAskedInParallel(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello.debug")
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	loserCancelled := make(chan struct{})
	slowAsked := make(chan struct{})
	slow := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		close(slowAsked)
		select {
		case <-hang:
		case <-r.Context().Done():
			close(loserCancelled)
		}
	})
	fast := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		<-slowAsked // both are asked at once: the slow one is waiting now
		w.Write(body)
	})
	c := newClient(t, debuginfod.Config{URLs: []string{slow.URL, fast.URL}})
	done := make(chan error, 1)
	go func() {
		_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a hanging first server held up the second")
	}
	select {
	case <-loserCancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the request to the slower server was not cancelled when the other won")
	}
}

func TestInvalidBuildIDsNeverReachAServer(t *testing.T) {
	t.Parallel()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { http.NotFound(w, r) })
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	for _, id := range []string{"", "abc", "zz", "../../etc/passwd", "ab/cd", strings.Repeat("ab", 65), "ab cd"} {
		_, err := c.Fetch(context.Background(), id, debuginfod.KindDebuginfo, nil)
		var ie *debuginfod.InvalidBuildIDError
		if !errors.As(err, &ie) {
			t.Errorf("build ID %q: %v, want an InvalidBuildIDError", id, err)
		}
	}
	for _, k := range []debuginfod.Kind{"section/.text", "source", debuginfod.SourceKind("relative/x.c")} {
		if _, err := c.Fetch(context.Background(), helloID, k, nil); err == nil {
			t.Errorf("kind %q accepted", k)
		}
	}
	if n := srv.n.Load(); n != 0 {
		t.Errorf("%d requests for invalid arguments", n)
	}
}

// A cached path removed under us (cache cleaning) is fetched again.
func TestRemovedCacheFileIsFetchedAgain(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello.debug")
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(body) })
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	path, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	again, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	if err != nil || again != path {
		t.Fatalf("after removal: %q, %v", again, err)
	}
	mustMatch(t, again, body)
	if n := srv.n.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// Cleaning follows the control files: files unused for max_unused_age_s go.
func TestCacheCleaning(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello.debug")
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { w.Write(body) })
	cacheDir := filepath.Join(t.TempDir(), "cache")
	stale := filepath.Join(cacheDir, otherID, "executable")
	keep := filepath.Join(cacheDir, "notes.txt")
	os.MkdirAll(filepath.Dir(stale), 0o700)
	os.WriteFile(stale, []byte("old"), 0o400)
	os.WriteFile(keep, []byte("not ours"), 0o600)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)
	os.Chtimes(filepath.Dir(stale), old, old)
	os.WriteFile(filepath.Join(cacheDir, "cache_clean_interval_s"), []byte("0\n"), 0o644)
	os.WriteFile(filepath.Join(cacheDir, "max_unused_age_s"), []byte("3600\n"), 0o644)

	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
	// (os.Stat, not c.Cached: a hit is a use, which would refresh it.)
	if _, err := os.Stat(stale); err != nil {
		t.Fatal("the stale file should be visible before cleaning")
	}
	if _, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("file unused for 2h with max_unused_age_s=3600 not cleaned: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(stale)); !os.IsNotExist(err) {
		t.Errorf("empty old build-ID directory not removed: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("cleaning removed a file that is not a cache entry: %v", err)
	}
	if p, ok := c.Cached(helloID, debuginfod.KindDebuginfo); !ok {
		t.Errorf("fresh file %s cleaned", p)
	}
}

// Downloading reports come at most about once per 64 KiB.
func TestProgressIsThrottled(t *testing.T) {
	t.Parallel()
	body := make([]byte, 1<<20)
	copy(body, testFile(t, "hello.debug"))
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		for i := 0; i < len(body); i += 1024 {
			w.Write(body[i : i+1024])
		}
	})
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	var rec recorder
	c.Fetch(context.Background(), helloID, debuginfod.SourceKind("/src/big.c"), rec.add)
	n := 0
	var last int64
	for _, p := range rec.ps {
		if p.Phase == debuginfod.PhaseDownloading {
			n++
			if p.Bytes < last {
				t.Errorf("bytes went back from %d to %d", last, p.Bytes)
			}
			last = p.Bytes
		}
	}
	// A busy callback may see fewer (newer counts replace queued ones).
	if n < 1 || n > (1<<20)/(64<<10)+3 {
		t.Errorf("%d downloading reports for 1 MiB, want between 1 and %d", n, (1<<20)/(64<<10)+3)
	}
	if last != 1<<20 {
		t.Errorf("last downloading report at %d bytes, want %d", last, 1<<20)
	}
}

func TestHeadersFileAndUserAgent(t *testing.T) {
	t.Parallel()
	hf := filepath.Join(t.TempDir(), "headers")
	os.WriteFile(hf, []byte("Authorization: Bearer s3cret\n\nX-Tenant: team-a\n"), 0o600)
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { http.NotFound(w, r) })
	cfg, err := debuginfod.Environment{EtcDir: t.TempDir(), Lookup: mapEnv(map[string]string{
		"DEBUGINFOD_URLS": srv.URL, "DEBUGINFOD_HEADERS_FILE": hf, "DEBUGINFOD_CACHE_PATH": t.TempDir(),
	})}.Config()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cfg)
	c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	h := srv.headers[0]
	if h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Tenant") != "team-a" {
		t.Errorf("headers file not sent: %v", h)
	}
	if !strings.HasPrefix(h.Get("User-Agent"), "viewer/") {
		t.Errorf("User-Agent %q does not name viewer", h.Get("User-Agent"))
	}
	os.WriteFile(hf, []byte("not a header line\n"), 0o600)
	if _, err := debuginfod.ReadHeadersFile(hf); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad headers file: %v, want an error naming line 1", err)
	}
}

// A context cancelled before the call asks no server and writes nothing.
func TestCancelledContextAsksNoServer(t *testing.T) {
	t.Parallel()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { http.NotFound(w, r) })
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var rec recorder
	_, err := c.Fetch(ctx, helloID, debuginfod.KindDebuginfo, rec.add)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch: %v, want context.Canceled", err)
	}
	if p := rec.last(); p.Phase != debuginfod.PhaseError || !errors.Is(p.Err, context.Canceled) {
		t.Errorf("last progress %+v, want an error phase carrying the cancellation", p)
	}
	if srv.n.Load() != 0 {
		t.Errorf("%d requests", srv.n.Load())
	}
	assertNothingCached(t, c, helloID)
}

// Callers that come and go while one download runs: those that cancel get
// their context's error, the rest the file, and the download is never
// restarted while someone waits for it.
func TestCallersJoiningAndLeaving(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello.debug")
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		for i := 0; i < len(body); i += 512 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			w.Write(body[i:min(i+512, len(body))])
			w.(http.Flusher).Flush()
		}
	})
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	// One caller stays for the whole download, so it must happen once.
	stay := make(chan error, 1)
	go func() {
		_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
		stay <- err
	}()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%8)*7*time.Millisecond)
			defer cancel()
			path, err := c.Fetch(ctx, helloID, debuginfod.KindDebuginfo, nil)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("caller %d: %v", i, err)
			}
			if err == nil && path == "" {
				t.Errorf("caller %d: no path", i)
			}
		})
	}
	wg.Wait()
	if err := <-stay; err != nil {
		t.Fatalf("the caller that stayed: %v", err)
	}
	if n := srv.n.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// Misses are remembered in memory for cache_miss_s, read from the cache's
// control file.
func TestMissesRememberedForCacheMissSeconds(t *testing.T) {
	t.Parallel()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { http.NotFound(w, r) })
	cacheDir := filepath.Join(t.TempDir(), "cache")
	os.MkdirAll(cacheDir, 0o700)
	os.WriteFile(filepath.Join(cacheDir, "cache_miss_s"), []byte("30\n"), 0o644)
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
	ctx := context.Background()
	if _, err := c.Fetch(ctx, absentID, debuginfod.KindExecutable, nil); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatal(err)
	}
	neg := filepath.Join(cacheDir, absentID, "executable")
	os.Remove(neg) // the memo still knows
	if _, err := c.Fetch(ctx, absentID, debuginfod.KindExecutable, nil); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatal(err)
	}
	if n := srv.n.Load(); n != 1 {
		t.Fatalf("memo of the miss not used: %d requests", n)
	}
	// On disk, an entry 40 s old is stale with cache_miss_s=30.
	c2 := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
	os.WriteFile(neg, nil, 0o400)
	old := time.Now().Add(-40 * time.Second)
	os.Chtimes(neg, old, old)
	c2.Fetch(ctx, absentID, debuginfod.KindExecutable, nil)
	if n := srv.n.Load(); n != 2 {
		t.Fatalf("stale negative entry honoured: %d requests, want 2", n)
	}
}

// ForgetMiss (a file for the build ID arrived) drops the miss from memory
// and the cache, so the next Fetch asks the server again at once.
func TestForgetMissAsksAgain(t *testing.T) {
	t.Parallel()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { http.NotFound(w, r) })
	cacheDir := filepath.Join(t.TempDir(), "cache")
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
	ctx := context.Background()
	for range 2 {
		if _, err := c.Fetch(ctx, absentID, debuginfod.KindDebuginfo, nil); !errors.Is(err, debuginfod.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if n := srv.n.Load(); n != 1 {
		t.Fatalf("%d requests before ForgetMiss, want 1 (the miss remembered)", n)
	}
	neg := filepath.Join(cacheDir, absentID, "debuginfo")
	if _, err := os.Stat(neg); err != nil {
		t.Fatalf("no negative entry on disk: %v", err)
	}
	c.ForgetMiss(strings.ToUpper(absentID))
	if _, err := os.Stat(neg); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("negative entry still on disk after ForgetMiss: %v", err)
	}
	c.Fetch(ctx, absentID, debuginfod.KindDebuginfo, nil)
	if n := srv.n.Load(); n != 2 {
		t.Errorf("%d requests after ForgetMiss, want 2", n)
	}
}

// file:/// URLs read a local tree laid out like a server, as elfutils allows.
func TestFileURLServer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "buildid", helloID), 0o755)
	os.WriteFile(filepath.Join(root, "buildid", helloID, "debuginfo"), testFile(t, "hello.debug"), 0o644)
	c := newClient(t, debuginfod.Config{URLs: []string{"file://" + root}})
	path, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustMatch(t, path, testFile(t, "hello.debug"))
	if _, err := c.Fetch(context.Background(), otherID, debuginfod.KindDebuginfo, nil); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Errorf("absent file under file://: %v, want ErrNotFound", err)
	}
}

// One caller's stuck progress callback does not hold up the download
// another caller shares, and it still gets its reports in order, the
// terminal one last.
func TestSlowCallbackDoesNotStallSharedDownload(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello.debug")
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		time.Sleep(20 * time.Millisecond) // so both callers join
		w.Write(body)
	})
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	release := make(chan struct{})
	var rec recorder
	slowDone := make(chan error, 1)
	go func() {
		_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, func(p debuginfod.Progress) {
			rec.add(p)
			if p.Phase == debuginfod.PhaseConnecting {
				<-release
			}
		})
		slowDone <- err
	}()
	poll.Until(t, 5*time.Second, "the slow caller's first report", func() bool { return len(rec.phases()) > 0 })
	path, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	if err != nil {
		t.Fatalf("the other caller: %v", err)
	}
	mustMatch(t, path, body)
	close(release)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	got := rec.phases()
	if got[0] != debuginfod.PhaseConnecting || got[len(got)-1] != debuginfod.PhaseDone {
		t.Errorf("slow caller's phases %s, want connecting first and done last", phaseList(got))
	}
	if n := srv.n.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// A server that cannot be reached is skipped for a while after three
// failures in a row, and its failures never write a negative entry.
func TestUnreachableServerIsSkippedForAWhile(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close() // connection refused from now on
	c := newClient(t, debuginfod.Config{URLs: []string{url}, RetryLimit: -1})
	for i := range 3 {
		_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
		var ue *debuginfod.UnreachableError
		if err == nil || errors.Is(err, debuginfod.ErrNotFound) || errors.As(err, &ue) {
			t.Fatalf("fetch %d: %v; want a network error", i+1, err)
		}
	}
	_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	var ue *debuginfod.UnreachableError
	if !errors.As(err, &ue) || ue.Failures != 3 || !strings.Contains(err.Error(), url) {
		t.Fatalf("fourth fetch: %v; want the server skipped as unreachable", err)
	}
	assertNothingCached(t, c, helloID)
}

// A server cannot redirect us to a local file, nor to a host the server
// list does not name (all the fakes are on 127.0.0.1: host and port must
// match); a redirect to another server of the list is followed (as
// elfutils does) and its file verified all the same.
func TestRedirects(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret.c")
	os.WriteFile(secret, []byte("int password = 1234;\n"), 0o600)
	toFile := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Redirect(w, r, "file://"+secret, http.StatusFound)
	})
	c := newClient(t, debuginfod.Config{URLs: []string{toFile.URL}})
	if _, err := c.Fetch(context.Background(), helloID, debuginfod.SourceKind("/src/a.c"), nil); err == nil || !strings.Contains(err.Error(), "refused a redirect") {
		t.Fatalf("redirect to file://: %v, want it refused", err)
	}
	assertNothingCached(t, c, helloID)

	var redirected atomic.Int64 // requests that came through the redirect
	wrong := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		if r.Header.Get("Referer") != "" {
			redirected.Add(1)
		}
		w.Write(testFile(t, "other.debug"))
	})
	away := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Redirect(w, r, wrong.URL+r.URL.Path, http.StatusFound)
	})
	c = newClient(t, debuginfod.Config{URLs: []string{away.URL}})
	_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	var re *debuginfod.RedirectError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "not in the server list") || wrong.n.Load() != 0 {
		t.Fatalf("redirect to a server outside the list: %v (%d requests to it), want it refused", err, wrong.n.Load())
	}
	c = newClient(t, debuginfod.Config{URLs: []string{away.URL, wrong.URL}})
	_, err = c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
	var ve *debuginfod.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), away.URL) {
		t.Fatalf("redirect to a server with the wrong file: %v, want a VerifyError naming %s", err, away.URL)
	}
	// Both servers are asked at once; when the target answers first, the
	// redirecting server's turn comes again, so its redirect may be
	// followed once or twice.
	if redirected.Load() == 0 {
		t.Errorf("redirect not followed: %d requests to its target, none through the redirect", wrong.n.Load())
	}
	assertNothingCached(t, c, helloID)
}

// A gzip bomb is not inflated: we never ask for compression, so a gzip body
// is taken as it is and fails verification.
func TestGzipBodyIsNotInflated(t *testing.T) {
	t.Parallel()
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed) // as TestHostileServers' bomb
	zeros := make([]byte, 1<<20)
	for range 64 {
		zw.Write(zeros) // 64 MiB of zeros, about 80 KiB compressed
	}
	zw.Close()
	var sawAccept atomic.Value
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		sawAccept.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz.Bytes())
	})
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	var rec recorder
	_, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, rec.add)
	var ve *debuginfod.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("gzip body: %v, want a VerifyError", err)
	}
	if a, _ := sawAccept.Load().(string); a != "" {
		t.Errorf("sent Accept-Encoding %q, want none", a)
	}
	for _, p := range rec.ps {
		if p.Bytes > int64(gz.Len()) {
			t.Fatalf("received %d bytes from a %d-byte gzip body: it was inflated", p.Bytes, gz.Len())
		}
	}
	assertNothingCached(t, c, helloID)
}
