package debuginfod_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
	"viewer/testdata/poll"
)

// The cache as elfutils keeps it while a server runs: cache_miss_s read at
// each lookup, cleaning on a timer, and hits counted as uses.

// TestCacheMissReadAtEachLookup lowers cache_miss_s on disk while clients
// run: a miss recorded under 600 s expires by the new 1 s at the next
// lookup, both in the client that recorded it (its memo) and in one that
// found the entry on disk.
func TestCacheMissReadAtEachLookup(t *testing.T) {
	t.Parallel()
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { http.NotFound(w, r) })
	cacheDir := filepath.Join(t.TempDir(), "cache")
	os.MkdirAll(cacheDir, 0o700)
	missFile := filepath.Join(cacheDir, "cache_miss_s")
	os.WriteFile(missFile, []byte("600\n"), 0o644)
	ctx := context.Background()
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
	c2 := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
	fetch := func(c *debuginfod.Client) {
		t.Helper()
		if _, err := c.Fetch(ctx, absentID, debuginfod.KindExecutable, nil); !errors.Is(err, debuginfod.ErrNotFound) {
			t.Fatalf("fetch of an absent file: %v, want ErrNotFound", err)
		}
	}
	fetch(c)
	missed := time.Now()
	fetch(c)  // the memo
	fetch(c2) // the entry on disk, now in c2's memo too
	if n := srv.n.Load(); n != 1 {
		t.Fatalf("%d requests with cache_miss_s=600; want the miss remembered after 1", n)
	}
	os.WriteFile(missFile, []byte("1\n"), 0o644)
	fetch(c)
	fetch(c2)
	if n := srv.n.Load(); n != 1 && time.Since(missed) < 900*time.Millisecond {
		t.Fatalf("%d requests %v after the miss with cache_miss_s=1; want it still remembered", n, time.Since(missed))
	}
	time.Sleep(time.Until(missed.Add(1100 * time.Millisecond)))
	fetch(c)
	if n := srv.n.Load(); n != 2 {
		t.Errorf("%d requests after lowering cache_miss_s to 1 s and waiting past it; want the memo's miss expired and the server asked (2)", n)
	}
	// c asked again and recorded a new miss on disk; c2's memo still has
	// the first one, which the new value has expired.
	os.Remove(filepath.Join(cacheDir, absentID, "executable"))
	fetch(c2)
	if n := srv.n.Load(); n != 3 {
		t.Errorf("%d requests; want c2's remembered miss expired by the lowered cache_miss_s too (3)", n)
	}
}

func atimeOf(t *testing.T, path string) time.Time {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	a := st.Sys().(*syscall.Stat_t).Atim
	return time.Unix(a.Sec, a.Nsec)
}

// TestCacheHitIsAUse reads a cache file written two hours ago, as a server
// reading it every minute would: each hit, from disk or from the memo, sets
// its access time to now, so cleaning with max_unused_age_s=3600 keeps it
// and removes an identical file nobody read.
func TestCacheHitIsAUse(t *testing.T) {
	t.Parallel()
	body := testFile(t, "hello.debug")
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int64) { http.NotFound(w, r) })
	cacheDir := filepath.Join(t.TempDir(), "cache")
	used := filepath.Join(cacheDir, helloID, "debuginfo")
	unused := filepath.Join(cacheDir, otherID, "debuginfo")
	twoHours := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{used, unused} {
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, body, 0o400)
		os.Chtimes(p, twoHours, twoHours)
		os.Chtimes(filepath.Dir(p), twoHours, twoHours)
	}
	os.WriteFile(filepath.Join(cacheDir, "max_unused_age_s"), []byte("3600\n"), 0o644)
	os.WriteFile(filepath.Join(cacheDir, "cache_clean_interval_s"), []byte("86400\n"), 0o644)
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})

	for i := range 3 { // the first from disk, the others from the memo
		start := time.Now()
		path, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil)
		if err != nil || path != used {
			t.Fatalf("hit %d: %q, %v", i, path, err)
		}
		if a := atimeOf(t, used); a.Before(start.Add(-time.Second)) {
			t.Errorf("hit %d left the access time at %v; want it set to now (%v)", i, a, start)
		}
		st, _ := os.Stat(used)
		if !st.ModTime().Equal(twoHours) {
			t.Errorf("hit %d changed the mtime to %v; want it kept (%v)", i, st.ModTime(), twoHours)
		}
		// The next read comes a minute later: its access time must move again.
		os.Chtimes(used, time.Now().Add(-time.Minute), time.Time{})
	}
	// A round of cleaning is due (the last was two days ago); a download
	// runs it.
	twoDays := time.Now().Add(-48 * time.Hour)
	os.Chtimes(filepath.Join(cacheDir, "cache_clean_interval_s"), twoDays, twoDays)
	if _, err := c.Fetch(context.Background(), absentID, debuginfod.KindDebuginfo, nil); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := os.Stat(unused); !os.IsNotExist(err) {
		t.Errorf("a file unused for 2h with max_unused_age_s=3600 was kept: %v", err)
	}
	if _, err := os.Stat(used); err != nil {
		t.Errorf("a file read a minute ago was cleaned: %v", err)
	}
	if n := srv.n.Load(); n != 1 {
		t.Errorf("%d requests; want only the absent file's", n)
	}
}

// TestCacheCleanedOnTimer gives a client no server, so it never downloads:
// its timer cleans the cache when cache_clean_interval_s is due, and stops
// at Close.
func TestCacheCleanedOnTimer(t *testing.T) {
	t.Parallel()
	cacheDir := filepath.Join(t.TempDir(), "cache")
	stale := filepath.Join(cacheDir, otherID, "executable")
	fresh := filepath.Join(cacheDir, helloID, "executable")
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{stale, fresh} {
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte("x"), 0o400)
	}
	os.Chtimes(stale, old, old)
	os.WriteFile(filepath.Join(cacheDir, "max_unused_age_s"), []byte("3600\n"), 0o644)
	os.WriteFile(filepath.Join(cacheDir, "cache_clean_interval_s"), []byte("1\n"), 0o644)
	c := newClient(t, debuginfod.Config{CacheDir: cacheDir})
	poll.Wait(10*time.Second, func() bool { _, err := os.Stat(stale); return os.IsNotExist(err) })
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("a file unused for 2h was not cleaned by the timer within 10 s (cache_clean_interval_s=1): %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the timer cleaned a fresh file: %v", err)
	}
	c.Close()
	os.WriteFile(stale, []byte("x"), 0o400)
	os.Chtimes(stale, old, old)
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("cleaning ran after Close: %v", err)
	}
}

// TestCacheTimerEndsWithContext: a client given a Context stops cleaning
// when it ends, as at Close.
func TestCacheTimerEndsWithContext(t *testing.T) {
	t.Parallel()
	cacheDir := filepath.Join(t.TempDir(), "cache")
	stale := filepath.Join(cacheDir, otherID, "executable")
	os.MkdirAll(filepath.Dir(stale), 0o700)
	os.WriteFile(filepath.Join(cacheDir, "max_unused_age_s"), []byte("3600\n"), 0o644)
	os.WriteFile(filepath.Join(cacheDir, "cache_clean_interval_s"), []byte("1\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	newClient(t, debuginfod.Config{CacheDir: cacheDir, Context: ctx})
	cancel()
	old := time.Now().Add(-2 * time.Hour)
	os.WriteFile(stale, []byte("x"), 0o400)
	os.Chtimes(stale, old, old)
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("cleaning ran after the client's context ended: %v", err)
	}
}
