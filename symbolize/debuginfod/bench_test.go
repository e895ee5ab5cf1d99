package debuginfod_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
)

// BenchmarkCachedHit is a fetch answered in process: from the memo, and
// from the disk cache by a client that has not seen the file yet.
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
		clients := make([]*debuginfod.Client, b.N)
		for i := range clients {
			clients[i] = newClient(b, debuginfod.Config{CacheDir: cacheDir})
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := clients[i].Fetch(ctx, helloID, debuginfod.KindDebuginfo, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDownload fetches a 64 MiB ELF file from the real debuginfod (in
// its network namespace, through the test proxy) into a fresh cache, side by
// side with curl fetching the same URL. Each iteration of viewer includes
// writing, verifying the build ID and renaming into the cache.
func BenchmarkDownload(b *testing.B) {
	curl := debuginfodtest.NeedTool(b, "curl", "curl")
	dir := b.TempDir()
	_, id := debuginfodtest.BuildELF(b, dir, "big", 64<<20)
	srv := debuginfodtest.Start(b, dir)
	u := srv.URL + "/buildid/" + id + "/executable"
	work := b.TempDir()

	b.Run("viewer", func(b *testing.B) {
		b.SetBytes(64 << 20)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			cacheDir := filepath.Join(work, "cache")
			os.RemoveAll(cacheDir)
			c := newClient(b, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
			b.StartTimer()
			if _, err := c.Fetch(context.Background(), id, debuginfod.KindExecutable, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		os.RemoveAll(filepath.Join(work, "cache"))
	})
	for _, out := range []string{"/dev/null", filepath.Join(work, "curl.out")} {
		name := "curl-devnull"
		if out != "/dev/null" {
			name = "curl-file"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(64 << 20)
			for i := 0; i < b.N; i++ {
				if out, err := exec.Command(curl, "-sSf", "-o", out, u).CombinedOutput(); err != nil {
					b.Fatalf("curl: %v\n%s", err, out)
				}
			}
			os.Remove(filepath.Join(work, "curl.out"))
		})
	}
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
