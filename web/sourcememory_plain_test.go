package web

import (
	"bytes"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"viewer/web/heappeak"
	"viewer/web/ingest"
)

// TestSourceArchiveWindowBomb: four 2 KB zstd archives at once, each
// declaring a 512 MiB window, which the decoder allocates at the first
// block, took 2 GiB of heap; on a server with the default limits each is
// charged its window from --ingest-memory (1 GiB), so they are unpacked
// one or two at a time or refused with 503 naming the flag, and the heap
// stays within --memory-limit's default (--ingest-memory + 256 MiB).
func TestSourceArchiveWindowBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 512 MiB windows")
	}
	if raceDetector {
		t.Skip("heavy: skipped under -race (make test runs it without)")
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(ingest.DefaultMemory + 256<<20))
	_, base, bid := sourceServer(t, Limits{})
	bomb := zstdTar(t, "viewer-testdata/debuginfo/bomb.c", "int bomb;\n", 29)
	stop := heappeak.Watch()
	answers := make([]putAnswer, 4)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			answers[i] = putSources(t, base+"/buildid/"+bid+"/sources?name=bomb.tar.zst", bytes.NewReader(bomb))
		})
	}
	wg.Wait()
	peak := stop()
	t.Logf("4 × %d-byte archives declaring 512 MiB windows: heap peak %d MiB", len(bomb), peak>>20)
	for i, a := range answers {
		if a.code != http.StatusCreated && (a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "--ingest-memory")) {
			t.Errorf("archive %d: %d %q; want 201, or 503 naming --ingest-memory", i, a.code, a.body)
		}
	}
	if limit := uint64(ingest.DefaultMemory + 256<<20); peak > limit {
		t.Errorf("heap peak %d MiB; want at most --ingest-memory + 256 MiB (%d MiB)", peak>>20, limit>>20)
	}
	if a := putSources(t, base+"/buildid/"+bid+"/sources?name=good.tar.zst", bytes.NewReader(zstdTar(t, "viewer-testdata/debuginfo/good.c", "int good;\n", 20))); a.code != http.StatusCreated {
		t.Errorf("an honest archive after them: %d %s", a.code, a.body)
	}
}
