package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/ingest/otlptest"
)

const privDebugDir = "../../testdata/debuginfo"

func privDebug(t *testing.T) (debugFile, bid string, src []byte) {
	t.Helper()
	debugFile = filepath.Join(privDebugDir, "prog.debug")
	bid, err := debuginfodtest.BuildID(debugFile)
	if err != nil {
		t.Fatal(err)
	}
	src, err = os.ReadFile(filepath.Join(privDebugDir, "prog.c"))
	if err != nil {
		t.Fatal(err)
	}
	return debugFile, bid, src
}

// send makes one request and returns its status, body and headers.
func send(t *testing.T, method, url, ctype string, body io.Reader, token string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func putDebug(t *testing.T, base, bid, kind string, body []byte, token string) (int, string) {
	t.Helper()
	code, b, _ := send(t, http.MethodPut, base+"/buildid/"+bid+"/"+kind+"?name=prog.debug", "", bytes.NewReader(body), token)
	return code, b
}

// sourceTar is an uncompressed tar of n files of size bytes each, under
// the private program's source directory, the first one prog.c itself.
func sourceTar(n, size int, src []byte) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := range n {
		name, body := fmt.Sprintf("viewer-testdata/debuginfo/gen%d.c", i), bytes.Repeat([]byte{'a' + byte(i%26)}, size)
		if i == 0 && src != nil {
			name, body = "viewer-testdata/debuginfo/prog.c", src
		}
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write(body)
	}
	tw.Close()
	return b.Bytes()
}

// debugFiles lists the files under dir/debuginfo with their sizes: the
// debug file store, counted file by file.
func debugFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dir, "debuginfo")
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil // renamed or removed since it was listed: a running server's temporary file
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, fmt.Sprintf("%s %d", rel, info.Size()))
		return nil
	})
	sort.Strings(out)
	return out
}

// TestKillDuringSourceUpload is issue 37's crash case: a source archive's
// upload is killed (kill -9 of the built binary) after some of its files
// were written; after a restart on the same directory the debug store
// holds exactly what was acknowledged before, file by file, and serves it.
func TestKillDuringSourceUpload(t *testing.T) {
	bin := buildViewer(t)
	data := t.TempDir()
	debugFile, bid, src := privDebug(t)
	p := startViewer(t, nil, nil, bin, "--data", data)
	if code, body := putDebug(t, p.base, bid, "debuginfo", mustReadFile(t, debugFile), ""); code != http.StatusCreated {
		t.Fatalf("debug file: %d %s", code, body)
	}
	if code, body := putDebug(t, p.base, bid, "sources", sourceTar(2, 100, src), ""); code != http.StatusCreated {
		t.Fatalf("sources: %d %s", code, body)
	}
	acked := debugFiles(t, data)

	// 40 files of 64 KiB; the body stops after about half of them.
	archive := sourceTar(40, 64<<10, nil)
	pr, pw := io.Pipe()
	go func() {
		req, _ := http.NewRequest(http.MethodPut, p.base+"/buildid/"+bid+"/sources", pr)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close() // not expected: the server is killed first
		}
	}()
	go pw.Write(archive[:len(archive)/2])
	if !poll.Wait(20*time.Second, func() bool { return len(debugFiles(t, data)) >= len(acked)+10 }) {
		t.Fatalf("the upload wrote no files: %v", debugFiles(t, data))
	}
	p.kill()
	pw.CloseWithError(io.ErrClosedPipe)
	left := len(debugFiles(t, data)) - len(acked)

	p = startViewer(t, nil, nil, bin, "--data", data)
	if got := debugFiles(t, data); strings.Join(got, "\n") != strings.Join(acked, "\n") {
		t.Errorf("after the kill and a restart the debug store holds\n%s\nnot what was acknowledged\n%s", strings.Join(got, "\n"), strings.Join(acked, "\n"))
	}
	if code, body, _ := send(t, http.MethodGet, p.base+"/buildid/"+bid+"/source/viewer-testdata/debuginfo/prog.c", "", nil, ""); code != 200 || body != string(src) {
		t.Errorf("the acknowledged source after the restart: %d, %d bytes", code, len(body))
	}
	t.Logf("kill -9 with %d files of the interrupted archive written; none after the restart", left)
}

// fill writes a file at path until the disk holds only keep bytes more
// (or is full, keep 0).
func fill(t *testing.T, path string, keep int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for n := free - keep; n > 0; n -= int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), n)]); err != nil {
			break // full
		}
	}
}

// TestFullDiskDebugAndOTLP runs the built binary on a 3 MiB tmpfs of its
// own (a private mount namespace, as TestFullDisk), filled from outside
// through /proc/PID/root: a source archive that fills the disk midway is
// refused and leaves nothing; a multipart POST /api/debuginfo on the full
// disk is 507 naming no server path; an OTLP export on it is 503 with
// Retry-After, not a partial success, and a client that retries after
// Retry-After, as OTLP exporters do, gets its profile stored once the
// space is back.
func TestFullDiskDebugAndOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a tmpfs under the viewer binary and waits out Retry-After (10 s): skipped with -short")
	}
	for _, tool := range []string{"unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("TestFullDiskDebugAndOTLP needs %s (%v): run make deps", tool, err)
		}
	}
	bin := buildViewer(t)
	data := t.TempDir()
	script := `mount -t tmpfs -o size=3m viewer-test "$1" && shift && exec "$@"`
	p := startViewer(t, nil, []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", data}, bin, "--data", data, "--otlp")
	inside := fmt.Sprintf("/proc/%d/root%s", p.cmd.Process.Pid, data) // the tmpfs, seen from outside
	if _, err := os.Stat(inside); err != nil {
		t.Fatal(err)
	}
	debugFile, bid, src := privDebug(t)
	if code, body := putDebug(t, p.base, bid, "debuginfo", mustReadFile(t, debugFile), ""); code != http.StatusCreated {
		t.Fatalf("debug file: %d %s", code, body)
	}
	acked := debugFiles(t, inside)

	// Room for about three of the archive's 64 KiB files.
	filler := filepath.Join(inside, "filler")
	fill(t, filler, 200<<10)
	code, body := putDebug(t, p.base, bid, "sources", sourceTar(10, 64<<10, src), "")
	if code != http.StatusInsufficientStorage || strings.Contains(body, data) {
		t.Errorf("sources on a disk filling up: %d %q, want 507 naming no path", code, body)
	}
	if got := debugFiles(t, inside); strings.Join(got, "\n") != strings.Join(acked, "\n") {
		t.Errorf("after the refused archive the debug store holds\n%s\nnot what was acknowledged\n%s", strings.Join(got, "\n"), strings.Join(acked, "\n"))
	}

	fill(t, filler, 0)
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	fw, _ := mw.CreateFormFile("file", "prog.stripped")
	fw.Write(mustReadFile(t, filepath.Join(privDebugDir, "prog.stripped")))
	mw.Close()
	code, body, _ = send(t, http.MethodPost, p.base+"/api/debuginfo", mw.FormDataContentType(), &mb, "")
	if code != http.StatusInsufficientStorage || strings.Contains(body, data) || strings.Contains(body, "/tmp") {
		t.Errorf("multipart debug upload on a full disk: %d %q, want 507 naming no path", code, body)
	}

	req := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.EBPFLike(300, 5), map[string]string{"service.name": "checkout"}))
	otlp, err := req.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	// The exporter's loop: retry 429/502/503/504 after Retry-After.
	var id string
	for attempt := 0; ; attempt++ {
		code, body, h := send(t, http.MethodPost, p.base+web.OTLPPath, "application/x-protobuf", bytes.NewReader(otlp), "")
		if code == http.StatusOK {
			if attempt == 0 {
				t.Errorf("OTLP on a full disk: 200 (%q), want a retryable status", body)
			}
			id = h.Get("X-Viewer-Profiles")
			break
		}
		retryable := code == 429 || code == 502 || code == 503 || code == 504
		wait, err := strconv.Atoi(h.Get("Retry-After"))
		if !retryable || err != nil || attempt > 0 {
			t.Fatalf("OTLP attempt %d: %d Retry-After %q %q: want 503 with Retry-After, then 200", attempt, code, h.Get("Retry-After"), body)
		}
		if !strings.Contains(body, "disk is full") {
			t.Errorf("the 503 does not say the disk is full: %q", body)
		}
		os.Remove(filler) // the operator frees space
		time.Sleep(time.Duration(wait) * time.Second)
	}
	if code, _, _ := send(t, http.MethodGet, p.base+"/p/"+id, "", nil, ""); id == "" || code != 200 {
		t.Errorf("the retried OTLP profile %q: %d", id, code)
	}
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDebugUploadsRefusedBeyondLoopback: a server others reach (here
// --behind-proxy, so the test stays on 127.0.0.1) with no token refuses
// debug uploads, says so at start-up, and still serves; an explicit
// --debuginfod-serve=open takes them, and so does --auth-token with it.
func TestDebugUploadsRefusedBeyondLoopback(t *testing.T) {
	bin := buildViewer(t)
	debugFile, bid, _ := privDebug(t)
	body := mustReadFile(t, debugFile)

	p := startViewer(t, nil, nil, bin, "--data", t.TempDir(), "--behind-proxy")
	if !poll.Wait(10*time.Second, func() bool { return strings.Contains(p.out.String(), "debug file uploads refused") }) {
		t.Fatalf("no start-up line about refused debug uploads:\n%s", p.out.String())
	}
	if code, msg := putDebug(t, p.base, bid, "debuginfo", body, ""); code != http.StatusForbidden ||
		!strings.Contains(msg, "--auth-token") || !strings.Contains(msg, "--debuginfod-serve=open") {
		t.Errorf("debug upload beyond loopback without a token: %d %q, want 403 naming both flags", code, msg)
	}
	if code, _, _ := send(t, http.MethodGet, p.base+"/buildid/"+bid+"/debuginfo", "", nil, ""); code != http.StatusNotFound {
		t.Errorf("debuginfod reads: %d, want 404 (served, nothing uploaded)", code)
	}

	p = startViewer(t, nil, nil, bin, "--data", t.TempDir(), "--behind-proxy", "--debuginfod-serve=open")
	if code, msg := putDebug(t, p.base, bid, "debuginfo", body, ""); code != http.StatusCreated {
		t.Errorf("with --debuginfod-serve=open: %d %q", code, msg)
	}
	p = startViewer(t, nil, nil, bin, "--data", t.TempDir(), "--behind-proxy", "--auth-token", "s3cret")
	if code, msg := putDebug(t, p.base, bid, "debuginfo", body, "s3cret"); code != http.StatusCreated {
		t.Errorf("with --auth-token: %d %q", code, msg)
	}
}
