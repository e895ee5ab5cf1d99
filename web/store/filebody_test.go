package store

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPutFileBodyLinks: a spooled upload put in a Dir on its file system
// becomes the object by a link, not a copy (the same file, its bytes
// readable after the spool's name is removed, no temporary name left);
// a file holding more than its body's bytes is copied, those bytes only.
func TestPutFileBodyLinks(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(filepath.Join(root, "data"))
	if err != nil {
		t.Fatal(err)
	}
	spool := func(s string) *os.File {
		f, err := os.CreateTemp(root, "viewer-upload-*")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	read := func(key string) string {
		rc, err := d.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	f := spool("the whole upload")
	if err := d.Put(ctx, "abc/original", NewFileBody(f, 16)); err != nil {
		t.Fatal(err)
	}
	p, _ := d.path("abc/original")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	si, _ := f.Stat()
	if !os.SameFile(fi, si) {
		t.Errorf("the stored object is a copy, not a link to the spooled file")
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("stored object's mode %v, want 0644 as a copy's", fi.Mode().Perm())
	}
	os.Remove(f.Name())
	if got := read("abc/original"); got != "the whole upload" {
		t.Errorf("after the spool's removal the object reads %q", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}

	g := spool("the upload and more")
	if err := d.Put(ctx, "def/original", NewFileBody(g, 10)); err != nil {
		t.Fatal(err)
	}
	if got := read("def/original"); got != "the upload" {
		t.Errorf("a body of 10 bytes of a longer file stored %q", got)
	}
	q, _ := d.path("def/original")
	qi, _ := os.Stat(q)
	gi, _ := g.Stat()
	if os.SameFile(qi, gi) {
		t.Errorf("a file longer than its body was linked whole")
	}
	// Any other reader of the body reads the same bytes.
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, NewFileBody(g, 10)); err != nil || buf.String() != "the upload" {
		t.Errorf("reading the body: %q, %v", buf.String(), err)
	}
}
