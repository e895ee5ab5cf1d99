package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
)

const (
	dfFiles   = "../../testdata/debuginfod/files"
	dfHelloID = "8e44c8b0040d3a4162b62bffc2fb28e2c2b8fecc"
)

func runFind(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = runWith(context.Background(), append([]string{"debuginfod-find"}, args...), stdio{in: strings.NewReader(""), out: &out, err: &errb})
	return out.String(), errb.String(), err
}

func TestDebuginfodFindAgainstRealServer(t *testing.T) {
	srv := debuginfodtest.Start(t, dfFiles)
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9/unused")
	t.Setenv("DEBUGINFOD_CACHE_PATH", cache)

	out, errs, err := runFind(t, "--debuginfod-urls", srv.URL, "debuginfo", strings.ToUpper(dfHelloID))
	if err != nil {
		t.Fatalf("debuginfod-find debuginfo: %v\n%s", err, errs)
	}
	want := filepath.Join(cache, dfHelloID, "debuginfo")
	if out != want+"\n" {
		t.Fatalf("stdout %q, want the cached path %s like elfutils prints", out, want)
	}
	if !strings.Contains(errs, srv.URL) || !strings.Contains(errs, "--debuginfod-urls") {
		t.Errorf("stderr %q does not say which server is asked and why", errs)
	}
	got, _ := os.ReadFile(want)
	exp, _ := os.ReadFile(filepath.Join(dfFiles, "hello.debug"))
	if !bytes.Equal(got, exp) {
		t.Errorf("fetched file differs from hello.debug")
	}

	// An ELF file stands for its build ID, as with elfutils' tool; the
	// cached file is found with servers off.
	out, errs, err = runFind(t, "--no-debuginfod", "debuginfo", filepath.Join(dfFiles, "hello"))
	if err != nil || out != want+"\n" {
		t.Fatalf("with --no-debuginfod and a cached file: %q, %v", out, err)
	}
	if !strings.Contains(errs, "no build IDs leave this machine") {
		t.Errorf("stderr %q does not say nothing is sent", errs)
	}

	_, _, err = runFind(t, "--debuginfod-urls", srv.URL, "executable", "0123456789abcdef0123456789abcdef01234567")
	if !errors.Is(err, debuginfod.ErrNotFound) {
		t.Errorf("unknown build ID: %v, want not found", err)
	}
	if n := srv.Requests(dfHelloID); n != 1 {
		t.Errorf("%d requests for hello, want 1", n)
	}
}

func TestDebuginfodFindUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"debuginfo"},
		{"symbols", dfHelloID},
		{"source", dfHelloID},
		{"source", dfHelloID, "relative.c"},
		{"debuginfo", dfHelloID, "extra"},
		{"debuginfo", "xyz"},
		{"--no-debuginfod", "--debuginfod-urls", "http://a.example", "debuginfo", dfHelloID},
	} {
		_, _, err := runFind(t, args...)
		var u usageError
		if err == nil || (!errors.As(err, &u) && !strings.Contains(err.Error(), "contradict")) {
			t.Errorf("args %q: %v, want a usage error", args, err)
		}
	}
}

func TestDownloadBarDrawsProgress(t *testing.T) {
	var buf bytes.Buffer
	bar := &downloadBar{w: &buf}
	for _, n := range []int64{0, 1 << 20, 2 << 20} {
		bar.update(debuginfod.Progress{Kind: debuginfod.KindDebuginfo, Server: "http://debuginfod.example:8002", Phase: debuginfod.PhaseDownloading, Bytes: n, Total: 2 << 20})
	}
	bar.finish()
	if s := buf.String(); !strings.Contains(s, "debuginfo from debuginfod.example:8002") || !strings.Contains(s, "MB") {
		t.Errorf("progress bar output %q: want the kind, server host and sizes", s)
	}
}
