package web

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/web/flame"
)

// TestUploadBuildsFirstView checks that a pprof upload answers with its
// first view already cached (the default sample type's stacks and whole
// flame.json, built while the copy was stored), that flame.json then
// serves exactly what building it on request gives, that a perf.data
// upload's is cached too, and that a folded upload is left to build on
// request.
func TestUploadBuildsFirstView(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	l, ok := s.prof.Cached(id)
	if !ok {
		t.Fatal("the uploaded profile is not kept for its first view")
	}
	si, err := resolveSI(l.Meta, "")
	if err != nil {
		t.Fatal(err)
	}
	key := treeKey{id: id, variant: l.Variant(), si: si, kind: "stacks"}
	if _, ok := s.stacks.Get(key); !ok {
		t.Error("no stacks cached for the default sample type after the upload")
	}
	key.kind = "json"
	cached, ok := s.trees.Get(key)
	if !ok {
		t.Fatal("no flame.json cached after the upload")
	}
	var want []byte
	if err := s.render(t.Context(), func(opt flame.Options) {
		want = wholeTreeJSON(newStacks(l.Profile, si, opt), opt)
	}); err != nil {
		t.Fatal(err)
	}
	got := get(t, ts.URL+"/p/"+id+"/flame.json", "Accept-Encoding", "identity") // the plain body's ETag
	if got.status != 200 || !bytes.Equal(got.body, want) || !bytes.Equal(cached.plain, want) {
		t.Fatalf("flame.json: status %d, %.300s; built on request: %.300s", got.status, got.body, want)
	}
	if e := got.header.Get("ETag"); e != treeETag(key, flame.Filter{}) {
		t.Errorf("ETag %s, want %s", e, treeETag(key, flame.Filter{}))
	}

	perf, err := os.ReadFile("../testdata/perf/fp.data")
	if err != nil {
		t.Fatal(err)
	}
	id = upload(t, ts.URL, perf)
	if l, ok = s.prof.Cached(id); !ok {
		t.Fatal("the perf.data upload is not kept for its first view")
	}
	if si, err = resolveSI(l.Meta, ""); err != nil {
		t.Fatal(err)
	}
	key = treeKey{id: id, variant: l.Variant(), si: si, kind: "json"}
	if cached, ok = s.trees.Get(key); !ok {
		t.Fatal("no flame.json cached after the perf.data upload")
	}
	if err := s.render(t.Context(), func(opt flame.Options) {
		want = wholeTreeJSON(newStacks(l.Profile, si, opt), opt)
	}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, ts.URL+"/p/"+id+"/flame.json"); got.status != 200 || !bytes.Equal(got.body, want) || !bytes.Equal(cached.plain, want) {
		t.Fatalf("perf.data flame.json: status %d, %.300s; built on request: %.300s", got.status, got.body, want)
	}

	id = upload(t, ts.URL, []byte("main;work 3\nmain 4\n"))
	l, ok = s.prof.Cached(id)
	if !ok {
		t.Fatal("the folded upload is not kept for its first view")
	}
	if _, ok := s.trees.Get(treeKey{id: id, variant: l.Variant(), si: 0, kind: "json"}); ok {
		t.Error("a folded upload's flame.json was built at upload; only pprof's is")
	}
}

// TestFirstViewTakesIngestMemory checks the first view is built at upload
// only when its memory is free in the ingest budget: with the budget
// taken by other uploads it is left to the first request.
func TestFirstViewTakesIngestMemory(t *testing.T) {
	s, _ := newTestServer(t, Config{})
	p := testProfile()
	give, ok := s.limits.Memory.TryTake(s.limits.Memory.Size() - firstViewMemory(p) + 1)
	if !ok {
		t.Fatal("an idle budget refused a share")
	}
	if v := s.buildFirstView(t.Context(), p, "pprof"); v != nil {
		t.Error("the first view was built with its memory taken by others")
	}
	give()
	v := s.buildFirstView(t.Context(), p, "pprof")
	if v == nil || len(v.json) == 0 {
		t.Fatal("no first view built with the budget free")
	}
	// Its share was given back.
	if give, ok := s.limits.Memory.TryTake(s.limits.Memory.Size()); !ok {
		t.Error("the first view kept its share of the budget")
	} else {
		give()
	}
}

// TestDropViewsDropsEveryCache checks that invalidating a profile (a
// symbolized copy arriving) drops its annotate listings and data-type
// results with its trees, and keeps other profiles' views.
func TestDropViewsDropsEveryCache(t *testing.T) {
	s, _ := newTestServer(t, Config{})
	for _, id := range []string{"gone", "kept"} {
		s.annotations.Add(annotateKey{id: id, fn: "main"}, &symbolize.Listing{})
		s.types.results.Add(typesKey{id: id}, &typesResult{})
		s.trees.Add(treeKey{id: id, kind: "json"}, &encoded{})
	}
	s.dropViews("gone")
	if _, ok := s.annotations.Get(annotateKey{id: "gone", fn: "main"}); ok {
		t.Error("the invalidated profile's annotate listing is still cached")
	}
	if _, ok := s.types.results.Get(typesKey{id: "gone"}); ok {
		t.Error("the invalidated profile's data types are still cached")
	}
	if _, ok := s.trees.Get(treeKey{id: "gone", kind: "json"}); ok {
		t.Error("the invalidated profile's flame.json is still cached")
	}
	_, a := s.annotations.Get(annotateKey{id: "kept", fn: "main"})
	_, ty := s.types.results.Get(typesKey{id: "kept"})
	_, tr := s.trees.Get(treeKey{id: "kept", kind: "json"})
	if !a || !ty || !tr {
		t.Errorf("another profile's views were dropped: listing %v, types %v, tree %v", a, ty, tr)
	}
}

// TestSweepSpoolLeftovers: a server starting removes the spool files a
// killed server left in its spool directory a day ago or more, and keeps
// younger ones (another server's uploads in progress) and other files.
func TestSweepSpoolLeftovers(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-spoolGrace - time.Hour)
	write := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("body"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{write("viewer-upload-1", old), write("viewer-inflate-2", old), write("viewer-perf-records-3", old)}
	kept := []string{write("viewer-upload-4", time.Now()), write("unrelated-5", old)}
	newTestServer(t, Config{Limits: Limits{SpoolDir: dir}})
	for _, p := range gone {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s, a day old, is still there after start-up", filepath.Base(p))
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}

// TestUploadKeepsDocURL uploads a profile that sets doc_url, as `go tool
// pprof` reads it ("Doc: URL"), and checks it is stored and downloaded
// with it: it was refused as not a recognised profile.
func TestUploadKeepsDocURL(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	p := testProfile()
	p.DocURL = "https://example.com/doc"
	id := upload(t, ts.URL, encodeProfile(t, p, true))
	got := get(t, ts.URL+"/p/"+id+"/profile.pb.gz")
	dl, err := profile.ParseData(got.body)
	if got.status != 200 || err != nil {
		t.Fatalf("download: status %d, %v", got.status, err)
	}
	if dl.DocURL != p.DocURL {
		t.Errorf("downloaded doc_url %q; want %q", dl.DocURL, p.DocURL)
	}
}
