package web_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/ondemand"
	"viewer/web/store"
	"viewer/web/webtest"
)

// forgedELF builds, with gcc, a program with DWARF whose functions are
// named forged_*, carrying build ID bid: what a stranger uploads to take
// over another binary's names.
func forgedELF(t testing.TB, bid string) string {
	t.Helper()
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "forged.c")
	os.WriteFile(src, []byte("int forged_hash_block(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * 7; return s; }\n"+
		"int main(int argc, char **argv) { return forged_hash_block(argc * 1000); }\n"), 0o644)
	out := filepath.Join(dir, "forged")
	if b, err := exec.Command(gcc, "-g", "-O0", "-Wl,--build-id=0x"+bid, "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	if got, _ := debuginfodtest.BuildID(out); got != bid {
		t.Fatalf("the forged file's build ID is %s, not %s", got, bid)
	}
	return out
}

func sha256File(t testing.TB, p string) string {
	sum := sha256.Sum256(mustRead(t, p))
	return hex.EncodeToString(sum[:])
}

// multipartDebug posts path to /api/debuginfo as a "file" part.
func multipartDebug(t testing.TB, base, path, token string) (int, string) {
	t.Helper()
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	fw, _ := mw.CreateFormFile("file", filepath.Base(path))
	fw.Write(mustRead(t, path))
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/debuginfo", &mb)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return webtest.SendToken(t, req, token)
}

// TestForgedDebugUploadRefused is issue 37's first attack: on a server
// with no token, a stranger uploads a file carrying the build ID of a
// binary whose debug file is uploaded already. The upload is refused with
// 409 naming the kept file's digest, by PUT and by multipart; the same
// real file again is fine; after a Retry the profile's names are the real
// ones; and debuginfod-find still gets the real file.
func TestForgedDebugUploadRefused(t *testing.T) {
	find := debuginfodtest.NeedTool(t, "debuginfod-find", "debuginfod")
	exe, debugFile := webtest.OndemandFiles(t)
	bid, _ := debuginfodtest.BuildID(exe)
	forged := forgedELF(t, bid)
	sym := func(files *debuginfo.Store) *web.SymbolizationConfig {
		gate := ondemand.NewGate(nil)
		engine := symbolize.New(symbolize.Config{Fetcher: gate, Uploaded: files, IgnoreMappingPaths: true,
			SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"})
		return &web.SymbolizationConfig{Engine: engine, Gate: gate, Workers: 1, Queue: 8}
	}
	root := t.TempDir()
	openRoot := func() store.Store {
		d, err := store.NewDir(root)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Store: openRoot(), Symbolization: sym})
	id := webtest.UploadAPI(t, ds.URL, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 41))
	finalEvent(t, ds.URL, id)
	for _, f := range []struct{ kind, path string }{{"debuginfo", debugFile}, {"executable", exe}} {
		if code, body := putFile(t, ds.URL, bid, f.kind, f.path, ""); code != http.StatusCreated {
			t.Fatalf("first upload of the %s: %d %s", f.kind, code, body)
		}
	}
	retryNames := func() map[string]bool {
		if code, body, _ := post(t, ds.URL+"/p/"+id+"/symbolize/retry", nil); code != http.StatusAccepted {
			t.Fatalf("retry: %d %s", code, body)
		}
		finalEvent(t, ds.URL, id)
		return webtest.FunctionNames(t, ds.URL, id)
	}
	if names := retryNames(); !names["ondemand_hash_block"] {
		t.Fatalf("the real debug file does not name the profile: %v", names)
	}

	realSum := sha256File(t, debugFile)
	code, body := putFile(t, ds.URL, bid, "debuginfo", forged, "")
	if code != http.StatusConflict || !strings.Contains(body, realSum) {
		t.Errorf("forged PUT of an uploaded build ID: %d %q, want 409 naming %s", code, body, realSum)
	}
	names := retryNames()
	if !names["ondemand_hash_block"] || names["forged_hash_block"] {
		t.Errorf("after the forged upload and a Retry the names changed: %v", names)
	}
	// A profile uploaded after the forgery gets the real names too, also
	// on a server started afresh on the store (nothing in its memory; the
	// first one idle).
	for i, base := range []string{ds.URL, webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Store: openRoot(), Symbolization: sym}).URL} {
		id2 := webtest.UploadAPI(t, base, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 42+i))
		finalEvent(t, base, id2)
		if names := webtest.FunctionNames(t, base, id2); !names["ondemand_hash_block"] || names["forged_hash_block"] {
			t.Errorf("a profile uploaded after the forged file is named by it: %v", names)
		}
	}
	resp, err := http.Get(ds.URL + "/p/" + id + "/top.json")
	if err != nil {
		t.Fatal(err)
	}
	top, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(top), "ondemand_hash_block") || strings.Contains(string(top), "forged_") {
		t.Errorf("the top table after the forged upload:\n%.600s", top)
	}

	// gdb and perf would get what debuginfod-find gets: the first file.
	cmd := exec.Command(find, "debuginfo", bid)
	cmd.Env = clientEnv(t, ds.URL)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("debuginfod-find: %v", err)
	}
	if got := sha256File(t, strings.TrimSpace(string(out))); got != realSum {
		t.Errorf("debuginfod-find debuginfo %s: SHA-256 %s, want the first upload's %s", bid, got, realSum)
	}
	if code, body := multipartDebug(t, ds.URL, forged, ""); code != http.StatusConflict || !strings.Contains(body, "SHA-256") {
		t.Errorf("forged multipart upload: %d %q, want 409", code, body)
	}
	// The same real file again is no error.
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, ""); code != http.StatusCreated {
		t.Errorf("the same real file again: %d %q, want 201", code, body)
	}

}

// TestTokenReplacesDebugFile: on a server with a token, an upload carrying
// it may replace a build ID's file (better debug info later), and says so.
func TestTokenReplacesDebugFile(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	bid, _ := debuginfodtest.BuildID(exe)
	forged := forgedELF(t, bid)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Token: "s3cret"})
	if code, body := putFile(t, ds.URL, bid, "debuginfo", debugFile, "s3cret"); code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, body)
	}
	if code, body := putFile(t, ds.URL, bid, "debuginfo", forged, "s3cret"); code != http.StatusCreated || !strings.Contains(body, `"replaced":true`) {
		t.Errorf("replacement with the token: %d %s", code, body)
	}
}

// TestLocalDebugFileWinsOverUpload: with --serve-local-debug, a build ID
// whose file is on the machine is served from it, and an upload of other
// bytes for it is refused naming the local file.
func TestLocalDebugFileWinsOverUpload(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	bid, _ := debuginfodtest.BuildID(exe)
	forged := forgedELF(t, bid)
	local := t.TempDir()
	os.MkdirAll(filepath.Join(local, ".build-id", bid[:2]), 0o755)
	os.Symlink(mustAbs(t, debugFile), filepath.Join(local, ".build-id", bid[:2], bid[2:]+".debug"))
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{LocalDirs: []string{local}})
	if code, body := putFile(t, ds.URL, bid, "debuginfo", forged, ""); code != http.StatusConflict || !strings.Contains(body, sha256File(t, debugFile)) {
		t.Errorf("upload over a local file: %d %q, want 409 naming the local file's digest", code, body)
	}
	resp, err := http.Get(ds.URL + "/buildid/" + bid + "/debuginfo")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(b, mustRead(t, debugFile)) {
		t.Errorf("/buildid/%s/debuginfo serves %d bytes, not the local file", bid, len(b))
	}
}

func mustAbs(t testing.TB, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
