package debuginfod_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// the cache. Reported: the median ms per fetch of each and their ratios.
func BenchmarkDownload(b *testing.B) {
	curl := debuginfodtest.NeedTool(b, "curl", "curl")
	dir := b.TempDir()
	_, id := debuginfodtest.BuildELF(b, dir, "big", 64<<20)
	srv := debuginfodtest.Start(b, dir)
	u := srv.URL + "/buildid/" + id + "/executable"
	work := b.TempDir()
	cacheDir := filepath.Join(work, "cache")
	curlFile := filepath.Join(work, "curl.out")

	var viewer, devnull, file []time.Duration
	timeIt := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	runCurl := func(out string) {
		if msg, err := exec.Command(curl, "-sSf", "-o", out, u).CombinedOutput(); err != nil {
			b.Fatalf("curl: %v\n%s", err, msg)
		}
	}
	fetch := func() {
		c := newClient(b, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
		if _, err := c.Fetch(context.Background(), id, debuginfod.KindExecutable, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(64 << 20)
	for i := 0; i < b.N; i++ {
		os.RemoveAll(cacheDir)
		os.Remove(curlFile)
		// Alternate who goes first, so neither always meets a warm or a
		// cold server.
		if i%2 == 0 {
			viewer = append(viewer, timeIt(fetch))
			devnull = append(devnull, timeIt(func() { runCurl("/dev/null") }))
		} else {
			devnull = append(devnull, timeIt(func() { runCurl("/dev/null") }))
			viewer = append(viewer, timeIt(fetch))
		}
		file = append(file, timeIt(func() { runCurl(curlFile) }))
	}
	b.ReportMetric(medianMS(viewer), "viewer-ms")
	b.ReportMetric(medianMS(devnull), "curl-devnull-ms")
	b.ReportMetric(medianMS(file), "curl-file-ms")
	b.ReportMetric(medianMS(viewer)/medianMS(devnull), "viewer/curl-devnull")
	b.ReportMetric(medianMS(viewer)/medianMS(file), "viewer/curl-file")
	os.RemoveAll(cacheDir)
	os.Remove(curlFile)
}

// medianMS is the median of ds in milliseconds: robust to the bursts of a
// machine shared with other work.
func medianMS(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
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
