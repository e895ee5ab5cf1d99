package main

// Tests that run the real viewer binary as a separate process: a kill -9
// during uploads, a full disk, and a load test measuring the server's memory.

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	webprofiles "viewer/web/profiles"
)

// TestFullDisk runs the server on a 3 MiB tmpfs (in its own mount
// namespace) and uploads until the disk is full: the upload that does not
// fit gets 507 and leaves no profile; earlier ones stay whole.
func TestFullDisk(t *testing.T) {
	for _, tool := range []string{"unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("TestFullDisk needs %s (%v): run make deps", tool, err)
		}
	}
	bin := buildViewer(t)
	data := t.TempDir()
	script := `mount -t tmpfs -o size=3m viewer-test "$1" && shift && exec "$@"`
	p := startViewer(t, nil, []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", data}, bin, "--data", data)
	profiles := newProfileSet(7, 15000) // about 600 KB
	stored := map[string][]byte{}
	var full bool
	for i := 0; i < 20 && !full; i++ {
		b := profiles.next(0)
		st, msg, _, err := postProfile(context.Background(), p.base, b)
		if err != nil {
			t.Fatal(err)
		}
		switch st {
		case http.StatusCreated:
			stored[msg] = b
		case http.StatusInsufficientStorage:
			full = true
			if !strings.Contains(msg, "disk is full") {
				t.Errorf("507 message %q does not say the disk is full", msg)
			}
			id := webprofiles.NewID(b)
			// The original either did not land, or landed whole (only its
			// meta.json did not fit).
			if st, body := fetch(t, p.base+"/p/"+id+"/profile.pb.gz"); st != 404 && (st != 200 || body != string(b)) {
				t.Errorf("after 507, the refused profile answers %d with %d bytes", st, len(body))
			}
		default:
			t.Fatalf("upload %d: status %d %q", i, st, msg)
		}
	}
	if !full || len(stored) == 0 {
		t.Fatalf("full=%v after %d stored uploads: want some stored, then a 507", full, len(stored))
	}
	for id, b := range stored {
		checkReadable(t, p.base, id, b)
	}
	t.Logf("3 MiB disk: %d uploads stored, then 507; stored ones intact", len(stored))
}

// TestKillDuringUploads kills the server with SIGKILL while uploads stream
// in, restarts it on the same data directory, and checks every acknowledged
// upload is there and whole, and that nothing half-written is served.
func TestKillDuringUploads(t *testing.T) {
	if testing.Short() {
		t.Skip("kills viewer processes mid-upload: make test runs it")
	}
	bin := buildViewer(t)
	data := t.TempDir()
	p := startViewer(t, nil, nil, bin, "--data", data)

	var mu sync.Mutex
	acked := map[string][]byte{}
	var inflight, started atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	profiles := newProfileSet(1, 500, 5000, 20000) // about 20 KB, 200 KB, 800 KB
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ctx.Err() == nil; i++ {
				b := profiles.next(i % 3)
				inflight.Add(1)
				started.Add(1)
				st, id, _, err := postProfile(ctx, p.base, b)
				inflight.Add(-1)
				if err == nil && st == http.StatusCreated {
					mu.Lock()
					acked[id] = b
					mu.Unlock()
				}
			}
		}()
	}
	// One upload sends half its body and stalls: it is mid-stream when the
	// server dies, and must not be visible after the restart.
	half := randomProfile(rand.New(rand.NewPCG(99, 99)), 20000)
	pr, pw := io.Pipe()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/api/profiles", pr)
		req.ContentLength = int64(len(half))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write(half[:len(half)/2])
	defer pw.Close()
	// Let uploads pile up, then kill the server while some are in flight.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 20 && inflight.Load() >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	inFlightAtKill := inflight.Load()
	p.kill()
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 20 {
		t.Fatalf("only %d uploads acknowledged before the kill", len(acked))
	}
	tempsAtKill := countTemps(t, data)

	q := startViewer(t, nil, nil, bin, "--data", data)
	for id, b := range acked {
		checkReadable(t, q.base, id, b)
	}
	if st, _ := fetch(t, q.base+"/p/"+webprofiles.NewID(half)); st != 404 {
		t.Errorf("the upload cut off mid-body answers %d after the restart, want 404", st)
	}
	// Whatever is on disk is either whole or not served.
	dirs, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	var whole, partial, temps int
	for _, d := range dirs {
		if !d.IsDir() || !webprofiles.ValidID(d.Name()) {
			continue
		}
		id := d.Name()
		ents, _ := os.ReadDir(filepath.Join(data, id))
		have := map[string]bool{}
		for _, e := range ents {
			have[e.Name()] = true
			if strings.HasPrefix(e.Name(), ".tmp-") {
				temps++
			}
		}
		st, _ := fetch(t, q.base+"/p/"+id)
		if have[webprofiles.KeyOriginal] {
			b, err := os.ReadFile(filepath.Join(data, id, webprofiles.KeyOriginal))
			if err != nil || webprofiles.NewID(b) != id {
				t.Errorf("%s/original is not the uploaded bytes (%d bytes, ID %s)", id, len(b), webprofiles.NewID(b))
			}
			if st != 200 {
				t.Errorf("stored profile %s: status %d", id, st)
			}
			whole++
			continue
		}
		partial++
		if have[webprofiles.KeyMeta] {
			t.Errorf("%s has meta.json without its original", id)
		}
		if st != 404 {
			t.Errorf("half-written profile %s is served with status %d, want 404", id, st)
		}
	}
	if after := countTemps(t, data); temps > 0 || after > 0 {
		temps = max(temps, after)
		t.Errorf("%d temp files of interrupted writes remain after the restart (%d at the kill); the store should sweep them when it opens", temps, tempsAtKill)
	}
	t.Logf("kill -9 with %d uploads in flight (and one stalled mid-body) (%d started): %d acknowledged, all readable after restart; %d profiles whole on disk, %d directories without an original; %d temp files of interrupted writes at the kill, %d after the restart",
		inFlightAtKill, started.Load(), len(acked), whole, partial, tempsAtKill, temps)
}

// TestLoad drives the server over loopback with 2,000 requests at
// concurrency 32, a quarter of them uploads of fresh profiles and the rest
// page views, with at most 4 uploads parsed at once and GOMEMLIMIT 192MiB.
// Only 503 (busy) may fail a request; every acknowledged upload must be
// readable; the server's peak RSS must stay under 320 MiB.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: 2,000 requests to a real server (about a minute): skipped with -short")
	}
	const (
		requests    = 2000
		concurrency = 32
		budget      = 320 << 20
	)
	bin := buildViewer(t)
	p := startViewer(t, []string{"GOMEMLIMIT=192MiB"}, nil, bin, "--data", t.TempDir(),
		"--max-upload", "4MiB", "--max-concurrent-uploads", "4", "--upload-wait", "2s")
	var mu sync.Mutex
	acked := map[string][]byte{}
	var ids []string
	profiles := newProfileSet(2, 200, 1000, 4000, 8000) // about 8 KB to 320 KB
	for range 8 {
		b := profiles.next(1)
		st, id, _, err := postProfile(context.Background(), p.base, b)
		if err != nil || st != 201 {
			t.Fatalf("seed upload: %d %v", st, err)
		}
		acked[id] = b
		ids = append(ids, id)
	}
	var next atomic.Int64
	var busy, uploads, views atomic.Int64
	var failures []string
	start := time.Now()
	// No wall-clock budget (a loaded machine is slower, not wrong): the
	// run stops only when no request has started for a minute, the sign of
	// a server that stopped answering.
	const stall = time.Minute
	var progress atomic.Int64
	progress.Store(start.UnixNano())
	var wg sync.WaitGroup
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for {
				i := next.Add(1)
				if i > requests || time.Since(time.Unix(0, progress.Load())) > stall {
					return
				}
				progress.Store(time.Now().UnixNano())
				if i%4 == 0 {
					b := profiles.next(rng.IntN(4))
					st, id, h, err := postProfile(context.Background(), p.base, b)
					uploads.Add(1)
					mu.Lock()
					switch {
					case err != nil:
						failures = append(failures, fmt.Sprintf("upload: %v", err))
					case st == 201:
						acked[id] = b
						ids = append(ids, id)
					case st == 503 && h.Get("Retry-After") != "":
						busy.Add(1)
					default:
						failures = append(failures, fmt.Sprintf("upload: status %d %q", st, id))
					}
					mu.Unlock()
					continue
				}
				mu.Lock()
				id := ids[rng.IntN(len(ids))]
				mu.Unlock()
				path := "/p/" + id + []string{"", "/flame.json", "/top", "/flame.svg", "/types", "/profile.pb.gz"}[rng.IntN(6)]
				resp, err := http.Get(p.base + path)
				views.Add(1)
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("GET %s: %v", path, err))
					mu.Unlock()
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("GET %s: %d", path, resp.StatusCode))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := next.Load(); n <= requests {
		t.Errorf("only %d of %d requests done in %v: the server answered none for %v", n-1, requests, elapsed, stall)
	}
	for i, f := range failures {
		if i == 20 {
			t.Errorf("… and %d more", len(failures)-20)
			break
		}
		t.Errorf("request failed: %s", f)
	}
	for id, b := range acked {
		checkReadable(t, p.base, id, b)
	}
	rss := p.peakRSS(t)
	if rss > budget {
		t.Errorf("server peak RSS %d MiB, over the %d MiB budget", rss>>20, budget>>20)
	}
	t.Logf("load: %d requests (%d uploads, %d views) at concurrency %d in %v: %d failed, %d busy (503), %d uploads acknowledged and readable; server peak RSS %d MiB",
		uploads.Load()+views.Load(), uploads.Load(), views.Load(), concurrency, elapsed.Round(time.Millisecond), len(failures), busy.Load(), len(acked), rss>>20)
}
