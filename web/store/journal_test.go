package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// journalFiles lists the journal files in root.
func journalFiles(t *testing.T, root string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(root, journalPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDirJournalReplay: what a power loss can leave of a journaled write
// whose files were never synced (its folder gone, a file zeroed, an
// index entry gone, a record cut off after it) is whole again after the
// next start, and the journal is emptied; a write that replaced a
// journaled object after it is not undone by the replay.
func TestDirJournalReplay(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	put := func(id, meta, prof string) {
		t.Helper()
		err := PutAllIndexed(ctx, d, []Object{
			{Key: id + "/meta.json", Body: bytes.NewReader([]byte(meta))},
			{Key: id + "/profile.pb.gz", Body: bytes.NewReader([]byte(prof))},
		}, []string{"services/app/1-" + id})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("p3", `{"p":3}`, "pprof 3")
	if d.journal.size == 0 {
		t.Fatal("the write was not journaled")
	}
	// p3's meta.json is replaced after its write: settled first (without
	// that, the replay below would write the journaled one back).
	if err := d.Put(ctx, "p3/meta.json", strings.NewReader(`{"p":"3 again"}`)); err != nil {
		t.Fatal(err)
	}
	put("p1", `{"p":1}`, "pprof 1")
	put("p2", `{"p":2}`, strings.Repeat("pprof 2 ", 1000))
	put("p4", `{"p":4}`, "pprof 4")
	// The losses.
	if err := os.RemoveAll(filepath.Join(root, "p1")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "p2", "profile.pb.gz"), make([]byte, 8000), 0o644)
	os.Remove(filepath.Join(root, "services", "app", "1-p4"))
	js := journalFiles(t, root)
	f, err := os.OpenFile(js[len(js)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(journalMagic + "\x01\x00"))
	f.Close()

	d2, err := NewDir(root) // the start after the power loss
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"p1/meta.json": `{"p":1}`, "p1/profile.pb.gz": "pprof 1", "services/app/1-p1": "",
		"p2/profile.pb.gz": strings.Repeat("pprof 2 ", 1000),
		"p3/meta.json":     `{"p":"3 again"}`, "p3/profile.pb.gz": "pprof 3",
		"p4/meta.json": `{"p":4}`, "services/app/1-p4": "",
	} {
		got, err := ReadAll(ctx, d2, key, 0)
		if err != nil || string(got) != want {
			t.Errorf("%s after the restart = %.40q, %v; want %.40q", key, got, err, want)
		}
	}
	if js := journalFiles(t, root); len(js) != 0 {
		t.Errorf("journal files after the restart: %q, want none until a write", js)
	}
	if keys, err := d2.List(ctx, ""); err != nil || strings.Contains(strings.Join(keys, " "), journalPrefix) {
		t.Errorf("List lists the journal: %q, %v", keys, err)
	}
}

// TestDirJournalConcurrent: concurrent journaled writes, with checkpoints
// running beside them, are each there when acknowledged and after a
// restart, and the checkpoints leave one journal file.
func TestDirJournalConcurrent(t *testing.T) {
	defer func(n int64) { journalLimit = n }(journalLimit)
	journalLimit = 2 << 10
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	body := func(i int) string { return strings.Repeat(fmt.Sprint(i, " "), 100+i) }
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 96; i += 8 {
				id := fmt.Sprintf("p%d", i)
				err := PutAllIndexed(ctx, d, []Object{
					{Key: id + "/meta.json", Body: strings.NewReader("{}")},
					{Key: id + "/profile.pb.gz", Body: strings.NewReader(body(i))},
				}, []string{"services/app/" + id})
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := ReadAll(ctx, d, id+"/profile.pb.gz", 0); err != nil || string(got) != body(i) {
					t.Errorf("%s once acknowledged: %.20q, %v", id, got, err)
				}
			}
		})
	}
	wg.Wait()
	if err := d.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if js := journalFiles(t, root); len(js) != 0 {
		t.Errorf("journal files after the last checkpoint: %q", js)
	}
	if len(d.journal.keys) != 0 {
		t.Errorf("%d keys still journaled after a checkpoint", len(d.journal.keys))
	}
	d2, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 96 {
		id := fmt.Sprintf("p%d", i)
		if got, err := ReadAll(ctx, d2, id+"/profile.pb.gz", 0); err != nil || string(got) != body(i) {
			t.Errorf("%s after the restart: %.20q, %v", id, got, err)
		}
		if ok, err := Exists(ctx, d2, "services/app/"+id); !ok || err != nil {
			t.Errorf("services/app/%s after the restart: %v, %v", id, ok, err)
		}
	}
}

// TestDirEmptyObjectsShareOneFile: empty objects (index entries) are
// links of one empty file, so they take no inode each; writing bytes to
// one of them leaves the others empty, and List lists none of the
// store's own files.
func TestDirEmptyObjectsShareOneFile(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "services/app/1-a", strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	if err := PutAllIndexed(ctx, d, []Object{{Key: "b/meta.json", Body: strings.NewReader("{}")}, {Key: "b/profile.pb.gz", Body: strings.NewReader("x")}}, []string{"services/app/2-b", "services/other/2-b"}); err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(filepath.Join(root, "services", "app", "1-a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"services/app/2-b", "services/other/2-b"} {
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(k))); err != nil || !os.SameFile(fi, first) {
			t.Errorf("%s is not a link of the one empty file (%v)", k, err)
		}
	}
	if err := d.Put(ctx, "services/app/1-a", strings.NewReader("bytes")); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"services/app/1-a": "bytes", "services/app/2-b": "", "services/other/2-b": ""} {
		if got, err := ReadAll(ctx, d, k, 0); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", k, got, err, want)
		}
	}
	keys, err := d.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{"b/meta.json", "b/profile.pb.gz", "services/app/1-a", "services/app/2-b", "services/other/2-b"}; !slices.Equal(keys, want) {
		t.Errorf("List = %q, want %q", keys, want)
	}
}
