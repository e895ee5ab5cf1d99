package web_test

// Issue 33's attacks on the symbolization APIs: one request naming 256
// unknown build IDs fanned out to 512 upstream debuginfod requests, from
// any web page (a CORS-simple POST); a million addresses took 480 MB
// outside --ingest-memory, and four at once 1.33 GB.

import (
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"viewer/web"
	"viewer/web/heappeak"
	"viewer/web/webtest"
)

// TestSymbolizeAPIMemory sends a million addresses to a server with
// --ingest-memory 256MiB: refused with 413 naming the flag; then four
// at once to one of 600 MiB: the heap stays within it and
// --memory-limit, each answered or refused naming the limit, and an
// honest client's uploads and pages are served meanwhile.
func TestSymbolizeAPIMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a million addresses")
	}
	body := randomBinaries(t, 1, 1_000_000, false)
	_, base := webtest.SymbolizingServerWith(t, nil, 1, web.Config{Limits: web.Limits{IngestMemory: 256 << 20}})
	code, b := symbolizeAPI(t, base, body)
	if code != 413 || !strings.Contains(string(b), "--ingest-memory") {
		t.Errorf("1M addresses within --ingest-memory 256MiB: %d %.300s; want 413 naming --ingest-memory", code, b)
	}

	const budget = 600 << 20
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(budget + 256<<20))
	_, base = webtest.SymbolizingServerWith(t, nil, 1, web.Config{Limits: web.Limits{IngestMemory: budget}})
	stop := heappeak.Watch()
	honest := honestClient(t, base)
	codes, msgs := make([]int, 4), make([]string, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			code, b := symbolizeAPI(t, base, body)
			codes[i], msgs[i] = code, string(b[:min(len(b), 300)])
		})
	}
	wg.Wait()
	honest()
	peak := stop()
	t.Logf("4 × 1M addresses at once: %v, peak heap %d MiB", codes, peak>>20)
	served := 0
	for i, c := range codes {
		switch {
		case c == 200:
			served++
		case c == 503 && (strings.Contains(msgs[i], "--ingest-memory") || strings.Contains(msgs[i], "--upload-wait")):
		default:
			t.Errorf("request %d: %d %s; want 200, or 503 naming the limit", i, c, msgs[i])
		}
	}
	if served == 0 {
		t.Errorf("none of 4 requests was answered")
	}
	if limit := uint64(budget + 256<<20); peak > limit {
		t.Errorf("peak heap %d MiB; want at most --ingest-memory + 256 MiB (%d MiB)", peak>>20, limit>>20)
	}
}
