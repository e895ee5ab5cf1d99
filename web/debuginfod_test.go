package web_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/ondemand"
	"viewer/web/store/storetest"
	"viewer/web/webtest"
)

// privSource is where the private test binary's DWARF says its source is
// (webtest.PrivDir).
const privSource = "/viewer-testdata/debuginfo/prog.c"

// put sends body with PUT and returns the status and body.
func put(t testing.TB, url string, body io.Reader, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, body)
	return webtest.SendToken(t, req, token)
}

func putFile(t testing.TB, base, bid, kind, path, token string) (int, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return put(t, base+"/buildid/"+bid+"/"+kind+"?name="+filepath.Base(path), f, token)
}

// sourceTarball is a gzipped tar of the test program's source under the
// path its DWARF names.
func sourceTarball(t testing.TB, extra map[string]string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(webtest.PrivDir(), "prog.c"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	files := map[string]string{strings.TrimPrefix(privSource, "/"): string(src)}
	for k, v := range extra {
		files[k] = v
	}
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

// clientEnv is the environment of a debuginfod client asking only base,
// with a fresh cache.
func clientEnv(t testing.TB, base string) []string {
	env := []string{"DEBUGINFOD_URLS=" + base, "DEBUGINFOD_CACHE_PATH=" + t.TempDir(), "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	return env
}

// TestDebuginfodRealClients uploads the private binary's files and has
// elfutils' debuginfod-find fetch each kind byte for byte, and gdb resolve a
// function and its line of the stripped binary from viewer alone.
func TestDebuginfodRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gdb and elfutils' debuginfod-find: skipped with -short")
	}
	find := debuginfodtest.NeedTool(t, "debuginfod-find", "debuginfod")
	gdb := debuginfodtest.NeedTool(t, "gdb", "gdb")
	objcopy := debuginfodtest.NeedTool(t, "objcopy", "binutils")
	stripped, debugFile, bid := webtest.PrivFiles(t)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{})
	for _, f := range []struct{ kind, path string }{{"debuginfo", debugFile}, {"executable", stripped}} {
		if code, body := putFile(t, ds.URL, bid, f.kind, f.path, ""); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", f.kind, code, body)
		}
	}
	if code, body := put(t, ds.URL+"/buildid/"+bid+"/sources?name=src.tar.gz", bytes.NewReader(sourceTarball(t, nil)), ""); code != http.StatusCreated {
		t.Fatalf("PUT sources: %d %s", code, body)
	}

	section := filepath.Join(t.TempDir(), "debug_line")
	if out, err := exec.Command(objcopy, "--dump-section", ".debug_line="+section, debugFile, filepath.Join(t.TempDir(), "junk")).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v %s", err, out)
	}
	want := map[string]string{
		"debuginfo":            debugFile,
		"executable":           stripped,
		"source " + privSource: filepath.Join(webtest.PrivDir(), "prog.c"),
		"section .debug_line":  section,
	}
	for args, wantFile := range want {
		cmd := exec.Command(find, append([]string{"-v"}, append(strings.Fields(args)[:1], append([]string{bid}, strings.Fields(args)[1:]...)...)...)...)
		cmd.Env = clientEnv(t, ds.URL)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("debuginfod-find %s: %v\n%s", args, err, stderr.String())
			continue
		}
		got, err := os.ReadFile(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatal(err)
		}
		exp, _ := os.ReadFile(wantFile)
		if !bytes.Equal(got, exp) {
			t.Errorf("debuginfod-find %s: %d bytes, not those of %s (%d)", args, len(got), wantFile, len(exp))
		}
		if !strings.Contains(stderr.String(), "X-Debuginfod-Size:") {
			t.Errorf("debuginfod-find %s: no X-Debuginfod-Size in\n%s", args, stderr.String())
		}
	}

	// gdb: the stripped binary alone has no private_work.
	cmd := exec.Command(gdb, "-nx", "-batch", "-iex", "set debuginfod enabled on",
		"-ex", "info line private_work", "-ex", "list private_work", stripped)
	cmd.Env = clientEnv(t, ds.URL)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), `of "prog.c" starts at address`) || !strings.Contains(string(out), "<private_work>") {
		t.Errorf("gdb did not resolve private_work from viewer:\n%s", out)
	}
	// list shows the source, fetched from viewer's uploaded tarball (the
	// path the DWARF names does not exist here).
	if !strings.Contains(string(out), "s += i * i % 7;") {
		t.Errorf("gdb did not list private_work's source from viewer:\n%s", out)
	}
}

// TestDebuginfoUploadAndServe checks the protocol's details and every
// refusal: headers, HEAD, Range, 404s, path traversal, kinds by content,
// wrong and missing build IDs, non-ELF, oversize, the token, metrics and
// the index page.
func TestDebuginfoUploadAndServe(t *testing.T) {
	stripped, debugFile, bid := webtest.PrivFiles(t)
	debugBytes, _ := os.ReadFile(debugFile)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Token: "s3cret", MaxFile: int64(len(debugBytes)) + 16<<10})

	// The token guards uploads; reads stay open.
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, ""); code != http.StatusUnauthorized || !strings.Contains(body, "token") {
		t.Errorf("upload without the token: %d %q", code, body)
	}
	refusals := []struct {
		name, bid, kind string
		body            []byte
		code            int
		says            string
	}{
		{"wrong build ID", strings.Repeat("ab", 20), "debuginfo", debugBytes, 422, "not " + strings.Repeat("ab", 20)},
		{"not ELF", bid, "debuginfo", []byte("#!/bin/sh\necho hi\n"), 422, "not an ELF file"},
		{"no DWARF as debuginfo", bid, "debuginfo", mustRead(t, stripped), 422, "no DWARF"},
		{"no code as executable", bid, "executable", debugBytes, 422, "no code"},
		{"oversize", bid, "debuginfo", append(append([]byte{}, debugBytes...), make([]byte, 32<<10)...), 413, "--max-debug-file"},
		{"uppercase build ID", strings.ToUpper(bid), "debuginfo", debugBytes, 422, "lowercase"},
		{"traversal in build ID", "..%2f..%2fetc", "debuginfo", debugBytes, 422, "not valid"},
		{"no build ID", bid, "debuginfo", noBuildID(t, debugFile), 422, "no GNU build ID"},
	}
	for _, r := range refusals {
		code, body := put(t, ds.URL+"/buildid/"+r.bid+"/"+r.kind, bytes.NewReader(r.body), "s3cret")
		if code != r.code || !strings.Contains(body, r.says) {
			t.Errorf("%s: %d %q, want %d saying %q", r.name, code, body, r.code, r.says)
		}
	}
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, "s3cret"); code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, body)
	}
	// Multipart: the kind comes from the content.
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	fw, _ := mw.CreateFormFile("file", "prog.stripped")
	fw.Write(mustRead(t, stripped))
	mw.Close()
	req, _ := http.NewRequest("POST", ds.URL+"/api/debuginfo", &mb)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mbody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(mbody), `"kind":"executable"`) || strings.Contains(string(mbody), `"kind":"debuginfo"`) {
		t.Errorf("multipart upload of the stripped binary: %d %s", resp.StatusCode, mbody)
	}

	get := func(method, path string, h http.Header) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, ds.URL+path, nil)
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("Accept-Encoding", "gzip") // as libcurl sends it: must still come as is
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	r, b := get("GET", "/buildid/"+bid+"/debuginfo", nil)
	if r.StatusCode != 200 || !bytes.Equal(b, debugBytes) || r.Header.Get("Content-Encoding") != "" {
		t.Errorf("GET debuginfo: %s, %d bytes, Content-Encoding %q", r.Status, len(b), r.Header.Get("Content-Encoding"))
	}
	for k, v := range map[string]string{
		"X-Debuginfod-Size": fmt.Sprint(len(debugBytes)), "X-Debuginfod-File": "/prog.debug",
		"Content-Length": fmt.Sprint(len(debugBytes)), "Content-Type": "application/octet-stream",
	} {
		if r.Header.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, r.Header.Get(k), v)
		}
	}
	if r.Header.Get("Last-Modified") == "" {
		t.Error("no Last-Modified")
	}
	if r, b := get("HEAD", "/buildid/"+bid+"/executable", nil); r.StatusCode != 200 || len(b) != 0 || r.Header.Get("X-Debuginfod-Size") != fmt.Sprint(len(mustRead(t, stripped))) {
		t.Errorf("HEAD executable: %s, %d body bytes, size %q", r.Status, len(b), r.Header.Get("X-Debuginfod-Size"))
	}
	if r, b := get("GET", "/buildid/"+bid+"/debuginfo", http.Header{"Range": {"bytes=100-199"}}); r.StatusCode != 206 || !bytes.Equal(b, debugBytes[100:200]) {
		t.Errorf("Range: %s, %d bytes", r.Status, len(b))
	}
	for _, p := range []string{
		"/buildid/" + strings.Repeat("cd", 20) + "/debuginfo",
		"/buildid/" + bid + "/source/etc/passwd",
		"/buildid/" + bid + "/source/viewer-testdata/../../../../etc/passwd",
		"/buildid/" + bid + "/section/.no_such",
		"/buildid/" + bid + "/section/.bss", // SHT_NOBITS: no contents
	} {
		if r, b := get("GET", p, nil); r.StatusCode != 404 {
			t.Errorf("%s: %s %q, want 404", p, r.Status, b)
		}
	}
	for _, p := range []string{"/buildid/" + strings.ToUpper(bid) + "/debuginfo", "/buildid/abc/debuginfo", "/buildid/..%2f..%2fetc/debuginfo"} {
		if r, _ := get("GET", p, nil); r.StatusCode != 400 {
			t.Errorf("%s: %s, want 400", p, r.Status)
		}
	}

	// Sources: a tarball's "../" names cannot reach other paths.
	tarball := sourceTarball(t, map[string]string{"../../escape.c": "int x;\n"})
	if code, body := put(t, ds.URL+"/buildid/"+bid+"/sources", bytes.NewReader(tarball), "s3cret"); code != 201 || !strings.Contains(body, `"sources":2`) {
		t.Fatalf("sources: %d %s", code, body)
	}
	if r, b := get("GET", "/buildid/"+bid+"/source"+privSource, nil); r.StatusCode != 200 || !bytes.Equal(b, mustRead(t, filepath.Join(webtest.PrivDir(), "prog.c"))) || r.Header.Get("X-Debuginfod-Archive") == "" {
		t.Errorf("source: %s %d bytes, archive %q", r.Status, len(b), r.Header.Get("X-Debuginfod-Archive"))
	}
	if r, b := get("GET", "/buildid/"+bid+"/source/escape.c", nil); r.StatusCode != 200 || string(b) != "int x;\n" {
		t.Errorf("the tar entry ../../escape.c should be /escape.c: %s", r.Status)
	}
	if _, err := os.Stat("/escape.c"); err == nil {
		t.Error("a source tarball wrote /escape.c")
	}

	// The same file again is no error, and replaces nothing.
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, "s3cret"); code != 201 || strings.Contains(body, `"replaced":true`) {
		t.Errorf("same file again: %d %s", code, body)
	}

	r, b = get("GET", "/metrics", nil)
	if !strings.Contains(string(b), `viewer_debuginfod_http_responses_total{type="debuginfo",code="200"} 2`) ||
		!strings.Contains(string(b), `{type="debuginfo",code="404"} 1`) {
		t.Errorf("/metrics:\n%s", b)
	}
	req, _ = http.NewRequest(http.MethodGet, ds.URL+"/debuginfo?q=prog.deb", nil)
	req.Header.Set("Authorization", "Bearer s3cret") // the index lists profiles: behind the token
	r, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || !strings.Contains(string(b), bid) || !strings.Contains(string(b), "prog.debug") || strings.Contains(string(b), "prog.stripped") {
		t.Errorf("/debuginfo?q=prog.deb: %s\n%s", r.Status, b)
	}
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noBuildID is a copy of the ELF file without its build-ID note.
func noBuildID(t testing.TB, p string) []byte {
	t.Helper()
	objcopy := debuginfodtest.NeedTool(t, "objcopy", "binutils")
	out := filepath.Join(t.TempDir(), "nobid")
	if b, err := exec.Command(objcopy, "--remove-section=.note.gnu.build-id", p, out).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v %s", err, b)
	}
	return mustRead(t, out)
}

// TestDebuginfoTokenReads: with --debuginfod-serve=token, reads need the
// token too, which elfutils clients send from DEBUGINFOD_HEADERS_FILE.
func TestDebuginfoTokenReads(t *testing.T) {
	find := debuginfodtest.NeedTool(t, "debuginfod-find", "debuginfod")
	_, debugFile, bid := webtest.PrivFiles(t)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Token: "s3cret", Serve: "token"})
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, "s3cret"); code != 201 {
		t.Fatalf("upload: %d %s", code, body)
	}
	run := func(headers string) error {
		cmd := exec.Command(find, "debuginfo", bid)
		cmd.Env = clientEnv(t, ds.URL)
		if headers != "" {
			hf := filepath.Join(t.TempDir(), "headers")
			os.WriteFile(hf, []byte(headers), 0o600)
			cmd.Env = append(cmd.Env, "DEBUGINFOD_HEADERS_FILE="+hf)
		}
		return cmd.Run()
	}
	if err := run(""); err == nil {
		t.Error("debuginfod-find without the token got the file")
	}
	if err := run("Authorization: Bearer s3cret\n"); err != nil {
		t.Errorf("debuginfod-find with the token: %v", err)
	}
	// Read with the token, the file is no shared cache's to keep: one
	// would give it to requests without the token.
	req, _ := http.NewRequest("GET", ds.URL+"/buildid/"+bid+"/debuginfo", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if cc := r.Header.Get("Cache-Control"); r.StatusCode != 200 || !strings.HasPrefix(cc, "private,") || strings.Contains(cc, "public") {
		t.Errorf("read with the token: %s, Cache-Control %q; want private", r.Status, cc)
	}
}

// TestDebuginfodFederation: a build ID not uploaded is fetched from the
// upstream (Debian's debuginfod) through viewer's client, once for 20
// concurrent requests, and served.
func TestDebuginfodFederation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Debian's debuginfod")
	}
	dir := t.TempDir()
	exe, bid := debuginfodtest.BuildELF(t, dir, "upstream", 256<<10)
	up := debuginfodtest.Start(t, dir)
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{up.URL}, CacheDir: t.TempDir(), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Upstream: client})
	want := mustRead(t, exe)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(ds.URL + "/buildid/" + bid + "/executable")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !bytes.Equal(b, want) {
				errs <- fmt.Errorf("%s, %d bytes of %d", resp.Status, len(b), len(want))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := up.Requests(bid); n != 1 {
		t.Errorf("the upstream was asked %d times for 20 concurrent requests, want 1", n)
	}
	// A source not uploaded is fetched on demand from the upstream.
	src, _ := filepath.Abs(filepath.Join(dir, "upstream.c"))
	resp, err := http.Get(ds.URL + "/buildid/" + bid + "/source" + src)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, mustRead(t, src)) {
		t.Errorf("source %s through the upstream: %s, %d bytes", src, resp.Status, len(got))
	}
	// A build ID nobody has: 404, and asked upstream once (negative cache).
	missing := strings.Repeat("ee", 20)
	for i := 0; i < 3; i++ {
		if resp, err := http.Get(ds.URL + "/buildid/" + missing + "/debuginfo"); err != nil || resp.StatusCode != 404 {
			t.Fatalf("unknown build ID: %v %v", resp, err)
		}
	}
	if n := up.Requests(missing); n != 1 {
		t.Errorf("the upstream was asked %d times for an unknown build ID, want 1", n)
	}
	// viewer's own client asking this viewer is answered from here only.
	req, _ := http.NewRequest("GET", ds.URL+"/buildid/"+strings.Repeat("dd", 20)+"/debuginfo", nil)
	req.Header.Set("User-Agent", "viewer/devel,Linux/x86_64")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 404 || up.Requests(strings.Repeat("dd", 20)) != 0 {
		t.Errorf("a viewer client's request was forwarded upstream: %v %v", resp, err)
	}
}

// TestDebuginfoReplicas: a file uploaded to replica A is served by B, both
// on one object store.
func TestDebuginfoReplicas(t *testing.T) {
	_, debugFile, bid := webtest.PrivFiles(t)
	s3 := storetest.NewS3(t)
	a := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Store: s3.Open(t)})
	b := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Store: s3.Open(t)})
	if code, body := putFile(t, a.URL, bid, "debuginfo", debugFile, ""); code != 201 {
		t.Fatalf("upload to A: %d %s", code, body)
	}
	resp, err := http.Get(b.URL + "/buildid/" + bid + "/debuginfo")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, mustRead(t, debugFile)) {
		t.Errorf("B: %s, %d bytes", resp.Status, len(got))
	}
	req, _ := http.NewRequest("GET", b.URL+"/buildid/"+bid+"/debuginfo", nil)
	req.Header.Set("Range", "bytes=10-19")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || !bytes.Equal(got, mustRead(t, debugFile)[10:20]) {
		t.Errorf("B Range: %s %q", resp.Status, got)
	}
	resp, _ = http.Get(b.URL + "/debuginfo")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), bid) {
		t.Errorf("B's index does not list A's upload:\n%s", page)
	}
}

// TestDebuginfoSymbolizesProfiles is the loop: a profile of a private
// binary stays unsymbolized with no debug info anywhere; once its debug file
// is uploaded, Retry names its functions without any debuginfod server, and
// the index links the build ID to the profile.
func TestDebuginfoSymbolizesProfiles(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	bid, _ := debuginfodtest.BuildID(exe)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Symbolization: func(files *debuginfo.Store) *web.SymbolizationConfig {
		gate := ondemand.NewGate(nil) // no debuginfod at all
		engine := symbolize.New(symbolize.Config{Fetcher: gate, Uploaded: files, IgnoreMappingPaths: true,
			SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"})
		return &web.SymbolizationConfig{Engine: engine, Gate: gate, Workers: 1, Queue: 8}
	}})
	id := webtest.UploadAPI(t, ds.URL, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 40))
	if s, _ := finalEvent(t, ds.URL, id); s.Resolved != 0 || webtest.FunctionNames(t, ds.URL, id)["ondemand_hash_block"] {
		t.Fatalf("named before the upload: %+v", s)
	}
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, ""); code != 201 {
		t.Fatalf("upload: %d %s", code, body)
	}
	if code, body, _ := post(t, ds.URL+"/p/"+id+"/symbolize/retry", nil); code != http.StatusAccepted {
		t.Fatalf("retry: %d %s", code, body)
	}
	if s, _ := finalEvent(t, ds.URL, id); s.Resolved != 1 || !webtest.FunctionNames(t, ds.URL, id)["ondemand_hash_block"] {
		t.Errorf("after the upload and Retry: %+v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got := ds.Files.Profiles(ctx, bid, 10); len(got) != 1 || got[0] != id {
		t.Errorf("profiles that used %s: %v, want [%s]", bid, got, id)
	}
	resp, _ := http.Get(ds.URL + "/debuginfo")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `href="/p/`+id+`"`) {
		t.Errorf("the index does not link %s to profile %s", bid, id)
	}
}

// TestDebuginfoSymbolizesPerfRecording is the loop on a real recording: a
// perf.data of the stripped private binary names nothing on a viewer with no
// debuginfod; after its debug file is uploaded, Retry names private_work,
// the function perf itself puts on top once it has the debug file.
func TestDebuginfoSymbolizesPerfRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("records with perf")
	}
	perf := debuginfodtest.NeedTool(t, "perf", "linux-perf")
	stripped, debugFile, bid := webtest.PrivFiles(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "prog")
	if err := os.WriteFile(exe, mustRead(t, stripped), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "perf.data")
	cmd := exec.Command(perf, "record", "-q", "-e", "cpu-clock", "--no-buildid-cache", "-o", data, "--", exe, "300000000")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Symbolization: func(files *debuginfo.Store) *web.SymbolizationConfig {
		gate := ondemand.NewGate(nil)
		engine := symbolize.New(symbolize.Config{Fetcher: gate, Uploaded: files, IgnoreMappingPaths: true,
			SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"})
		return &web.SymbolizationConfig{Engine: engine, Gate: gate, Workers: 1, Queue: 8}
	}})
	id := webtest.UploadAPI(t, ds.URL, "", mustRead(t, data))
	finalEvent(t, ds.URL, id)
	if webtest.FunctionNames(t, ds.URL, id)["private_work"] {
		t.Fatal("private_work named before its debug file was uploaded")
	}
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, ""); code != 201 {
		t.Fatalf("upload: %d %s", code, body)
	}
	if code, body, _ := post(t, ds.URL+"/p/"+id+"/symbolize/retry", nil); code != http.StatusAccepted {
		t.Fatalf("retry: %d %s", code, body)
	}
	finalEvent(t, ds.URL, id)
	resp, err := http.Get(ds.URL + "/p/" + id + "/top.json")
	if err != nil {
		t.Fatal(err)
	}
	top, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The program spends its time in private_work: the top row, with
	// nearly all of it (the rest is kernel entry and exit).
	var tj struct {
		Total int64
		Rows  [][]any
	}
	if err := json.Unmarshal(top, &tj); err != nil {
		t.Fatal(err)
	}
	if len(tj.Rows) == 0 || tj.Rows[0][0] != "private_work" || tj.Rows[0][1].(float64) < 0.8*float64(tj.Total) {
		t.Errorf("top.json after the upload does not put private_work first with most samples:\n%.1000s", top)
	}
}
