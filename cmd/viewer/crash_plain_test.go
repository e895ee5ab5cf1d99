package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/testdata/poll"
)

// TestKillDuringSymbolization kills (-9) a real server mid-download: after
// a restart the download's temp file is gone from the debuginfod cache,
// the status shows the binary as recorded, and Retry resumes the run. The
// debuginfod server is a fake: a real one cannot be made to hold a
// download half-sent.
func TestKillDuringSymbolization(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the viewer binary (14 s): skipped with -short")
	}
	const bid = "0123456789abcdef0123456789abcdef01234567"
	var hold atomic.Bool
	hold.Store(true)
	release := make(chan struct{})
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hold.Load() {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", "10000000")
		w.Write(bytes.Repeat([]byte{0x7f}, 256<<10))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer fake.Close()
	defer close(release)

	bin := buildViewer(t)
	data, cache := t.TempDir(), t.TempDir()
	env := []string{"DEBUGINFOD_URLS=" + fake.URL, "DEBUGINFOD_CACHE_PATH=" + cache}
	first := startViewer(t, env, nil, bin, "--data", data)

	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/opt/app/libheld.so", BuildID: bid}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}, Mapping: []*profile.Mapping{m}}
	p.Location = []*profile.Location{{ID: 1, Mapping: m, Address: 0x401000}}
	p.Sample = []*profile.Sample{{Value: []int64{1}, Location: p.Location}}
	var b bytes.Buffer
	p.Write(&b)
	code, id, _, err := postProfile(context.Background(), first.base, b.Bytes())
	if err != nil || code != http.StatusCreated {
		t.Fatalf("upload: %d %s %v", code, id, err)
	}
	temps := func() []string {
		m, _ := filepath.Glob(filepath.Join(cache, bid, "debuginfo.*"))
		return m
	}
	if !poll.Wait(20*time.Second, func() bool { return len(temps()) > 0 }) {
		t.Fatalf("no download started into %s:\n%s", cache, first.out.String())
	}
	// The stored record catches up with the fetch (within a second).
	recorded := func() string {
		var text string
		filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "symbolize.json" && strings.Contains(p, id) {
				b, _ := os.ReadFile(p)
				text = string(b)
			}
			return nil
		})
		return text
	}
	if !poll.Wait(10*time.Second, func() bool { return strings.Contains(recorded(), `"fetching"`) }) {
		t.Fatalf("the stored record never showed the fetch: %s", recorded())
	}
	first.kill()
	left := temps()
	if len(left) == 0 {
		t.Fatalf("kill -9 left no temp file: the test no longer shows the leftover")
	}
	old := time.Now().Add(-2 * time.Hour) // older than the longest fetch
	for _, f := range left {
		os.Chtimes(f, old, old)
	}

	hold.Store(false)
	second := startViewer(t, env, nil, bin, "--data", data)
	if left := temps(); len(left) != 0 {
		t.Errorf("after the restart the dead download's temp files remain: %v", left)
	}
	status := func() (st struct {
		State    string
		Binaries []struct {
			BuildID string `json:"build_id"`
			State   string `json:"state"`
		} `json:"binaries"`
	}) {
		resp, err := http.Get(second.base + "/p/" + id + "/symbolization")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&st)
		return st
	}
	st := status()
	if st.State != "interrupted" || len(st.Binaries) != 1 || st.Binaries[0].BuildID != bid || st.Binaries[0].State != "fetching" {
		t.Fatalf("status after the restart: %+v, want the binary as recorded and the run interrupted", st)
	}
	req, _ := http.NewRequest(http.MethodPost, second.base+"/p/"+id+"/symbolize/retry", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusConflict {
		t.Fatalf("retry after the restart: %d", resp.StatusCode)
	}
	if !poll.Wait(30*time.Second, func() bool {
		st = status()
		return st.State == "done" && len(st.Binaries) == 1 && st.Binaries[0].State == string(symbolize.StateNotFound)
	}) {
		t.Fatalf("the retried run did not end with the binary in state %q: %+v", symbolize.StateNotFound, st)
	}
}
