package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirPutGet(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "abc/original"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of missing key: err = %v, want ErrNotFound", err)
	}
	if ok, err := Exists(ctx, d, "abc/original"); ok || err != nil {
		t.Fatalf("Exists of missing key = %v, %v", ok, err)
	}
	want := []byte("hello profile")
	if err := d.Put(ctx, "abc/original", bytes.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// A fresh store on the same directory (a restart) sees the object.
	d2, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(ctx, d2, "abc/original", 0)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after restart: %q, %v; want %q", got, err, want)
	}
	info, err := d2.Stat(ctx, "abc/original")
	if err != nil || info.Size != int64(len(want)) {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	if _, err := ReadAll(ctx, d2, "abc/original", 3); err == nil {
		t.Fatal("ReadAll over max: want error")
	}
	// No temporary files are left behind.
	ents, _ := os.ReadDir(filepath.Join(root, "abc"))
	if len(ents) != 1 || ents[0].Name() != "original" {
		t.Fatalf("directory holds %v, want only original", ents)
	}
}

func TestDirFailedPutLeavesNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, _ := NewDir(root)
	r := io.MultiReader(strings.NewReader("partial"), errReader{})
	if err := d.Put(ctx, "x/original", r); err == nil {
		t.Fatal("Put with failing reader: want error")
	}
	if ok, _ := Exists(ctx, d, "x/original"); ok {
		t.Fatal("failed Put left the object")
	}
	ents, _ := os.ReadDir(filepath.Join(root, "x"))
	if len(ents) != 0 {
		t.Fatalf("failed Put left %v", ents)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.Put(cctx, "x/original", strings.NewReader("data")); err == nil {
		t.Fatal("Put with cancelled context: want error")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestValidKey(t *testing.T) {
	for _, k := range []string{"abc", "abc/original", "a-b_c.d/meta.json"} {
		if err := ValidKey(k); err != nil {
			t.Errorf("ValidKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range []string{"", "..", "a/../b", "/abs", "a//b", "A", "a/b c", "a\\b", "a/./b", "a/b/c/d/e"} {
		if err := ValidKey(k); err == nil {
			t.Errorf("ValidKey(%q) = nil, want error", k)
		}
	}
	d, _ := NewDir(t.TempDir())
	if err := d.Put(context.Background(), "../escape", strings.NewReader("x")); err == nil {
		t.Fatal("Put(../escape) succeeded")
	}
}

// TestNewDirSweepsTempFiles: temporary files a crash left (beside a
// profile's files, or at the root) are removed when the store opens; stored
// keys and other dot files stay.
func TestNewDirSweepsTempFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "abc/original", strings.NewReader("whole")); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, ".viewer-check", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	orphans := []string{filepath.Join(root, "abc", ".tmp-123"), filepath.Join(root, "def", ".tmp-456"), filepath.Join(root, ".tmp-789")}
	for _, p := range orphans {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewDir(root); err != nil {
		t.Fatal(err)
	}
	for _, p := range orphans {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived the restart (%v)", p, err)
		}
	}
	for _, k := range []string{"abc/original", ".viewer-check"} {
		if _, err := d.Stat(ctx, k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if err := d.Put(ctx, "abc/.tmp-x", strings.NewReader("x")); err == nil {
		t.Error("a key named like a temporary file was accepted")
	}
}
