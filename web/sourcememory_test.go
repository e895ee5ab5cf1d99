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
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/debuginfo"
	"viewer/web/heappeak"
	"viewer/web/ingest"
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
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// 8 MiB are free until the first upload takes 4 MiB and its
		// window's 8 MiB.
		give, ok := s.limits.Memory.TryTake(8 << 20)
		if !ok {
			break
		}
		give()
		if time.Now().After(deadline) {
			t.Fatal("the first upload took no memory for its window")
		}
	}

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
