package web

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web/debuginfo"
	"viewer/web/store"
)

// zstdTar is a tar of one file at name in a zstd frame that declares a
// window of 1<<windowLog bytes, its bytes in raw blocks: what a zstd
// decoder keeps of what it unpacked is up to that window, and it
// allocates it at the first block.
func zstdTar(t testing.TB, name, body string, windowLog int) []byte {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(body))
	tw.Close()
	// Magic, a frame header descriptor of no content size, single
	// segment or checksum, and the window descriptor (exponent only).
	z := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, byte(windowLog-10) << 3}
	raw := tb.Bytes()
	for len(raw) > 0 {
		n := min(len(raw), 128<<10)
		h := uint32(n) << 3 // a raw block
		if n == len(raw) {
			h |= 1 // the last
		}
		z = binary.LittleEndian.AppendUint32(z, h)[:len(z)+3]
		z = append(z, raw[:n]...)
		raw = raw[n:]
	}
	return z
}

// sourceServer serves debug files and their sources within limits, with
// the test program's debug file uploaded; it returns the build ID.
func sourceServer(t *testing.T, lim Limits) (*Server, string, string) {
	t.Helper()
	d, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := debuginfo.New(debuginfo.Config{Store: d, TempDir: t.TempDir()})
	s, ts := newTestServer(t, Config{Store: d, Limits: lim, Debuginfo: &DebuginfoConfig{Files: files, Serve: "open"}})
	stripped := filepath.Join("..", "testdata", "debuginfo", "prog.stripped")
	bid, err := debuginfodtest.BuildID(stripped)
	if err != nil {
		t.Fatalf("%v: rebuild with testdata/debuginfo/build.sh", err)
	}
	debugFile, err := os.ReadFile(filepath.Join("..", "testdata", "debuginfo", "prog.debug"))
	if err != nil {
		t.Fatal(err)
	}
	if resp := putSources(t, ts.URL+"/buildid/"+bid+"/debuginfo?name=prog.debug", bytes.NewReader(debugFile)); resp.code != 201 {
		t.Fatalf("the debug file: %d %s", resp.code, resp.body)
	}
	return s, ts.URL, bid
}

type putAnswer struct {
	code       int
	body       string
	retryAfter string
}

func putSources(t testing.TB, url string, body io.Reader) putAnswer {
	req, _ := http.NewRequest(http.MethodPut, url, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return putAnswer{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return putAnswer{resp.StatusCode, string(b), resp.Header.Get("Retry-After")}
}

// TestSourceUploadsChargeIngestMemory: a source upload takes its memory
// from --ingest-memory as it learns what it needs (4 MiB, then a zstd
// archive's declared window). With 16 MiB, an upload whose 8 MiB window
// is being unpacked leaves too little for a second one, which is refused
// with 503, Retry-After and the flag named, on both upload routes; the
// first is then stored, and an honest archive after them too. (Uploads
// of sources took memory from no budget: both were stored.)
func TestSourceUploadsChargeIngestMemory(t *testing.T) {
	s, base, bid := sourceServer(t, Limits{IngestMemory: 16 << 20, UploadWait: 500 * time.Millisecond})
	url := base + "/buildid/" + bid + "/sources?name=src.tar.zst"
	slow := zstdTar(t, "viewer-testdata/debuginfo/slow.c", strings.Repeat("int x;\n", 4000), 23)

	// The first upload sends its frame header and part of its block,
	// then waits: it holds its share meanwhile.
	pr, pw := io.Pipe()
	first := make(chan putAnswer, 1)
	go func() { first <- putSources(t, url, pr) }()
	pw.Write(slow[:4096])
	// 8 MiB are free until the first upload takes 4 MiB and its window's
	// 8 MiB.
	poll.Until(t, 30*time.Second, "the first upload to take memory for its window", func() bool {
		give, ok := s.limits.Memory.TryTake(8 << 20)
		if ok {
			give()
		}
		return !ok
	})

	second := putSources(t, url, bytes.NewReader(slow))
	if second.code != http.StatusServiceUnavailable || !strings.Contains(second.body, "--ingest-memory") || second.retryAfter == "" {
		t.Errorf("a second upload while the first holds its window: %d %q, Retry-After %q; want 503 naming --ingest-memory, with Retry-After", second.code, second.body, second.retryAfter)
	}
	form, ctype := multipartSources(t, bid, slow)
	req, _ := http.NewRequest(http.MethodPost, base+"/api/debuginfo", form)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "--ingest-memory") {
		t.Errorf("a multipart source upload meanwhile: %s %s; want 503 naming --ingest-memory", resp.Status, b)
	}

	pw.Write(slow[4096:])
	pw.Close()
	if a := <-first; a.code != http.StatusCreated {
		t.Errorf("the first upload, once sent: %d %s", a.code, a.body)
	}
	honest := zstdTar(t, "viewer-testdata/debuginfo/honest.c", "int honest;\n", 20)
	if a := putSources(t, url, bytes.NewReader(honest)); a.code != http.StatusCreated {
		t.Errorf("an honest upload after them: %d %s", a.code, a.body)
	}
	for _, p := range []string{"slow.c", "honest.c"} {
		resp, err := http.Get(base + "/buildid/" + bid + "/source/viewer-testdata/debuginfo/" + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s, stored, is answered %s", p, resp.Status)
		}
	}
	// An archive whose window alone is more than the whole budget.
	if a := putSources(t, url, bytes.NewReader(zstdTar(t, "x.c", "x", 25))); a.code != http.StatusRequestEntityTooLarge || !strings.Contains(a.body, "--ingest-memory") {
		t.Errorf("a 32 MiB window with --ingest-memory 16MiB: %d %q; want 413 naming --ingest-memory", a.code, a.body)
	}
}

// multipartSources is a POST /api/debuginfo form of build_id and a
// "sources" part.
func multipartSources(t testing.TB, bid string, archive []byte) (io.Reader, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("build_id", bid)
	fw, err := w.CreateFormFile("sources", "src.tar.zst")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(archive)
	w.Close()
	return &b, w.FormDataContentType()
}
