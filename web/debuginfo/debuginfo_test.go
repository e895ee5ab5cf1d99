package debuginfo

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/store"
)

func newStore(t *testing.T) *Store {
	d, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Store: d, TempDir: t.TempDir()})
}

// An unstripped binary has code and DWARF: it is stored as both kinds, once,
// and the same file again is no error.
func TestPutBothKinds(t *testing.T) {
	exe, bid := debuginfodtest.BuildELF(t, t.TempDir(), "both", 64)
	s := newStore(t)
	ctx := context.Background()
	f, _ := os.Open(exe)
	defer f.Close()
	es, err := s.Put(ctx, f, exe, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Kind != "debuginfo" || es[1].Kind != "executable" || es[0].Object != es[1].Object {
		t.Fatalf("entries: %+v", es)
	}
	for _, k := range []symbolize.FetchKind{symbolize.KindDebuginfo, symbolize.KindExecutable} {
		got, err := s.Open(ctx, bid, k, false)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(got)
		got.Close()
		want, _ := os.ReadFile(exe)
		if string(b) != string(want) {
			t.Errorf("%s: %d bytes, want %d", k, len(b), len(want))
		}
	}
	if p := s.UploadedFiles(ctx, bid, ""); len(p) != 2 {
		t.Errorf("UploadedFiles: %v", p)
	}
	if _, err := s.Open(ctx, bid, symbolize.SourceKind("/etc/passwd"), false); !errors.Is(err, ErrNotFound) {
		t.Errorf("a source never uploaded: %v", err)
	}
	es2, err := s.Entries(ctx, "both", 0)
	if err != nil || len(es2) != 2 {
		t.Errorf("Entries: %v %v", es2, err)
	}
}

// --serve-local-debug: files in a build-ID tree are served after checking
// their build ID and contents; a file whose build ID differs is not.
func TestLocalDirs(t *testing.T) {
	exe, bid := debuginfodtest.BuildELF(t, t.TempDir(), "local", 64)
	other, _ := debuginfodtest.BuildELF(t, t.TempDir(), "other", 128)
	dir := t.TempDir()
	sub := dir + "/.build-id/" + bid[:2]
	os.MkdirAll(sub, 0o755)
	os.Symlink(exe, sub+"/"+bid[2:]+".debug") // as /usr/lib/debug/.build-id has them
	os.Symlink(other, sub+"/"+bid[2:])        // wrong build ID at the executable's place
	d, _ := store.NewDir(t.TempDir())
	s := New(Config{Store: d, LocalDirs: []string{dir}})
	f, err := s.Open(context.Background(), bid, symbolize.KindDebuginfo, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f.Origin != "local" {
		t.Errorf("origin %q", f.Origin)
	}
	if _, err := s.Open(context.Background(), bid, symbolize.KindExecutable, false); !errors.Is(err, ErrNotFound) {
		t.Errorf("a file with another build ID was served: %v", err)
	}
}
