package debuginfod_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
)

func TestRealServerHitAndCacheLayout(t *testing.T) {
	t.Parallel()
	srv := debuginfodtest.Start(t, filesDir)
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	ctx := context.Background()

	var rec recorder
	path, err := c.Fetch(ctx, strings.ToUpper(helloID), debuginfod.KindDebuginfo, rec.add)
	if err != nil {
		t.Fatalf("Fetch debuginfo: %v", err)
	}
	mustMatch(t, path, testFile(t, "hello.debug"))
	want := filepath.Join(c.CacheDir(), helloID, "debuginfo")
	if path != want {
		t.Errorf("path %s, want the elfutils layout %s", path, want)
	}
	if got := rec.phases(); len(got) < 4 || got[0] != debuginfod.PhaseConnecting || got[len(got)-1] != debuginfod.PhaseDone {
		t.Errorf("phases %s, want connecting … downloading … verifying … done", phaseList(got))
	}
	if p := rec.last(); p.Server != srv.URL || p.Path != path || p.Bytes != int64(len(testFile(t, "hello.debug"))) {
		t.Errorf("final progress %+v, want the server, Path %s and the size", p, path)
	}
	for _, p := range rec.ps {
		if p.Phase == debuginfod.PhaseDownloading && (p.Server != srv.URL || p.Total != int64(len(testFile(t, "hello.debug")))) {
			t.Errorf("downloading progress %+v: want server %s and total from Content-Length", p, srv.URL)
		}
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o400 {
		t.Errorf("cached file mode %v, want 0400", st.Mode().Perm())
	}
	dst, _ := os.Stat(filepath.Dir(path))
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("build-ID directory mode %v, want 0700", dst.Mode().Perm())
	}
	for _, f := range []string{"cache_clean_interval_s", "max_unused_age_s", "cache_miss_s"} {
		if _, err := os.Stat(filepath.Join(c.CacheDir(), f)); err != nil {
			t.Errorf("control file %s not created: %v", f, err)
		}
	}

	exe, err := c.Fetch(ctx, helloID, debuginfod.KindExecutable, nil)
	if err != nil {
		t.Fatalf("Fetch executable: %v", err)
	}
	mustMatch(t, exe, testFile(t, "hello"))

	before := srv.Requests(helloID)
	if before != 2 {
		t.Errorf("server saw %d requests for %s, want 2", before, helloID)
	}
	var hit recorder
	again, err := c.Fetch(ctx, helloID, debuginfod.KindDebuginfo, hit.add)
	if err != nil || again != path {
		t.Fatalf("second fetch: %q, %v; want %s", again, err, path)
	}
	if got := hit.phases(); len(got) != 1 || got[0] != debuginfod.PhaseCacheHit {
		t.Errorf("second fetch phases %s, want only cache hit", phaseList(got))
	}
	// A new client (no memo) finds it on disk, with no server at all.
	cacheOnly := newClient(t, debuginfod.Config{CacheDir: c.CacheDir()})
	if p, err := cacheOnly.Fetch(ctx, helloID, debuginfod.KindDebuginfo, nil); err != nil || p != path {
		t.Errorf("cache-only client: %q, %v; want %s", p, err, path)
	}
	if p, ok := cacheOnly.Cached(helloID, debuginfod.KindExecutable); !ok || p != exe {
		t.Errorf("Cached(executable) = %q, %v; want %s", p, ok, exe)
	}
	if n := srv.Requests(helloID); n != before {
		t.Errorf("cache hits sent %d more requests", n-before)
	}
	for _, r := range srv.AllRequests() {
		if !strings.HasPrefix(r.Header.Get("User-Agent"), "viewer/") {
			t.Errorf("request %s sent User-Agent %q, want one naming viewer", r.Path, r.Header.Get("User-Agent"))
		}
	}
}

func TestRealServerMissWritesNegativeEntry(t *testing.T) {
	t.Parallel()
	srv := debuginfodtest.Start(t, filesDir)
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	ctx := context.Background()

	var rec recorder
	_, err := c.Fetch(ctx, absentID, debuginfod.KindDebuginfo, rec.add)
	if !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatalf("Fetch of an unknown build ID: %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("error %q does not name the server asked", err)
	}
	if p := rec.last(); p.Phase != debuginfod.PhaseNotFound {
		t.Errorf("last phase %q, want not found", p.Phase)
	}
	neg := filepath.Join(c.CacheDir(), absentID, "debuginfo")
	st, err := os.Stat(neg)
	if err != nil || st.Size() != 0 {
		t.Fatalf("negative entry %s: %v (size %d), want a 0-byte file", neg, err, sizeOf(st))
	}
	if n := srv.Requests(absentID); n != 1 {
		t.Fatalf("server saw %d requests, want 1", n)
	}

	// A fresh client (no memo) honours the negative entry: no request.
	c2 := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: c.CacheDir()})
	if _, err := c2.Fetch(ctx, absentID, debuginfod.KindDebuginfo, nil); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatalf("second fetch: %v, want ErrNotFound from the negative entry", err)
	}
	if n := srv.Requests(absentID); n != 1 {
		t.Fatalf("negative entry not honoured: server saw %d requests", n)
	}
	// Once older than cache_miss_s it is asked again.
	old := time.Now().Add(-11 * time.Minute)
	if err := os.Chtimes(neg, old, old); err != nil {
		t.Fatal(err)
	}
	c3 := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: c.CacheDir()})
	if _, err := c3.Fetch(ctx, absentID, debuginfod.KindDebuginfo, nil); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatalf("third fetch: %v", err)
	}
	if n := srv.Requests(absentID); n != 2 {
		t.Fatalf("stale negative entry: server saw %d requests, want 2", n)
	}
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return -1
	}
	return st.Size()
}

// The cache is shared with elfutils' debuginfod-find both ways: a file one
// fetched is used by the other without a request.
func TestCacheSharedWithElfutils(t *testing.T) {
	t.Parallel()
	find := debuginfodtest.NeedTool(t, "debuginfod-find", "debuginfod")
	srv := debuginfodtest.Start(t, filesDir)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	env := append(os.Environ(), "DEBUGINFOD_URLS="+srv.URL, "DEBUGINFOD_CACHE_PATH="+cacheDir, "DEBUGINFOD_PROGRESS=")
	runFind := func(args ...string) (string, error) {
		cmd := exec.Command(find, args...)
		cmd.Env = env
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			return "", errors.New(strings.TrimSpace(string(ee.Stderr)))
		}
		return strings.TrimSpace(string(out)), err
	}
	ctx := context.Background()
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})

	// elfutils fetches, we reuse.
	theirs, err := runFind("debuginfo", helloID)
	if err != nil {
		t.Fatalf("debuginfod-find debuginfo: %v", err)
	}
	if srv.Requests(helloID) != 1 {
		t.Fatalf("debuginfod-find made %d requests, want 1", srv.Requests(helloID))
	}
	ours, err := c.Fetch(ctx, helloID, debuginfod.KindDebuginfo, nil)
	if err != nil || ours != theirs {
		t.Fatalf("our fetch after debuginfod-find: %q, %v; want its file %s", ours, err, theirs)
	}
	if n := srv.Requests(helloID); n != 1 {
		t.Errorf("we asked the server again (%d requests) for a file debuginfod-find cached", n)
	}

	// We fetch, elfutils reuses.
	ours, err = c.Fetch(ctx, otherID, debuginfod.KindExecutable, nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err = runFind("executable", otherID)
	if err != nil || theirs != ours {
		t.Fatalf("debuginfod-find after our fetch: %q, %v; want our file %s", theirs, err, ours)
	}
	if n := srv.Requests(otherID); n != 1 {
		t.Errorf("debuginfod-find asked again (%d requests) for a file we cached", n)
	}

	// Our negative entry stops debuginfod-find too, and theirs stops us.
	if _, err := c.Fetch(ctx, absentID, debuginfod.KindDebuginfo, nil); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := runFind("debuginfo", absentID); err == nil {
		t.Fatal("debuginfod-find found a file no server has")
	}
	if n := srv.Requests(absentID); n != 1 {
		t.Errorf("debuginfod-find ignored our negative entry: %d requests", n)
	}
	const absent2 = "00112233445566778899aabbccddeeff00112233"
	if _, err := runFind("executable", absent2); err == nil {
		t.Fatal("debuginfod-find found a file no server has")
	}
	c2 := newClient(t, debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cacheDir})
	if _, err := c2.Fetch(ctx, absent2, debuginfod.KindExecutable, nil); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatalf("after debuginfod-find's miss: %v, want ErrNotFound", err)
	}
	if n := srv.Requests(absent2); n != 1 {
		t.Errorf("we ignored debuginfod-find's negative entry: %d requests", n)
	}
}

// Fifty concurrent requests for one build ID make one upstream GET.
func TestRealServerConcurrentFetchesShareOneDownload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, id := debuginfodtest.BuildELF(t, dir, "shared", 4<<20)
	srv := debuginfodtest.Start(t, dir)
	srv.SetRate(32 << 20) // ~125 ms, so the callers overlap
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})

	const callers = 50
	paths := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			paths[i], errs[i] = c.Fetch(context.Background(), id, debuginfod.KindExecutable, nil)
		})
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || paths[i] != paths[0] {
			t.Fatalf("caller %d: %q, %v; want %s", i, paths[i], errs[i], paths[0])
		}
	}
	if n := srv.Requests(id); n != 1 {
		t.Fatalf("%d concurrent fetches made %d upstream requests, want 1", callers, n)
	}
}

// Cancelling mid-download leaves neither a partial file nor a negative
// entry; a caller that cancels detaches only itself.
func TestRealServerCancelMidDownload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, id := debuginfodtest.BuildELF(t, dir, "big", 8<<20)
	srv := debuginfodtest.Start(t, dir)
	srv.SetRate(4 << 20) // two seconds for the whole file
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	entryDir := filepath.Join(c.CacheDir(), id)

	t.Run("sole caller", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := c.Fetch(ctx, id, debuginfod.KindExecutable, func(p debuginfod.Progress) {
			if p.Phase == debuginfod.PhaseDownloading && p.Bytes >= 512<<10 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Fetch: %v, want context.Canceled", err)
		}
		// The abandoned download stops and cleans up after itself.
		poll.Until(t, 5*time.Second, "the partial file to go", func() bool { return len(listDir(t, entryDir)) == 0 })
		if _, ok := c.Cached(id, debuginfod.KindExecutable); ok {
			t.Fatal("a cancelled download left a cache entry")
		}
	})

	t.Run("one of two callers", func(t *testing.T) {
		before := srv.Requests(id)
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		var once sync.Once
		var stayErr error
		var stayPath string
		done := make(chan struct{})
		go func() {
			defer close(done)
			stayPath, stayErr = c.Fetch(context.Background(), id, debuginfod.KindExecutable, func(p debuginfod.Progress) {
				if p.Phase == debuginfod.PhaseDownloading {
					once.Do(func() { close(started) })
				}
			})
		}()
		<-started
		_, err := c.Fetch(ctx, id, debuginfod.KindExecutable, func(p debuginfod.Progress) {
			if p.Phase == debuginfod.PhaseDownloading && p.Bytes >= 1<<20 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelling caller: %v, want context.Canceled", err)
		}
		<-done
		if stayErr != nil {
			t.Fatalf("the caller that stayed got %v", stayErr)
		}
		b, _ := os.ReadFile(bin)
		mustMatch(t, stayPath, b)
		if n := srv.Requests(id) - before; n != 1 {
			t.Fatalf("%d requests, want the one shared download", n)
		}
	})
}

// debuginfod serves a source file named in DWARF when it exists on its host;
// the client escapes its path for the URL and the cache as elfutils does.
func TestRealServerSource(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a#b dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, id := debuginfodtest.BuildELF(t, dir, "withsrc", 16)
	srv := debuginfodtest.Start(t, dir)
	c := newClient(t, debuginfod.Config{URLs: []string{srv.URL}})
	src := filepath.Join(dir, "withsrc.c")
	path, err := c.Fetch(context.Background(), id, debuginfod.SourceKind(src), nil)
	if err != nil {
		t.Fatalf("Fetch source %s: %v", src, err)
	}
	want, _ := os.ReadFile(src)
	mustMatch(t, path, want)
	escaped := "source" + strings.NewReplacer("#", "#_", "/", "##").Replace(src)
	if filepath.Base(path) != escaped {
		t.Errorf("cache name %s, want %s", filepath.Base(path), escaped)
	}

	// elfutils' debuginfod-find names the file the same way: it finds ours
	// without asking the server.
	find := debuginfodtest.NeedTool(t, "debuginfod-find", "debuginfod")
	before := srv.Requests(id)
	cmd := exec.Command(find, "source", id, src)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS="+srv.URL, "DEBUGINFOD_CACHE_PATH="+c.CacheDir())
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != path {
		t.Errorf("debuginfod-find source: %q, %v; want our cached %s", out, err, path)
	}
	if n := srv.Requests(id); n != before {
		t.Errorf("debuginfod-find asked the server again for a source we cached")
	}
}

// With DEBUGINFOD_URLS unset, servers come from /etc/debuginfod/*.urls; set
// to the empty string, no server is asked.
func TestServersFromEtcURLs(t *testing.T) {
	t.Parallel()
	srv := debuginfodtest.Start(t, filesDir)
	etc := t.TempDir()
	if err := os.WriteFile(filepath.Join(etc, "local.urls"), []byte("# test server\n"+srv.URL+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(etc, "ignored.conf"), []byte("http://not-a-urls-file.invalid\n"), 0o644)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	env := func(vars map[string]string) debuginfod.Environment {
		return debuginfod.Environment{EtcDir: etc, Lookup: func(k string) (string, bool) {
			v, ok := vars[k]
			return v, ok
		}}
	}

	cfg, err := env(map[string]string{"DEBUGINFOD_CACHE_PATH": cacheDir}).Config()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cfg)
	if got := c.Servers(); len(got) != 1 || got[0] != srv.URL {
		t.Fatalf("servers %v, want [%s] from local.urls", got, srv.URL)
	}
	if !strings.Contains(c.Describe(), srv.URL) || !strings.Contains(c.Describe(), "*.urls") {
		t.Errorf("Describe() = %q: want the server and where it came from", c.Describe())
	}
	if _, err := c.Fetch(context.Background(), otherID, debuginfod.KindDebuginfo, nil); err != nil {
		t.Fatalf("fetch through the server from local.urls: %v", err)
	}

	cfg, err = env(map[string]string{"DEBUGINFOD_CACHE_PATH": cacheDir, "DEBUGINFOD_URLS": ""}).Config()
	if err != nil {
		t.Fatal(err)
	}
	c = newClient(t, cfg)
	if len(c.Servers()) != 0 {
		t.Fatalf("DEBUGINFOD_URLS=\"\" still sends to %v", c.Servers())
	}
	if _, err := c.Fetch(context.Background(), helloID, debuginfod.KindDebuginfo, nil); !errors.Is(err, debuginfod.ErrNoServers) {
		t.Fatalf("with servers off and nothing cached: %v, want ErrNoServers", err)
	}
	if n := srv.Requests(helloID); n != 0 {
		t.Fatalf("servers off, yet %d requests", n)
	}
}
