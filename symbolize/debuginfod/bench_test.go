package debuginfod_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
)

// BenchmarkCachedHit is a fetch answered in process: from the memo (with the
// check that the file still exists), and from the disk cache.
func BenchmarkCachedHit(b *testing.B) {
	cacheDir := b.TempDir()
	dir := filepath.Join(cacheDir, helloID)
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "debuginfo"), testFile(b, "hello.debug"), 0o400)
	ctx := context.Background()
	b.Run("memo", func(b *testing.B) {
		c := newClient(b, debuginfod.Config{CacheDir: cacheDir, URLs: []string{"http://127.0.0.1:9"}})
		for b.Loop() {
			if _, err := c.Fetch(ctx, helloID, debuginfod.KindDebuginfo, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("disk", func(b *testing.B) {
		// The lookup a client that has not seen the file makes: Cached is
		// Fetch's path on a memo miss.
		c := newClient(b, debuginfod.Config{CacheDir: cacheDir})
		for b.Loop() {
			if _, ok := c.Cached(helloID, debuginfod.KindDebuginfo); !ok {
				b.Fatal("not cached")
			}
		}
	})
}

// BenchmarkDownload fetches a 64 MiB ELF file from the real debuginfod (in
// its network namespace, through the test proxy) into a fresh cache, and, in
// the same iteration, fetches the same URL with curl -o /dev/null and curl
// -o FILE. Interleaving keeps the comparison fair on a shared, busy machine.
// viewer's time includes writing, verifying the build ID and renaming into
// the cache. Reported: ms per fetch of each, and viewer/curl ratios.
func BenchmarkDownload(b *testing.B) {
	curl := debuginfodtest.NeedTool(b, "curl", "curl")
	dir := b.TempDir()
	_, id := debuginfodtest.BuildELF(b, dir, "big", 64<<20)
	srv := debuginfodtest.Start(b, dir)
	u := srv.URL + "/buildid/" + id + "/executable"
	work := b.TempDir()
	cacheDir := filepath.Join(work, "cache")
	curlFile := filepath.Join(work, "curl.out")

	var viewer, devnull, file time.Duration
	timeIt := func(d *time.Duration, f func()) {
		start := time.Now()
		f()
		*d += time.Since(start)
	}
	runCurl := func(out string) {
		if msg, err := exec.Command(curl, "-sSf", "-o", out, u).CombinedOutput(); err != nil {
			b.Fatalf("curl: %v\n%s", err, msg)
		}
	}
	b.SetBytes(64 << 20)
	for i := 0; i < b.N; i++ {
		os.RemoveAll(cacheDir)
		os.Remove(curlFile)
		c := newClient(b, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
		timeIt(&viewer, func() {
			if _, err := c.Fetch(context.Background(), id, debuginfod.KindExecutable, nil); err != nil {
				b.Fatal(err)
			}
		})
		timeIt(&devnull, func() { runCurl("/dev/null") })
		timeIt(&file, func() { runCurl(curlFile) })
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(ms(viewer), "viewer-ms/op")
	b.ReportMetric(ms(devnull), "curl-devnull-ms/op")
	b.ReportMetric(ms(file), "curl-file-ms/op")
	b.ReportMetric(float64(viewer)/float64(devnull), "viewer/curl-devnull")
	b.ReportMetric(float64(viewer)/float64(file), "viewer/curl-file")
	os.RemoveAll(cacheDir)
	os.Remove(curlFile)
}

// BenchmarkConcurrentFetches has 50 callers ask at once for one 4 MiB file
// that is not cached; upstream-requests/op must stay 1.
func BenchmarkConcurrentFetches(b *testing.B) {
	dir := b.TempDir()
	_, id := debuginfodtest.BuildELF(b, dir, "shared", 4<<20)
	srv := debuginfodtest.Start(b, dir)
	work := b.TempDir()
	before := srv.Requests(id)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cacheDir := filepath.Join(work, "cache")
		os.RemoveAll(cacheDir)
		c := newClient(b, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
		b.StartTimer()
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if _, err := c.Fetch(context.Background(), id, debuginfod.KindExecutable, nil); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(srv.Requests(id)-before)/float64(b.N), "upstream-requests/op")
}
