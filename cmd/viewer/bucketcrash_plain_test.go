package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web/debuginfo"
	"viewer/web/store"
	"viewer/web/store/storetest"
)

// bucketFiles lists the objects of the bucket's debug file store with
// their sizes, and its unfinished multipart uploads (parts that no
// object listing shows, stored all the same): the store counted file by
// file.
func bucketFiles(t *testing.T, s3 *storetest.S3, b *store.Blob) []string {
	t.Helper()
	ctx := context.Background()
	keys, err := b.List(ctx, "debuginfo/")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		info, err := b.Stat(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d", k, info.Size))
	}
	for _, u := range s3.Uploads(t) {
		out = append(out, "unfinished upload of "+u)
	}
	sort.Strings(out)
	return out
}

// bigExecutable builds with gcc an executable of about size bytes (an
// initialised array) with a GNU build ID; it returns its path and build ID.
func bigExecutable(t *testing.T, size int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	c := filepath.Join(dir, "big.c")
	if err := os.WriteFile(c, fmt.Appendf(nil, "char big[%d] = {1};\nint main(void) { return big[0]; }\n", size), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "big")
	if out, err := exec.Command("gcc", "-Wl,--build-id", "-o", exe, c).CombinedOutput(); err != nil {
		t.Fatalf("gcc (run make deps): %v\n%s", err, out)
	}
	bid, err := debuginfodtest.BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	return exe, bid
}

// TestKillDuringBucketUploads is issue 37's crash case on an S3 bucket
// (--store): the built binary is killed (kill -9) while it writes a
// source archive and a 17 MiB executable to the bucket, each file over
// 16 MiB a multipart upload whose parts the test S3 server holds back.
// That leaves the archive's first files with no index naming them,
// two unfinished uploads whose parts no listing shows, and the
// executable's spool file in TMPDIR. The crash is dated a day back (the
// server's clock behind): after a restart the bucket holds exactly what
// was acknowledged, file by file, unfinished uploads counted, and no
// spool file is left; another replica's upload going on meanwhile, a
// file and an unfinished upload dated now, is kept.
func TestKillDuringBucketUploads(t *testing.T) {
	if testing.Short() {
		t.Skip("kills viewer processes mid-upload, one bucket at a time: make test runs it")
	}
	bin := buildViewer(t)
	s3 := storetest.NewS3(t)
	bucket := s3.Open(t)
	spool := t.TempDir()
	env := []string{"TMPDIR=" + spool}
	debugFile, bid, src := privDebug(t)
	p := startViewer(t, env, nil, bin, "--store", s3.URL)
	if code, body := putDebug(t, p.base, bid, "debuginfo", mustReadFile(t, debugFile), ""); code != http.StatusCreated {
		t.Fatalf("debug file: %d %s", code, body)
	}
	if code, body := putDebug(t, p.base, bid, "sources", sourceTar(2, 100, src), ""); code != http.StatusCreated {
		t.Fatalf("sources: %d %s", code, body)
	}
	acked := bucketFiles(t, s3, bucket)

	s3.SetClockBehind(debuginfo.UnfinishedUploadGrace + time.Hour)
	s3.StallParts(true)
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for i, size := range []int{100, 100, 17 << 20} {
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("viewer-testdata/debuginfo/crash%d.c", i), Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg})
		tw.Write(bytes.Repeat([]byte{'a' + byte(i)}, size))
	}
	tw.Close()
	exe, exeBID := bigExecutable(t, 17<<20)
	for _, up := range []struct{ url, file string }{
		{p.base + "/buildid/" + bid + "/sources", ""},
		{p.base + "/buildid/" + exeBID + "/executable?name=big", exe},
	} {
		body := archive.Bytes()
		if up.file != "" {
			body = mustReadFile(t, up.file)
		}
		go func() {
			req, _ := http.NewRequest(http.MethodPut, up.url, bytes.NewReader(body))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close() // not expected: the server is killed first
			}
		}()
	}
	if !poll.Wait(60*time.Second, func() bool { return len(s3.Uploads(t)) >= 2 && s3.PartsBegun() >= 2 }) {
		t.Fatalf("the uploads began no multipart upload: %q, %d parts", s3.Uploads(t), s3.PartsBegun())
	}
	p.kill()
	s3.StallParts(false)
	s3.SetClockBehind(0)
	left := bucketFiles(t, s3, bucket)
	spooled, _ := filepath.Glob(filepath.Join(spool, "viewer-debuginfo-upload-*"))
	if len(left) < len(acked)+4 || len(spooled) != 1 {
		t.Fatalf("the kill left %d files and uploads in the bucket beyond the %d acknowledged, and %d spool files: want 2 files, 2 uploads and 1 spool file\n%s",
			len(left)-len(acked), len(acked), len(spooled), strings.Join(left, "\n"))
	}
	dayAgo := time.Now().Add(-debuginfo.UnfinishedUploadGrace - time.Hour)
	if err := os.Chtimes(spooled[0], dayAgo, dayAgo); err != nil {
		t.Fatal(err)
	}

	// Another replica's upload, going on as this one restarts.
	fresh := "debuginfo/" + bid + "/src-00112233445566778899aabbccddeeff-0011223344556677"
	if err := bucket.Put(context.Background(), fresh, strings.NewReader("in progress")); err != nil {
		t.Fatal(err)
	}
	s3.BeginUpload(t, "debuginfo/"+exeBID+"/elf-00112233445566778899aabbccddeeff", bytes.Repeat([]byte("x"), 5<<20))
	want := append(append([]string{}, acked...), fresh+" 11")
	for _, u := range s3.Uploads(t) {
		if strings.Contains(u, "/elf-00112233445566778899aabbccddeeff ") {
			want = append(want, "unfinished upload of "+u)
		}
	}
	sort.Strings(want)

	p = startViewer(t, env, nil, bin, "--store", s3.URL)
	if got := bucketFiles(t, s3, bucket); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after the kill and a restart the bucket holds\n%s\nnot what was acknowledged and what another replica is uploading\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if spooled, _ := filepath.Glob(filepath.Join(spool, "viewer-debuginfo-upload-*")); len(spooled) != 0 {
		t.Errorf("spool files left after the restart: %q", spooled)
	}
	if code, body, _ := send(t, http.MethodGet, p.base+"/buildid/"+bid+"/source/viewer-testdata/debuginfo/prog.c", "", nil, ""); code != 200 || body != string(src) {
		t.Errorf("the acknowledged source after the restart: %d, %d bytes", code, len(body))
	}
	var extra []string
	for _, l := range left {
		if !slices.Contains(acked, l) {
			extra = append(extra, l)
		}
	}
	t.Logf("kill -9 left in the bucket, beyond what was acknowledged (all gone after the restart):\n%s", strings.Join(extra, "\n"))
}
