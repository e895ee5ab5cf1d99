package web_test

// Issue 33's attacks on the symbolization APIs: one request naming 256
// unknown build IDs fanned out to 512 upstream debuginfod requests, from
// any web page (a CORS-simple POST); a million addresses took 480 MB
// outside --ingest-memory, and four at once 1.33 GB.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"viewer/web"
	"viewer/web/webtest"
)

// randomBinaries is an /api/symbolize body naming n random build IDs,
// each with addrs addresses; debuginfod false keeps it local.
func randomBinaries(t testing.TB, n, addrs int, debuginfod bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"debuginfod": %v, "binaries": [`, debuginfod)
	for i := range n {
		id := make([]byte, 20)
		rand.Read(id)
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"build_id": %q, "addresses": [`, hex.EncodeToString(id))
		for j := range addrs {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%#x"`, 0x1000+16*j)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}")
	return b.Bytes()
}

// symbolizeAPI posts body to /api/symbolize with the headers hdr (pairs)
// and returns the status and the body.
func symbolizeAPI(t testing.TB, base string, body []byte, hdr ...string) (int, []byte) {
	req, _ := http.NewRequest(http.MethodPost, base+"/api/symbolize", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestSymbolizeAPIFanOut sends requests naming 256 unknown build IDs to a
// server whose upstream debuginfod counts what it is asked: one request
// makes at most 64 upstream fetches and says why it made no more, one
// client at most 128 and then 2 a second; another site's page is refused
// before anything is fetched, and the Firefox Profiler keeps its CORS.
func TestSymbolizeAPIFanOut(t *testing.T) {
	var asked atomic.Int64
	up := webtest.LoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	up.Start()
	t.Cleanup(up.Close)
	_, base := webtest.SymbolizingServerWith(t, []string{up.URL}, 1, web.Config{})

	// Another site's page: refused, nothing fetched.
	code, b := symbolizeAPI(t, base, randomBinaries(t, 256, 1, true), "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	if code != 403 || !strings.Contains(string(b), "another site") || asked.Load() != 0 {
		t.Errorf("from another site's page: %d %.200s, %d upstream requests; want 403 and none", code, b, asked.Load())
	}

	start := time.Now()
	var quotaReasons int
	honest := honestClient(t, base)
	for i := range 4 {
		before := asked.Load()
		code, b := symbolizeAPI(t, base, randomBinaries(t, 256, 1, true))
		var res struct {
			Binaries []struct{ State, Reason string }
		}
		json.Unmarshal(b, &res)
		made := asked.Load() - before
		t.Logf("request %d: %d, %d upstream requests", i, code, made)
		if code != 200 || len(res.Binaries) != 256 {
			t.Fatalf("request %d: %d %.300s", i, code, b)
		}
		if made > 64 {
			t.Errorf("request %d of 256 unknown build IDs made %d upstream requests; want at most 64", i, made)
		}
		for _, r := range res.Binaries {
			if strings.Contains(r.Reason, "at most 64 per symbolization API request") || strings.Contains(r.Reason, "this client made its 128 debuginfod fetches") {
				quotaReasons++
			}
		}
	}
	honest()
	elapsed := time.Since(start)
	if bound := 128 + 2*int64(elapsed.Seconds()+1); asked.Load() > bound {
		t.Errorf("4 requests of one client made %d upstream requests in %v; want at most %d (128, then 2 a second)", asked.Load(), elapsed.Round(time.Millisecond), bound)
	}
	if quotaReasons == 0 {
		t.Errorf("no binary's reason names the fetch bound")
	}

	// The Firefox Profiler's origin may still call /symbolicate/v5.
	req, _ := http.NewRequest(http.MethodPost, base+"/symbolicate/v5", strings.NewReader(`{"memoryMap": [["libc.so.6", "0123456789ABCDEF0123456789ABCDEF0"]], "stacks": [[[0, 4096]]]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://profiler.firefox.com")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://profiler.firefox.com" {
		t.Errorf("/symbolicate/v5 from profiler.firefox.com: %d, CORS %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}
