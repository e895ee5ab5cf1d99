package debuginfo

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"viewer/symbolize"
	"viewer/web/store"
)

// memStore is a store.Store and store.Deleter in memory: a fuzz input's
// archive is stored and read back without a file system's syncs.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
}

func newMemStore() *memStore { return &memStore{objects: map[string][]byte{}} }

func (m *memStore) Put(ctx context.Context, key string, r io.Reader) error {
	if err := store.ValidKey(key); err != nil {
		return err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[key] = b
	return nil
}

type memObject struct{ *bytes.Reader }

func (memObject) Close() error { return nil }

func (m *memStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, store.ErrNotFound)
	}
	return memObject{bytes.NewReader(b)}, nil
}

func (m *memStore) Stat(ctx context.Context, key string) (store.Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[key]
	if !ok {
		return store.Info{}, fmt.Errorf("%s: %w", key, store.ErrNotFound)
	}
	return store.Info{Size: int64(len(b)), ModTime: time.Unix(0, 0)}, nil
}

func (m *memStore) Delete(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}

// keys are the stored keys, sorted.
func (m *memStore) keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ks []string
	for k := range m.objects {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// countedMemory is a Memory of a fixed size that keeps what is held.
type countedMemory struct {
	mu         sync.Mutex
	size, held int64
}

var errNoMemory = errors.New("over the test's memory")

func (m *countedMemory) Take(ctx context.Context, n int64, what string) (func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held+n > m.size {
		return nil, errNoMemory
	}
	m.held += n
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			m.held -= n
			m.mu.Unlock()
		})
	}, nil
}

// sourceArchive is a tar of files (name to contents) in the given format,
// compressed as compression says ("", "gzip" or "zstd").
func sourceArchive(t testing.TB, format tar.Format, compression string, files ...[2]string) []byte {
	var b bytes.Buffer
	var w io.WriteCloser = nopCloser{&b}
	switch compression {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "zstd":
		zw, err := zstd.NewWriter(&b, zstd.WithWindowSize(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg, Format: format}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

const (
	fuzzBuildID = "0123456789abcdef0123456789abcdef01234567"
	keptSource  = "/src/kept.c"
	keptBody    = "int kept;\n"
	// fuzzMaxFile is --max-debug-file for the fuzz target: over an
	// archive of two 1 MiB PAX names, so the name bound is what refuses
	// it.
	fuzzMaxFile = 4 << 20
)

// FuzzSourceArchive feeds source archives (tar, plain, gzip or zstd) to
// the source upload of a build ID that already has a source file: the
// reader that once turned 1 MiB PAX names into a 1 GB index. Whatever
// the archive, the upload returns (no panic, no hang), gives back the
// memory it took, and leaves the build ID's index readable. A refused
// archive is a RefusedError with its reason (or the memory's own error)
// and leaves the store as it was; a stored one's files each open with
// their size, their paths within PATH_MAX, and no object of the upload
// is left out of the index.
func FuzzSourceArchive(f *testing.F) {
	file := func(name, body string) [2]string { return [2]string{name, body} }
	plain := sourceArchive(f, tar.FormatUSTAR, "", file("src/main.c", "int main(void) { return 0; }\n"), file("src/a.h", "#define A 1\n"))
	f.Add(plain)
	f.Add(sourceArchive(f, tar.FormatPAX, "gzip", file("/home/me/app/main.c", "int main;\n"), file("home/me/app/../app/b.c", "int b;\n")))
	f.Add(sourceArchive(f, tar.FormatGNU, "zstd", file("src/kept.c", "int replaced;\n"), file("src/z.c", "")))
	// The attack's shape: PAX names of 1 MiB (the tar reader's bound for
	// a header) in a small gzip; a name at PATH_MAX and one past it.
	long := func(n int) string { return "src/" + strings.Repeat("a", n-4) }
	f.Add(sourceArchive(f, tar.FormatPAX, "gzip", file(long(1<<20-1024), ""), file(long(1<<20-1024)+"b", "")))
	f.Add(sourceArchive(f, tar.FormatPAX, "", file(long(maxSourcePath-1), "x"), file(long(maxSourcePath+1), "y")))
	f.Add(sourceArchive(f, tar.FormatGNU, "", file(long(8192), "gnu long name")))
	// Many entries, and the same path twice.
	var many [][2]string
	for i := range 300 {
		many = append(many, file(fmt.Sprintf("src/%04d.c", i), ""))
	}
	many = append(many, file("src/0000.c", "again"))
	f.Add(sourceArchive(f, tar.FormatUSTAR, "gzip", many...))
	// Cut short: in a header, in a file's body, in the compressed stream.
	f.Add(plain[:700])
	f.Add(plain[:1100])
	gz := sourceArchive(f, tar.FormatPAX, "gzip", file("src/cut.c", strings.Repeat("int cut;\n", 200)))
	f.Add(gz[:len(gz)/2])
	zs := sourceArchive(f, tar.FormatPAX, "zstd", file("src/cut.c", strings.Repeat("int cut;\n", 200)))
	f.Add(zs[:len(zs)/2])
	f.Add([]byte{})
	kept := sourceArchive(f, tar.FormatUSTAR, "", file(keptSource, keptBody))

	ctx := context.Background()
	f.Fuzz(func(t *testing.T, archive []byte) {
		st := newMemStore()
		meta, _ := json.Marshal(Entry{BuildID: fuzzBuildID, Kind: "debuginfo"})
		st.objects[metaKey(fuzzBuildID, symbolize.KindDebuginfo)] = meta
		s := New(Config{Store: st, MaxFile: fuzzMaxFile})
		if _, err := s.PutSources(ctx, fuzzBuildID, bytes.NewReader(kept), "kept.tar", nil, false); err != nil {
			t.Fatal(err)
		}
		before := st.keys()
		// 16 MiB: the base and a zstd window of up to about 12 MiB.
		mem := &countedMemory{size: 16 << 20}
		n, err := s.PutSources(ctx, fuzzBuildID, bytes.NewReader(archive), "fuzz.tar", mem, false)
		if mem.held != 0 {
			t.Errorf("the upload returned (%d, %v) holding %d bytes of memory", n, err, mem.held)
		}
		ix, ierr := s.sources(ctx, fuzzBuildID)
		if ierr != nil {
			t.Fatalf("after the upload (%d, %v) the index cannot be read, so no source of the build ID is served: %v", n, err, ierr)
		}
		if err != nil {
			var ce *ConflictError
			if re, ok := IsRefused(err); ok && re.Reason == "" {
				t.Errorf("a refusal without its reason: %#v", re)
			} else if !ok && !errors.Is(err, errNoMemory) && !errors.As(err, &ce) {
				t.Errorf("an archive's failure is neither refused nor the memory's: %v", err)
			}
			if n != 0 {
				t.Errorf("%d files and an error: %v", n, err)
			}
			if after := st.keys(); !slices.Equal(after, before) {
				t.Errorf("the refused archive (%v) changed the store:\nbefore %q\nafter  %q", err, before, after)
			}
			sf, oerr := s.openSource(ctx, fuzzBuildID, keptSource)
			if oerr != nil {
				t.Fatalf("after a refused archive, the kept source: %v", oerr)
			}
			sf.Close()
			return
		}
		if n <= 0 {
			t.Errorf("stored with %d files", n)
		}
		if len(ix.Files) > maxSourceFiles {
			t.Errorf("%d files in the index, over %d", len(ix.Files), maxSourceFiles)
		}
		referenced := map[string]bool{}
		var total int64
		for p, e := range ix.Files {
			if len(p) > maxSourcePath+1 { // cleanSource's leading "/"
				t.Errorf("a path of %d bytes in the index", len(p))
			}
			referenced[e.Object] = true
			if cleanSource(p) != p {
				t.Errorf("%q is in the index, where a request for it looks up %q", p, cleanSource(p))
			}
			sf, oerr := s.openObject(ctx, e.Object)
			if oerr != nil {
				t.Errorf("%q is in the index, and opening it: %v", p, oerr)
				continue
			}
			b, _ := io.ReadAll(sf)
			sf.Close()
			if int64(len(b)) != e.Size {
				t.Errorf("%q: %d bytes stored, the index says %d", p, len(b), e.Size)
			}
			total += int64(len(b))
		}
		if total > fuzzMaxFile+int64(len(keptBody)) {
			t.Errorf("%d bytes of sources stored, over --max-debug-file (%d)", total, fuzzMaxFile)
		}
		for _, k := range st.keys() {
			if strings.HasPrefix(k, prefix+fuzzBuildID+"/src-") && !referenced[k] {
				t.Errorf("%s is stored and in no index", k)
			}
		}
	})
}

// TestDamagedArchiveRefused: a gzip stream damaged within a file's
// contents is refused as damaged, naming the file, and leaves the store
// as it was (FuzzSourceArchive found it: the store's read error was
// returned as it was, which the server answered 500).
func TestDamagedArchiveRefused(t *testing.T) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "src/damaged.c", Mode: 0o644, Size: 4096, Typeflag: tar.TypeReg})
	tw.Write(bytes.Repeat([]byte("int damaged;\n"), 4096/13+1)[:4096])
	tw.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(tb.Bytes()[:512+1024]) // the header and a quarter of the file
	zw.Flush()                      // byte-aligned: the next block starts here
	// A final block of the reserved type 11: flate's "corrupt input".
	damaged := append(gz.Bytes(), 0x07, 0, 0, 0)

	st := newMemStore()
	meta, _ := json.Marshal(Entry{BuildID: fuzzBuildID, Kind: "debuginfo"})
	st.objects[metaKey(fuzzBuildID, symbolize.KindDebuginfo)] = meta
	s := New(Config{Store: st})
	before := st.keys()
	_, err := s.PutSources(context.Background(), fuzzBuildID, bytes.NewReader(damaged), "damaged.tar.gz", nil, false)
	if re, ok := IsRefused(err); !ok || !strings.Contains(re.Reason, "damaged within /src/damaged.c") {
		t.Errorf("a gzip stream damaged within a file: %v; want refused as damaged within /src/damaged.c", err)
	}
	if after := st.keys(); !slices.Equal(after, before) {
		t.Errorf("the damaged archive changed the store: %q, was %q", after, before)
	}
}

// TestSourceFirstFileWins uploads a build ID's source file, then the
// same bytes, then other bytes at its path: the same bytes are no error
// and keep the file; other bytes are a conflict naming the path and the
// kept digest, store nothing of their archive, and leave the first file
// served, unless the upload may replace (a server with a token). Without
// it, anyone could replace the sources gdb and debuginfod-find are given.
func TestSourceFirstFileWins(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	meta, _ := json.Marshal(Entry{BuildID: fuzzBuildID, Kind: "debuginfo"})
	st.objects[metaKey(fuzzBuildID, symbolize.KindDebuginfo)] = meta
	s := New(Config{Store: st, MaxFile: fuzzMaxFile})
	put := func(body string, replace bool) error {
		archive := sourceArchive(t, tar.FormatPAX, "gzip", [2]string{"home/ci/a.c", body}, [2]string{"home/ci/b.c", "int b;\n"})
		_, err := s.PutSources(ctx, fuzzBuildID, bytes.NewReader(archive), "src.tar.gz", nil, replace)
		return err
	}
	served := func() string {
		t.Helper()
		f, err := s.openSource(ctx, fuzzBuildID, "/home/ci/a.c")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := put("int x;\n", false); err != nil {
		t.Fatal(err)
	}
	before := st.keys()
	if err := put("int x;\n", false); err != nil {
		t.Errorf("the same bytes again: %v", err)
	}
	if after := st.keys(); !slices.Equal(after, before) {
		t.Errorf("the same bytes again changed the store:\nbefore %q\nafter  %q", before, after)
	}
	err := put("FORGED\n", false)
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "/home/ci/a.c") || ce.SHA256 == "" {
		t.Fatalf("other bytes at a stored path: %v, want a conflict naming /home/ci/a.c and its digest", err)
	}
	if after := st.keys(); !slices.Equal(after, before) {
		t.Errorf("the refused archive changed the store:\nbefore %q\nafter  %q", before, after)
	}
	if got := served(); got != "int x;\n" {
		t.Errorf("after a refused upload, a.c is %q", got)
	}
	if err := put("int y;\n", true); err != nil {
		t.Fatalf("replacing with a token: %v", err)
	}
	if got := served(); got != "int y;\n" {
		t.Errorf("after a replacing upload, a.c is %q", got)
	}
}
