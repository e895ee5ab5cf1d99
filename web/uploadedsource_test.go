package web_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/ondemand"
	"viewer/web/webtest"
)

// canaryC is compiled with its DWARF pointing at a secret directory: the
// file of the same name there holds secretCanary, not this code.
const canaryC = "int canary_work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; }\nint main(void) { return canary_work(9) & 1; }\n"

const secretCanary = "SECRET-CANARY-5c1d"

// canaryBinary builds canaryC in a build directory with
// -fdebug-prefix-map so its DWARF's DW_AT_comp_dir is a secret directory
// whose prog.c is a file that is not the program's (as an attacker's
// DW_AT_comp_dir /etc names /etc/shadow). It returns the binary, the
// secret file's path and canary_work's address.
func canaryBinary(t *testing.T) (exe, secret string, addr uint64) {
	t.Helper()
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	dir := t.TempDir()
	build, secretDir := filepath.Join(dir, "build"), filepath.Join(dir, "secret")
	for _, d := range []string{build, secretDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret = filepath.Join(secretDir, "prog.c")
	if err := os.WriteFile(secret, []byte(secretCanary+"\n"+secretCanary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "prog")
	cmd := exec.Command(gcc, "-g", "-O0", "-Wl,--build-id", "-fdebug-prefix-map="+build+"="+secretDir, "-o", exe, "-x", "c", "prog.c")
	if err := os.WriteFile(filepath.Join(build, "prog.c"), []byte(canaryC), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Dir = build
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, _ := ef.Symbols()
	for _, s := range syms {
		if s.Name == "canary_work" {
			addr = s.Value + 4
		}
	}
	if addr == 0 {
		t.Fatal("no canary_work symbol")
	}
	return exe, secret, addr
}

// canaryProfile is a symbolized profile whose one sample is in
// canary_work, in file, mapped from the path mapped.
func canaryProfile(t *testing.T, bid, file string, addr uint64, mapped string) []byte {
	t.Helper()
	m := &profile.Mapping{ID: 1, Start: 0, Limit: 1 << 32, File: mapped, BuildID: bid, HasFunctions: true, HasFilenames: true}
	f := &profile.Function{ID: 1, Name: "canary_work", SystemName: "canary_work", Filename: file}
	l := &profile.Location{ID: 1, Mapping: m, Address: addr, Line: []profile.Line{{Function: f, Line: 1}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1,
		Mapping: []*profile.Mapping{m}, Function: []*profile.Function{f}, Location: []*profile.Location{l},
		Sample: []*profile.Sample{{Value: []int64{10}, Location: []*profile.Location{l}}},
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestUploadedDebugInfoReadsNoLocalFile is the attack of issue 33: an
// uploaded debug file whose DW_AT_comp_dir points at a directory of this
// machine, and a profile with its build ID, must not make the source view
// (on loopback, where local sources are read for local debug info) or any
// other route print that directory's file. The same file's source comes
// from the source archive uploaded for the build ID instead.
func TestUploadedDebugInfoReadsNoLocalFile(t *testing.T) {
	exe, secret, addr := canaryBinary(t)
	bid, err := debuginfodtest.BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{LocalSource: true, Symbolization: func(files *debuginfo.Store) *web.SymbolizationConfig {
		gate := ondemand.NewGate(nil)
		engine := symbolize.New(symbolize.Config{Fetcher: gate, Uploaded: files,
			SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"})
		return &web.SymbolizationConfig{Engine: engine, Gate: gate, Workers: 1, Queue: 8}
	}})
	if code, body := putFile(t, ds.URL, bid, "debuginfo", exe, ""); code != 201 {
		t.Fatalf("debug file upload: %d %s", code, body)
	}
	id := webtest.UploadAPI(t, ds.URL, "", canaryProfile(t, bid, secret, addr, "/opt/elsewhere/prog"))
	// A mapping may also name the uploaded file where the store keeps it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stored, err := ds.Files.LocalPath(ctx, bid, symbolize.KindDebuginfo)
	if err != nil {
		t.Fatal(err)
	}
	viaStore := webtest.UploadAPI(t, ds.URL, "", canaryProfile(t, bid, secret, addr, stored))
	get := func(u string) string {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	routes := []string{
		"/p/" + id + "/source?" + url.Values{"fn": {"canary_work"}}.Encode(),
		"/p/" + id + "/source?" + url.Values{"file": {secret}}.Encode(),
		"/p/" + id + "/annotate?" + url.Values{"fn": {"canary_work"}}.Encode(),
		"/p/" + id + "/annotate.json?" + url.Values{"fn": {"canary_work"}}.Encode(),
		"/buildid/" + bid + "/source" + secret,
	}
	// First: the engine keeps what it loaded by build ID.
	routes = append([]string{"/p/" + viaStore + "/source?" + url.Values{"fn": {"canary_work"}}.Encode()}, routes...)
	for _, r := range routes {
		if b := get(ds.URL + r); strings.Contains(b, secretCanary) {
			t.Errorf("%s shows the file the uploaded DWARF's comp_dir names on this machine:\n%s", r, excerpt(b, secretCanary))
		}
	}
	page := get(ds.URL + routes[1])
	if !strings.Contains(page, "uploaded or downloaded, not found on this machine") {
		t.Errorf("the source view does not say why the local file is not read:\n%s", excerpt(page, "source-problem"))
	}

	// Its sources come from the archive uploaded for it.
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	body := "int canary_work(int n) { return n; } // ARCHIVE-LINE\n"
	tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(secret, "/"), Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write([]byte(body))
	tw.Close()
	if code, b := put(t, ds.URL+"/buildid/"+bid+"/sources?name=src.tar", &tb, ""); code != 201 {
		t.Fatalf("sources upload: %d %s", code, b)
	}
	page = get(ds.URL + routes[1])
	if !strings.Contains(page, "ARCHIVE-LINE") || strings.Contains(page, secretCanary) {
		t.Errorf("after its source archive is uploaded, the source view does not show the archive's file:\n%s", excerpt(page, "source-"))
	}
}

// longNamesTarball is the source-archive attack of issue 33: a gzipped tar
// of n empty files, each with a PAX name of nameLen bytes (the tar reader's
// own limit is 1 MiB per header).
func longNamesTarball(t *testing.T, n, nameLen int) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("src/%06d/", i) + strings.Repeat("a", nameLen-12)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}
