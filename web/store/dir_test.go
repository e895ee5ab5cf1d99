package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

func TestDirPutAll(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	objs := func(a, b string) []Object {
		return []Object{{Key: "abc/meta.json", Body: strings.NewReader(a)}, {Key: "abc/profile.pb.gz", Body: strings.NewReader(b)}}
	}
	// A new folder: both objects appear, and nothing temporary is left.
	if err := PutAll(ctx, d, objs("{}", "pprof")); err != nil {
		t.Fatal(err)
	}
	// The folder exists now: the objects are replaced one by one.
	if err := PutAll(ctx, d, objs(`{"n":2}`, "pprof 2")); err != nil {
		t.Fatal(err)
	}
	// Keys in different folders are Put one by one.
	if err := PutAll(ctx, d, []Object{{Key: "x/a", Body: strings.NewReader("1")}, {Key: "y/b", Body: strings.NewReader("2")}}); err != nil {
		t.Fatal(err)
	}
	d2, err := NewDir(root) // a restart
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"abc/meta.json": `{"n":2}`, "abc/profile.pb.gz": "pprof 2", "x/a": "1", "y/b": "2"} {
		got, err := ReadAll(ctx, d2, key, 0)
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", key, got, err, want)
		}
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "abc", "meta.json")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("meta.json: %v, %v; want mode 0644 like Put's", fi.Mode(), err)
	}
	// Two objects of one key in a new folder are refused, and leave nothing.
	err = PutAll(ctx, d, []Object{{Key: "dup/a", Body: strings.NewReader("1")}, {Key: "dup/a", Body: strings.NewReader("2")}})
	if err == nil {
		t.Error("PutAll of one key twice: no error")
	}
	if _, err := os.Stat(filepath.Join(root, "dup")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed PutAll left its folder: %v", err)
	}
}

// TestDirSweepsTempFolders: a PutAll a crash interrupted leaves a
// temporary folder; it is never listed, and the next start removes it.
func TestDirSweepsTempFolders(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	tmp := filepath.Join(root, tempPrefix+"dir-0123")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "meta.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "services", tempPrefix+"dir-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "services", tempPrefix+"dir-1", "e"), nil, 0o644)
	d := &Dir{root: root}
	if keys, err := d.List(ctx, "services/"); err != nil || len(keys) != 0 {
		t.Errorf("List lists a temporary folder's files: %q, %v", keys, err)
	}
	if _, err := NewDir(root); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tmp, filepath.Join(root, "services", tempPrefix+"dir-1")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived the start: %v", p, err)
		}
	}
}

// TestDirConcurrentPuts: writers into one folder share its syncs, and
// every write (empty index entries and files) is there afterwards.
// TestDirPutAllIndexed: a new folder's objects and their index entries
// (empty objects in other, new, folders) are all there once it returns,
// also after a restart, with nothing temporary left and no sync record
// kept; the folder existing already, or an entry holding bytes, take the
// one-by-one path; and an invalid index key writes nothing.
func TestDirPutAllIndexed(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	objs := func(id, a, b string) []Object {
		return []Object{{Key: id + "/meta.json", Body: strings.NewReader(a)}, {Key: id + "/profile.pb.gz", Body: strings.NewReader(b)}}
	}
	if err := PutAllIndexed(ctx, d, objs("p1", "{}", "pprof"), []string{"services/app/1-p1", "services/other/1-p1"}); err != nil {
		t.Fatal(err)
	}
	if err := PutAllIndexed(ctx, d, objs("p1", "{}", "pprof again"), []string{"services/app/2-p1"}); err != nil {
		t.Fatal(err) // the folder exists: one by one
	}
	if err := d.Put(ctx, "services/app/3-p2", strings.NewReader("bytes")); err != nil {
		t.Fatal(err)
	}
	if err := PutAllIndexed(ctx, d, objs("p2", "{}", "pprof 2"), []string{"services/app/3-p2", "services/app/1-p1"}); err != nil {
		t.Fatal(err) // an entry with bytes is emptied, an empty one kept
	}
	if err := PutAllIndexed(ctx, d, objs("p3", "{}", "x"), []string{"services/../up"}); err == nil {
		t.Error("an invalid index key: no error")
	}
	if _, err := os.Stat(filepath.Join(root, "p3")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PutAllIndexed with an invalid index key wrote its folder: %v", err)
	}
	// The new folders' syncs are the journal's checkpoint's.
	if err := d.checkpoint(); err != nil {
		t.Fatal(err)
	}
	d2, err := NewDir(root) // a restart
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"p1/profile.pb.gz": "pprof again", "p2/profile.pb.gz": "pprof 2", "p2/meta.json": "{}",
		"services/app/1-p1": "", "services/other/1-p1": "", "services/app/2-p1": "", "services/app/3-p2": ""} {
		got, err := ReadAll(ctx, d2, key, 0)
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", key, got, err, want)
		}
	}
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), tempPrefix) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
	if len(d.syncs.m) != 0 {
		t.Errorf("%d directory sync records kept after the writers left", len(d.syncs.m))
	}
	for _, dir := range []string{"services", "services/app", "services/other", "p1", "p2"} {
		if !d.durable.Contains(filepath.Join(root, dir)) {
			t.Errorf("%s: its entry in its parent was not synced", dir)
		}
	}
}

func TestDirConcurrentPuts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			if err := d.Put(ctx, fmt.Sprintf("services/app/entry-%d", i), strings.NewReader("")); err != nil {
				t.Error(err)
			}
			if err := d.Put(ctx, fmt.Sprintf("p%d/data", i), strings.NewReader(strings.Repeat("x", i*1000))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	keys, err := d.List(ctx, "services/")
	if err != nil || len(keys) != 32 {
		t.Fatalf("%d entries, %v; want 32", len(keys), err)
	}
	for i := range 32 {
		if info, err := d.Stat(ctx, fmt.Sprintf("p%d/data", i)); err != nil || info.Size != int64(i*1000) {
			t.Errorf("p%d/data: %+v, %v", i, info, err)
		}
	}
	// An empty object put over a stored one replaces it, and the other
	// way round.
	if err := d.Put(ctx, "p3/data", strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "services/app/entry-1", strings.NewReader("now full")); err != nil {
		t.Fatal(err)
	}
	if b, _ := ReadAll(ctx, d, "p3/data", 0); len(b) != 0 {
		t.Errorf("p3/data holds %d bytes, want 0", len(b))
	}
	if b, _ := ReadAll(ctx, d, "services/app/entry-1", 0); string(b) != "now full" {
		t.Errorf("entry-1 = %q", b)
	}
	if len(d.syncs.m) != 0 {
		t.Errorf("%d directory sync records kept after the writers left", len(d.syncs.m))
	}
}

// BenchmarkDirIntake writes what the OTLP intake stores per profile, from
// 8 writers at once as its 8 clients do: a new folder of two files
// (meta.json and a 40 KB profile) and an empty index entry in a shared
// folder, written with it (PutAllIndexed); it reports the median and
// 90th percentile of the wall time a writer waited per profile (the
// store's part of a request's latency), one writer alone and 8 at once,
// and the process's CPU per profile.
//
//	go test -run '^$' -bench DirIntake -benchtime 400x ./web/store/
func BenchmarkDirIntake(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchDirIntake(b, writers) })
	}
}

func benchDirIntake(b *testing.B, writers int) {
	ctx := context.Background()
	d, err := NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	meta, prof := bytes.Repeat([]byte("m"), 600), bytes.Repeat([]byte("p"), 40<<10)
	next := make(chan int, b.N)
	for i := range b.N {
		next <- i
	}
	close(next)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		waited  []time.Duration
		rusage0 = cpuTime()
	)
	b.ResetTimer()
	for range writers {
		wg.Go(func() {
			for i := range next {
				t0 := time.Now()
				id := fmt.Sprintf("%064x", i)
				if err := PutAllIndexed(ctx, d, []Object{{Key: id + "/meta.json", Body: bytes.NewReader(meta)}, {Key: id + "/profile.pb.gz", Body: bytes.NewReader(prof)}},
					[]string{fmt.Sprintf("services/app/%019d-%s-10", i, id)}); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				waited = append(waited, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(waited)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(waited[len(waited)/2]), "p50-ms")
	b.ReportMetric(ms(waited[len(waited)*9/10]), "p90-ms")
	b.ReportMetric(float64((cpuTime()-rusage0).Microseconds())/1000/float64(b.N), "cpu-ms/profile")
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
