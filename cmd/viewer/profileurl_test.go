package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// pprofEndpoint is a real net/http/pprof server on 127.0.0.1 that keeps
// what it was asked and the last body it sent.
type pprofEndpoint struct {
	*httptest.Server
	mu      sync.Mutex
	queries []string
	sent    []byte
}

func startPprofEndpoint(t *testing.T) *pprofEndpoint {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	e := &pprofEndpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &teeWriter{ResponseWriter: w}
		mux.ServeHTTP(tw, r)
		e.mu.Lock()
		e.queries = append(e.queries, r.URL.Path+"?"+r.URL.RawQuery)
		e.sent = tw.buf.Bytes()
		e.mu.Unlock()
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *pprofEndpoint) last() (query string, sent []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queries[len(e.queries)-1], e.sent
}

// teeWriter keeps a copy of the body written.
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

// pprofTop is go tool pprof -top of a profile file, in bytes and without
// the header lines that name the file.
func pprofTop(t *testing.T, file, sampleIndex string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "pprof", "-top", "-nodecount=1000", "-unit=B", "-sample_index="+sampleIndex, file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top %s: %v\n%s", file, err, out)
	}
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") || strings.HasPrefix(l, "Duration:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// TestServeAndUploadURL fetches profiles from a real net/http/pprof
// endpoint, as go tool pprof does: viewer serve URL and viewer upload URL
// store the bytes the endpoint sent, --seconds replaces the URL's
// seconds=, and each way a fetch goes wrong is an error naming the URL
// and what was wrong.
func TestServeAndUploadURL(t *testing.T) {
	ep := startPprofEndpoint(t)
	// Some allocations, so that the heap profile has samples to compare.
	keep := make([][]byte, 0, 64)
	for i := range 64 {
		keep = append(keep, make([]byte, 64<<10+i))
	}
	runtime.GC()
	tmp := t.TempDir()
	base, out, _ := startServe(t, "--data", filepath.Join(tmp, "data"), "--seconds", "1", ep.URL+"/debug/pprof/profile?seconds=30")
	m := waitForOutput(t, out, regexp.MustCompile(`(http://\S+/p/[a-z2-7]{20})\t`+regexp.QuoteMeta(ep.URL)))
	if q, _ := ep.last(); q != "/debug/pprof/profile?seconds=1" {
		t.Errorf("the endpoint was asked %q, want seconds=1 from --seconds", q)
	}
	if code, body := fetch(t, m[1]+"/flame.json"); code != 200 {
		t.Fatalf("served CPU profile: %d %s", code, body)
	}

	// viewer upload of the heap profile: the stored profile is the one
	// the endpoint sent, as go tool pprof -top reads them both.
	var link bytes.Buffer
	if err := runUpload(context.Background(), []string{ep.URL + "/debug/pprof/heap", "--server", base}, stdio{out: &link, err: io.Discard}); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(keep)
	_, sent := ep.last()
	code, stored := fetch(t, strings.TrimSpace(link.String())+"/profile.pb.gz")
	if code != 200 {
		t.Fatalf("profile.pb.gz: %d", code)
	}
	sentFile, storedFile := filepath.Join(tmp, "sent.pb.gz"), filepath.Join(tmp, "stored.pb.gz")
	os.WriteFile(sentFile, sent, 0o644)
	os.WriteFile(storedFile, []byte(stored), 0o644)
	for _, si := range []string{"alloc_space", "inuse_space"} {
		want, got := pprofTop(t, sentFile, si), pprofTop(t, storedFile, si)
		if got != want {
			t.Errorf("go tool pprof -top -sample_index=%s of the stored profile:\n%s\nof the bytes the endpoint sent:\n%s", si, got, want)
		}
		if !strings.Contains(want, "% of ") {
			t.Errorf("go tool pprof -top printed no total:\n%s", want)
		}
	}

	// What goes wrong, each named with the URL.
	for _, c := range []struct {
		path, want string
		args       []string
	}{
		{"/debug/pprof/nosuch", `/debug/pprof/nosuch: the server answered 404 Not Found: Unknown profile`, nil},
		{"/debug/pprof/", `the server answered an HTML page, not a profile`, nil},
		{"/debug/pprof/cmdline", `bytes ` + regexp.QuoteMeta(ep.URL) + `/debug/pprof/cmdline answered: .*not a recognised profile`, nil},
		{"/debug/pprof/heap", `the answer is larger than 1KiB, the largest upload \(--max-upload\)`, []string{"--max-upload", "1KiB"}},
	} {
		var errOut syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- runServe(ctx, append([]string{"--addr", "127.0.0.1:0", "--data", filepath.Join(tmp, "data2"), ep.URL + c.path}, c.args...), stdio{out: io.Discard, err: &errOut})
		}()
		waitForOutput(t, &errOut, regexp.MustCompile(regexp.QuoteMeta(ep.URL+c.path)+`: .*`+c.want))
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if c.args == nil {
			err := runUpload(context.Background(), []string{ep.URL + c.path, "--server", base}, stdio{out: io.Discard, err: io.Discard})
			if err == nil || !regexp.MustCompile(c.want).MatchString(err.Error()) {
				t.Errorf("viewer upload %s: %v, want %s", c.path, err, c.want)
			}
		}
	}
	// Nothing listens: the error names the URL.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	err := runUpload(context.Background(), []string{dead.URL + "/debug/pprof/heap", "--server", base}, stdio{out: io.Discard, err: io.Discard})
	if err == nil || !strings.Contains(err.Error(), dead.URL+"/debug/pprof/heap") {
		t.Errorf("unreachable endpoint: %v", err)
	}
}

// TestProfileURL checks the URL adjustments go tool pprof makes: the
// default path, --seconds over the URL's seconds=, and the wait.
func TestProfileURL(t *testing.T) {
	for _, c := range []struct {
		raw     string
		seconds int
		want    string
		timeout time.Duration
	}{
		{"http://localhost:6060", 0, "http://localhost:6060/debug/pprof/profile", time.Minute},
		{"http://localhost:6060/debug/pprof/profile?seconds=30", 0, "http://localhost:6060/debug/pprof/profile?seconds=30", 45 * time.Second},
		{"http://localhost:6060/debug/pprof/profile?seconds=30", 5, "http://localhost:6060/debug/pprof/profile?seconds=5", 7500 * time.Millisecond},
		{"https://h:1/debug/pprof/heap", 10, "https://h:1/debug/pprof/heap?seconds=10", 15 * time.Second},
		{"http://h/debug/pprof/heap?gc=1", 0, "http://h/debug/pprof/heap?gc=1", time.Minute},
	} {
		u, timeout, err := profileURL(c.raw, c.seconds)
		if err != nil || u.String() != c.want || timeout != c.timeout {
			t.Errorf("profileURL(%q, %d) = %v, %v, %v; want %s, %v", c.raw, c.seconds, u, timeout, err, c.want, c.timeout)
		}
	}
	for _, raw := range []string{"http://", "http:///debug/pprof/heap"} {
		if _, _, err := profileURL(raw, 0); err == nil {
			t.Errorf("profileURL(%q) accepted it", raw)
		}
	}
	if isProfileURL("cpu.pb.gz") || isProfileURL("ftp://h/x") || !isProfileURL("HTTPS://h/x") {
		t.Error("isProfileURL")
	}
}
