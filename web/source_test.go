package web_test

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/webtest"
)

// buildHello compiles hello.c with DWARF into dir/bin, from dir/src so the
// DWARF's comp_dir is dir/src, where the source stays: debuginfod -F
// serves the sources that exist at the paths the DWARF names.
func buildHello(t *testing.T, dir string) (exe, src, buildID string) {
	t.Helper()
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	srcDir, binDir := filepath.Join(dir, "src"), filepath.Join(dir, "bin")
	for _, d := range []string{srcDir, binDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src = filepath.Join(srcDir, "hello.c")
	if err := os.WriteFile(src, []byte(webtest.HelloC), 0o644); err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(binDir, "hello")
	cmd := exec.Command(gcc, "-g", "-O0", "-Wl,--build-id", "-o", exe, "hello.c")
	cmd.Dir = srcDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	bid, err := debuginfodtest.BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	return exe, src, bid
}

func TestSourceFromRealDebuginfod(t *testing.T) {
	dir := t.TempDir()
	_, src, bid := buildHello(t, dir)
	srv := debuginfodtest.Start(t, filepath.Join(dir, "bin"))

	// The real server serves the source first. Its readiness (indexing
	// done, by its metrics) can come a moment before the source is
	// served: once in CI it answered 404 right after, so ask until 200.
	status := 0
	if !poll.Wait(15*time.Second, func() bool {
		resp, err := http.Get(srv.URL + "/buildid/" + bid + "/source" + src)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		status = resp.StatusCode
		return status == http.StatusOK
	}) {
		t.Fatalf("debuginfod does not serve %s for %s: %d; log:\n%s", src, bid, status, srv.Log())
	}

	client, err := debuginfod.New(debuginfod.Config{URLs: []string{srv.URL}, CacheDir: t.TempDir(), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServerWith(t, web.Config{Source: &web.SourceConfig{Fetcher: client, Servers: []string{srv.URL}}})
	id := webtest.PostProfile(t, base, "hello.pb.gz", webtest.SourceProfile(t, bid, src))

	status, _, page := fetchURL(t, base+"/p/"+id+"/source?fn=compute")
	if status != http.StatusOK {
		t.Fatalf("source: %d\n%s", status, page)
	}
	for _, want := range []string{
		"s += i * i;", // the source text
		`id="source-origin">debuginfod (` + srv.URL,
		`data-line="4" data-cum="35 ns" data-flat="30 ns"`,
		`data-line="6" data-cum="10 ns" data-flat="10 ns"`,
		`data-line="5" data-cum="" data-flat=""`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("source page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="source-problem"`) {
		t.Errorf("source page reports a problem although debuginfod served the file")
	}
	if srv.Requests(bid) == 0 {
		t.Errorf("debuginfod was not asked")
	}

	// A file debuginfod does not have: the page says where it looked.
	id2 := webtest.PostProfile(t, base, "gone.pb.gz", webtest.SourceProfile(t, bid, filepath.Join(dir, "src", "gone.c")))
	_, _, page = fetchURL(t, base+"/p/"+id2+"/source?fn=compute")
	if !strings.Contains(page, "not found on debuginfod servers "+srv.URL) || !strings.Contains(page, `data-line="4"`) {
		t.Errorf("missing source: page does not say debuginfod lacks it, or drops the line values:\n%s", excerpt(page, "source-problem"))
	}
}

func excerpt(page, near string) string {
	i := strings.Index(page, near)
	if i < 0 {
		return page[:min(len(page), 2000)]
	}
	return page[max(0, i-200):min(len(page), i+800)]
}

func TestSourceProblemsAndLocalFiles(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "hello.c")
	if err := os.WriteFile(src, []byte(webtest.HelloC), 0o644); err != nil {
		t.Fatal(err)
	}
	data := webtest.SourceProfile(t, "", src)
	problem := func(cfg *web.SourceConfig, fn, want string) {
		t.Helper()
		base := webtest.StartServerWith(t, web.Config{Source: cfg})
		id := webtest.PostProfile(t, base, "p.pb.gz", data)
		_, _, page := fetchURL(t, base+"/p/"+id+"/source?"+url.Values{"fn": {fn}}.Encode())
		if !strings.Contains(page, want) {
			t.Errorf("fn=%s with %+v: page lacks %q:\n%s", fn, cfg, want, excerpt(page, "source-problem"))
		}
	}
	// Local paths are read only when allowed (serve on loopback), and
	// then only those a binary's debug info names (localfiles_test.go):
	// this profile has no binary.
	problem(&web.SourceConfig{LocalPaths: true}, "compute", "no debug info of the binary to check that it names this file")
	problem(&web.SourceConfig{}, "compute", "the server does not read paths named by profiles")
	problem(&web.SourceConfig{}, "compute", "the binary has no build ID, so debuginfod cannot be asked")
	// A --debug-dir holding the file by name.
	problem(&web.SourceConfig{Dirs: []string{dir}}, "compute", `id="source-origin">source directory: `+src)
	// No file name in the profile, and no such function.
	problem(nil, "helper", "names no source file for helper")
	problem(nil, "nosuch", "No samples of nosuch")

	// A whole file: every function's lines (main calls at line 7).
	base := webtest.StartServerWith(t, web.Config{Source: &web.SourceConfig{LocalPaths: true}})
	id := webtest.PostProfile(t, base, "p.pb.gz", data)
	_, _, page := fetchURL(t, base+"/p/"+id+"/source?"+url.Values{"file": {src}}.Encode())
	for _, want := range []string{`data-line="7" data-cum="45 ns" data-flat=""`, `data-line="4" data-cum="35 ns" data-flat="30 ns"`} {
		if !strings.Contains(page, want) {
			t.Errorf("file=%s: page lacks %s", src, want)
		}
	}

	// debuginfod off, with a build ID.
	base = webtest.StartServerWith(t, web.Config{Source: &web.SourceConfig{}})
	id = webtest.PostProfile(t, base, "p.pb.gz", webtest.SourceProfile(t, "0123456789abcdef0123456789abcdef01234567", "/no/such/dir/hello.c"))
	_, _, page = fetchURL(t, base+"/p/"+id+"/source?fn=compute")
	if !strings.Contains(page, "debuginfod is off on this server") {
		t.Errorf("debuginfod off: page does not say so:\n%s", excerpt(page, "source-problem"))
	}
}
