package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"viewer/web/store"
	"viewer/web/store/storetest"
)

// TestBlobS3PutGetStat stores, reads and stats objects in a real S3
// server over HTTP, through store.OpenURL.
func TestBlobS3PutGetStat(t *testing.T) {
	s3 := storetest.NewS3(t)
	b := s3.Open(t)
	testPutGetStat(t, b)
	// A second client (another replica) sees the same objects.
	got, err := store.ReadAll(context.Background(), s3.Open(t), "abcd/original", 0)
	if err != nil || string(got) != "hello profile v2" {
		t.Fatalf("second client read %q, %v", got, err)
	}
}

// TestBlobFileURL runs the same checks through fileblob (file:///DIR).
func TestBlobFileURL(t *testing.T) {
	dir := t.TempDir()
	b, err := store.OpenURL(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	testPutGetStat(t, b)
	if _, err := os.Stat(filepath.Join(dir, "abcd", "original")); err != nil {
		t.Fatalf("fileblob did not write the object under its key: %v", err)
	}
}

func testPutGetStat(t *testing.T, b *store.Blob) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.Get(ctx, "abcd/original"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := b.Stat(ctx, "abcd/original"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat of a missing key: %v, want ErrNotFound", err)
	}
	if ok, err := store.Exists(ctx, b, "abcd/original"); ok || err != nil {
		t.Fatalf("Exists of a missing key = %v, %v", ok, err)
	}
	if err := b.Put(ctx, "abcd/original", strings.NewReader("hello profile")); err != nil {
		t.Fatal(err)
	}
	info1, err := b.Stat(ctx, "abcd/original")
	if err != nil || info1.Size != int64(len("hello profile")) {
		t.Fatalf("Stat = %+v, %v", info1, err)
	}
	if err := b.Put(ctx, "abcd/original", strings.NewReader("hello profile v2")); err != nil {
		t.Fatal(err)
	}
	got, err := store.ReadAll(ctx, b, "abcd/original", 0)
	if err != nil || string(got) != "hello profile v2" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	info2, err := b.Stat(ctx, "abcd/original")
	if err != nil {
		t.Fatal(err)
	}
	if info2.ETag == "" || info2.ETag == info1.ETag {
		t.Fatalf("ETag %q after rewrite, was %q: a replica could not tell the object changed", info2.ETag, info1.ETag)
	}
	for _, bad := range []string{"../x", "a/../../b", "A/B", "a//b", ""} {
		if err := b.Put(ctx, bad, strings.NewReader("x")); err == nil {
			t.Errorf("Put(%q) succeeded, want an invalid key error", bad)
		}
	}
}

// failingReader returns n bytes of random data, then an error, as an
// upload whose client went away does.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("client went away")
	}
	k := min(len(p), f.n)
	rand.Read(p[:k])
	f.n -= k
	return k, nil
}

// TestBlobS3FailedPutLeavesNothing checks that a write whose body fails,
// small or large enough for a multipart upload, is aborted: no partial
// object appears, and an older object under the key stays whole.
func TestBlobS3FailedPutLeavesNothing(t *testing.T) {
	s3 := storetest.NewS3(t)
	b := s3.Open(t)
	ctx := context.Background()
	for _, n := range []int{1000, 12 << 20} {
		err := b.Put(ctx, "abcd/original", &failingReader{n: n})
		if err == nil || !strings.Contains(err.Error(), "client went away") {
			t.Fatalf("Put of a failing %d-byte body: %v", n, err)
		}
		if _, err := b.Stat(ctx, "abcd/original"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after a failed %d-byte Put, Stat = %v, want ErrNotFound", n, err)
		}
	}
	if err := b.Put(ctx, "abcd/meta.json", strings.NewReader(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Put(cctx, "abcd/meta.json", strings.NewReader(`{"ok":false}`)); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	got, err := store.ReadAll(ctx, b, "abcd/meta.json", 0)
	if err != nil || string(got) != `{"ok":true}` {
		t.Fatalf("after a cancelled overwrite: %q, %v; want the old object", got, err)
	}
}

// TestBlobS3OutageIsUnavailable checks that a store answering 503 gives
// errors that say the object store is unavailable (not "not found"), and
// that it works again once the store is back.
func TestBlobS3OutageIsUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the S3 SDK's retries (9 s): skipped with -short")
	}
	s3 := storetest.NewS3(t)
	// gocloud gives the SDK its standard retryer (3 attempts with backoff),
	// so each call below takes a few seconds to give up.
	b := s3.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Check(ctx); err != nil {
		t.Fatalf("Check on a healthy store: %v", err)
	}
	s3.SetDown(true)
	for name, err := range map[string]error{
		"Put":   b.Put(ctx, "abcd/original", bytes.NewReader([]byte("x"))),
		"Stat":  func() error { _, err := b.Stat(ctx, "abcd/original"); return err }(),
		"Get":   func() error { _, err := b.Get(ctx, "abcd/original"); return err }(),
		"Check": b.Check(ctx),
	} {
		if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s during an outage: %v; want ErrUnavailable", name, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "object store unavailable") || !strings.Contains(msg, "s3://profiles") || strings.Contains(msg, "endpoint=") {
			t.Errorf("%s error %q should say the object store is unavailable and name the bucket without its query", name, msg)
		}
	}
	s3.SetDown(false)
	if err := b.Put(ctx, "abcd/original", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatalf("Put after the outage: %v", err)
	}
}

// TestBlobS3PutIfAbsent checks the conditional write claims rely on.
func TestBlobS3PutIfAbsent(t *testing.T) {
	b := storetest.NewS3(t).Open(t)
	ctx := context.Background()
	ok, err := b.PutIfAbsent(ctx, "abcd/claim", strings.NewReader("one"))
	if !ok || err != nil {
		t.Fatalf("first PutIfAbsent = %v, %v", ok, err)
	}
	ok, err = b.PutIfAbsent(ctx, "abcd/claim", strings.NewReader("two"))
	if ok || err != nil {
		t.Fatalf("second PutIfAbsent = %v, %v; want false, nil", ok, err)
	}
	got, _ := store.ReadAll(ctx, b, "abcd/claim", 0)
	if string(got) != "one" {
		t.Fatalf("object = %q, want the first writer's", got)
	}
}

// TestBlobS3Prefix keeps keys under prefix=.
func TestBlobS3Prefix(t *testing.T) {
	s3 := storetest.NewS3(t)
	a := s3.OpenURL(t, s3.WithPrefix("team-a"))
	ctx := context.Background()
	if err := a.Put(ctx, "abcd/original", strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Open(t).Stat(ctx, "abcd/original"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("object outside the prefix: %v", err)
	}
	if got, err := store.ReadAll(ctx, s3.OpenURL(t, s3.WithPrefix("team-a/")), "abcd/original", 0); err != nil || string(got) != "a" {
		t.Fatalf("reading through the prefix: %q, %v", got, err)
	}
}

func TestOpenURLRefusesWhatItCannotOpen(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/viewer": "not a URL",
		"ftp://host/x":    `scheme "ftp" is not supported`,
		"s3://b?bogus=1":  "opening s3://b",
		"http://host/x":   `scheme "http"`,
		"file://" + "%zz": "bad --store URL",
	} {
		_, err := store.OpenURL(context.Background(), in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenURL(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

// TestBlobS3AbortUploads: the unfinished multipart uploads a crash left
// in an S3 bucket (parts no object listing shows) are aborted when they
// began before the time given and their key is under the prefix given,
// within the bucket's own prefix=; a younger one (another replica's,
// going on) and one under another prefix are kept.
func TestBlobS3AbortUploads(t *testing.T) {
	s3 := storetest.NewS3(t)
	b := s3.OpenURL(t, s3.WithPrefix("team-a"))
	if n, err := b.AbortUploads(context.Background(), "debuginfo/", time.Now()); n != 0 || err != nil {
		t.Errorf("AbortUploads on a bucket that never had an upload: %d, %v", n, err)
	}
	part := bytes.Repeat([]byte("p"), 5<<20)
	s3.SetClockBehind(2 * time.Hour)
	s3.BeginUpload(t, "team-a/debuginfo/ab/elf-old", part)
	s3.BeginUpload(t, "team-a/abcd/original", part)
	s3.BeginUpload(t, "team-b/debuginfo/ab/elf-old", part)
	s3.SetClockBehind(0)
	s3.BeginUpload(t, "team-a/debuginfo/ab/elf-new", part)
	n, err := b.AbortUploads(context.Background(), "debuginfo/", time.Now().Add(-time.Hour))
	if err != nil || n != 1 {
		t.Errorf("AbortUploads: %d, %v; want the 1 old upload under team-a/debuginfo/", n, err)
	}
	left := strings.Join(s3.Uploads(t), "\n")
	for _, k := range []string{"team-a/abcd/original", "team-b/debuginfo/ab/elf-old", "team-a/debuginfo/ab/elf-new"} {
		if !strings.Contains(left, k+" ") {
			t.Errorf("the upload of %s was aborted; left:\n%s", k, left)
		}
	}
	if strings.Contains(left, "team-a/debuginfo/ab/elf-old") {
		t.Errorf("the old upload under the prefix is left:\n%s", left)
	}
}
