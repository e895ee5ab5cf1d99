package web_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"viewer/web/webtest"
)

// TestUploadProgressStream follows an upload of a perf.data by its key:
// the stream, opened before the upload, gives the bytes received, then
// each phase of the conversion to its total, then the end; a key that is
// not one is refused, and an upload that fails ends its stream with the
// error it answered.
func TestUploadProgressStream(t *testing.T) {
	base := webtest.StartServer(t)
	data, err := os.ReadFile("../testdata/perf/dwarf.data")
	if err != nil {
		t.Fatal(err)
	}
	follow := func(key string, body []byte) ([]map[string]any, int) {
		return followUpload(t, http.DefaultClient, base, key, body)
	}
	evs, code := follow("0123456789abcdef0123456789abcdef", data)
	if code != http.StatusCreated {
		t.Fatalf("upload answered %d", code)
	}
	last := map[string]map[string]any{}
	var order []string
	for _, ev := range evs {
		p := ev["phase"].(string)
		if _, ok := last[p]; !ok {
			order = append(order, p)
		}
		last[p] = ev
	}
	if got, want := strings.Join(order, ","), "receiving,converting,reading records,aggregating stacks,done"; got != want {
		t.Errorf("phases %s, want %s (events %v)", got, want, evs)
	}
	if r := last["receiving"]; r == nil || r["done"] != float64(len(data)) || r["total"] != float64(len(data)) {
		t.Errorf("receiving ended at %v; want %d of %d bytes", r, len(data), len(data))
	}
	for _, p := range []string{"reading records", "aggregating stacks"} {
		if e := last[p]; e == nil || e["done"] != e["total"] || e["total"] == float64(0) {
			t.Errorf("%s ended at %v; want its total", p, e)
		}
	}

	evs, code = follow("fedcba9876543210fedcba9876543210", []byte("not a profile"))
	end := evs[len(evs)-1]
	if code != http.StatusUnprocessableEntity && code != http.StatusBadRequest || end["phase"] != "failed" || !strings.Contains(end["error"].(string), "not a recognised profile") {
		t.Errorf("a bad upload (HTTP %d) ended its stream with %v", code, end)
	}

	resp, err := http.Get(base + "/api/uploads/short/progress")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed key: %s, want 400", resp.Status)
	}
}

// followUpload opens the progress stream of key, then uploads body naming
// it, both from client c, and returns the stream's events to the end and
// the upload's status.
func followUpload(t *testing.T, c *http.Client, base, key string, body []byte) ([]map[string]any, int) {
	t.Helper()
	resp, err := c.Get(base + "/api/uploads/" + key + "/progress")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("progress stream: %s, %q", resp.Status, ct)
	}
	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+"/api/profiles", bytes.NewReader(body))
		req.Header.Set("X-Upload-Progress", key)
		r, err := c.Do(req)
		if err != nil {
			status <- 0
			return
		}
		r.Body.Close()
		status <- r.StatusCode
	}()
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		evs = append(evs, ev)
		if ev["finished"] == true {
			break
		}
	}
	select {
	case code := <-status:
		return evs, code
	case <-time.After(20 * time.Second):
		t.Fatal("the upload did not answer")
	}
	return nil, 0
}

// TestUploadProgressKeysNotExhausted is issue 33's lock-out: one client
// asks for the progress of 4,200 made-up keys, closing each stream at
// once, and then holds streams open on more. Keys asked for and left are
// forgotten at once, and one client address holds at most its share of
// streams (then 429 naming the limit), so an honest upload from another
// address is still followed to its end (on the code before, the made-up
// keys stayed 10 minutes and filled all 4,096).
func TestUploadProgressKeysNotExhausted(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 4,200 progress streams (3 s): skipped with -short")
	}
	base := webtest.StartServer(t)
	attacker := clientFrom("127.0.0.2")
	attacker.Transport.(*http.Transport).MaxIdleConnsPerHost = 8
	var wg sync.WaitGroup
	var opened atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 4200; i += 8 {
				resp, err := attacker.Get(fmt.Sprintf("%s/api/uploads/made-up-key-%08d/progress", base, i))
				if err != nil {
					t.Error(err)
					return
				}
				if resp.StatusCode == http.StatusOK {
					opened.Add(1)
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if opened.Load() == 0 {
		t.Fatal("no made-up key was followed at all")
	}
	// Streams held open: the client's share, then 429.
	var refused string
	for i := range 40 {
		resp, err := attacker.Get(fmt.Sprintf("%s/api/uploads/held-key-%08d/progress", base, i))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			refused = fmt.Sprintf("%d %s", resp.StatusCode, b)
			break
		}
		t.Cleanup(func() { resp.Body.Close() })
	}
	if !strings.HasPrefix(refused, "429") || !strings.Contains(refused, "the most one client may") {
		t.Errorf("40 progress streams held by one client: refusal %q, want 429 naming the per-client limit", refused)
	}
	data, err := os.ReadFile("../testdata/perf/dwarf.data")
	if err != nil {
		t.Fatal(err)
	}
	evs, code := followUpload(t, clientFrom("127.0.0.1"), base, "0123456789abcdef0123456789abcdee", data)
	if code != http.StatusCreated || len(evs) < 2 || evs[len(evs)-1]["phase"] != "done" {
		t.Errorf("an honest upload during the attack: HTTP %d, progress %v; want 201 followed to its end", code, evs)
	}
}
