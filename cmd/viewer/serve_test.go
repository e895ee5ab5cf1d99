package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/testdata/poll"
)

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// writeTestProfile writes a small gzipped CPU profile (main.main → main.hot).
func writeTestProfile(t *testing.T, dir string) string {
	t.Helper()
	fMain := &profile.Function{ID: 1, Name: "main.main"}
	fHot := &profile.Function{ID: 2, Name: "main.hot"}
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", HasFunctions: true}
	l1 := &profile.Location{ID: 1, Mapping: m, Address: 0x401000, Line: []profile.Line{{Function: fMain}}}
	l2 := &profile.Location{ID: 2, Mapping: m, Address: 0x402000, Line: []profile.Line{{Function: fHot}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{l2, l1}, Value: []int64{5e6}}},
		Mapping:    []*profile.Mapping{m}, Location: []*profile.Location{l1, l2}, Function: []*profile.Function{fMain, fHot},
	}
	name := filepath.Join(dir, "cpu.pb.gz")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return name
}

// startServe runs `viewer serve args...` until the test ends, and returns
// the base URL it printed and its output.
func startServe(t *testing.T, args ...string) (base string, out *syncBuffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), stdio{in: strings.NewReader(""), out: out, err: errOut})
	}()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			return errors.New("serve did not shut down within 15s")
		}
	}
	t.Cleanup(func() { stop() })
	re := regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)/`)
	var m []string
	if !poll.Wait(10*time.Second, func() bool {
		if m = re.FindStringSubmatch(out.String()); m != nil {
			return true
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\nstderr: %s", err, errOut.String())
		default:
		}
		return false
	}) {
		t.Fatalf("serve printed no URL; stdout %q stderr %q", out.String(), errOut.String())
	}
	return m[1], out, stop
}

// waitForOutput polls the output until re matches it, for 10 s, and returns
// the match.
func waitForOutput(t *testing.T, out *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	if !poll.Wait(10*time.Second, func() bool { m = re.FindStringSubmatch(out.String()); return m != nil }) {
		t.Fatalf("output %q never matched %v", out.String(), re)
	}
	return m
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeFilesAndRestart(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")
	file := writeTestProfile(t, tmp)
	bad := filepath.Join(tmp, "notes.txt")
	os.WriteFile(bad, []byte("not a profile"), 0o644)

	base, out, stop := startServe(t, "--data", data, file, bad)
	m := waitForOutput(t, out, regexp.MustCompile(`(http://\S+/p/([a-z2-7]{20}))\t`+regexp.QuoteMeta(file)))
	link := m[1]
	if !strings.HasPrefix(link, base) {
		t.Errorf("link %q is not under %q", link, base)
	}
	if code, body := fetch(t, link+"/flame.json"); code != 200 || !strings.Contains(body, `"main.hot"`) {
		t.Fatalf("flame.json: %d %s", code, body)
	}
	if code, _ := fetch(t, link); code != 200 {
		t.Fatalf("page: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatalf("graceful shutdown returned %v", err)
	}
	if _, err := http.Get(link); err == nil {
		t.Fatal("server still answers after shutdown")
	}

	// A restart on the same directory serves the link without the file.
	base2, _, stop2 := startServe(t, "--data", data)
	defer stop2()
	if code, body := fetch(t, base2+"/p/"+m[2]+"/flame.json"); code != 200 || !strings.Contains(body, `"main.hot"`) {
		t.Fatalf("after restart: %d %s", code, body)
	}
}

func TestServeReportsBadFile(t *testing.T) {
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "notes.txt")
	os.WriteFile(bad, []byte("not a profile"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	errOut := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--addr", "127.0.0.1:0", "--data", tmp, bad, filepath.Join(tmp, "missing.pb.gz")}, stdio{out: io.Discard, err: errOut})
	}()
	waitForOutput(t, errOut, regexp.MustCompile(`missing.pb.gz: .*no such file`))
	waitForOutput(t, errOut, regexp.MustCompile(`notes.txt: not a recognised profile`))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestServeUsage(t *testing.T) {
	for _, args := range [][]string{{"--max-upload", "lots"}, {"--bogus"}} {
		err := runServe(context.Background(), args, stdio{out: io.Discard, err: io.Discard})
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("runServe(%q) = %v, want a usage error", args, err)
		}
	}
}

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"512MiB": 512 << 20, "2GiB": 2 << 30, "100MB": 100e6, "4096": 4096, "1.5KiB": 1536, "64k": 64 << 10} {
		var f sizeFlag
		if err := f.Set(in); err != nil || int64(f) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, f, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "12parsecs"} {
		var f sizeFlag
		if err := f.Set(in); err == nil {
			t.Errorf("Set(%q) succeeded", in)
		}
	}
	if s := sizeFlag(512 << 20).String(); s != "512MiB" {
		t.Errorf("String() = %q", s)
	}
}

func TestUploadCommand(t *testing.T) {
	tmp := t.TempDir()
	file := writeTestProfile(t, tmp)
	base, _, _ := startServe(t, "--data", filepath.Join(tmp, "data"))

	var out bytes.Buffer
	if err := runUpload(context.Background(), []string{file, "--server", base}, stdio{out: &out, err: io.Discard}); err != nil {
		t.Fatal(err)
	}
	link := strings.TrimSpace(out.String())
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `/p/[a-z2-7]{20}$`).MatchString(link) {
		t.Fatalf("printed %q, want %s/p/ID", link, base)
	}
	if code, body := fetch(t, link+"/top"); code != 200 || !strings.Contains(body, "main.hot") {
		t.Fatalf("uploaded link: %d", code)
	}

	bad := filepath.Join(tmp, "notes.txt")
	os.WriteFile(bad, []byte("not a profile"), 0o644)
	err := runUpload(context.Background(), []string{"--server", base, bad}, stdio{out: io.Discard, err: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "not a recognised profile") {
		t.Fatalf("uploading text: %v; want the server's reason", err)
	}
	var u usageError
	if err := runUpload(context.Background(), nil, stdio{out: io.Discard, err: io.Discard}); !errors.As(err, &u) {
		t.Fatalf("no FILE: %v, want usage error", err)
	}
}
