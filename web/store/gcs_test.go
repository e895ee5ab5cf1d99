package store_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"viewer/web/store"
	"viewer/web/store/storetest"
)

// TestBlobGCSPutGetStat runs the store's own checks on gs://profiles
// opened by URL, as `viewer serve --store gs://profiles` opens it.
func TestBlobGCSPutGetStat(t *testing.T) {
	g := storetest.NewGCS(t)
	testPutGetStat(t, g.Open(t))
	if got, ok := g.Object("abcd/original"); !ok || string(got) != "hello profile v2" {
		t.Fatalf("the fake holds %q (%v) under abcd/original", got, ok)
	}
	got, err := store.ReadAll(context.Background(), g.Open(t), "abcd/original", 0)
	if err != nil || string(got) != "hello profile v2" {
		t.Fatalf("second client read %q, %v", got, err)
	}
}

func TestBlobGCSFailedPutLeavesNothing(t *testing.T) {
	g := storetest.NewGCS(t)
	b := g.Open(t)
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

func TestBlobGCSOutageIsUnavailable(t *testing.T) {
	g := storetest.NewGCS(t)
	b := g.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Check(ctx); err != nil {
		t.Fatalf("Check on a healthy store: %v", err)
	}
	g.SetDown(true)
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
		if msg := err.Error(); !strings.Contains(msg, "object store unavailable") || !strings.Contains(msg, "gs://profiles") || !strings.Contains(msg, "injected outage") {
			t.Errorf("%s error %q should say the object store is unavailable, name the bucket and keep the service's message", name, msg)
		}
	}
	g.SetDown(false)
	if err := b.Put(ctx, "abcd/original", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatalf("Put after the outage: %v", err)
	}
}

func TestBlobGCSPutIfAbsent(t *testing.T) {
	b := storetest.NewGCS(t).Open(t)
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

func TestBlobGCSPrefixAndMissingBucket(t *testing.T) {
	g := storetest.NewGCS(t)
	a := g.OpenURL(t, g.WithPrefix("team-a"))
	ctx := context.Background()
	if err := a.Put(ctx, "abcd/original", strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Object("team-a/abcd/original"); !ok {
		t.Fatal("prefix=team-a/ did not keep the key under team-a/")
	}
	if _, err := g.Open(t).Stat(ctx, "abcd/original"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("object outside the prefix: %v", err)
	}
	err := g.OpenURL(t, "gs://no-such-bucket").Check(ctx)
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "bucket does not exist") {
		t.Fatalf("Check of a missing bucket = %v, want unavailable: the bucket does not exist", err)
	}
	if _, err := store.OpenURL(ctx, "gs://b?bogus=1"); err == nil || !strings.Contains(err.Error(), `invalid query parameter "bogus"`) {
		t.Fatalf("OpenURL with an unknown parameter: %v", err)
	}
}
