package webtest

import (
	"path/filepath"
	"testing"
	"time"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/store"
)

// PrivDir holds the private test binary: stripped, with its debug file
// and its source beside it (testdata/debuginfo/build.sh).
func PrivDir() string { return Testdata("debuginfo") }

// PrivFiles are the private test binary, its debug file and its build ID.
func PrivFiles(t testing.TB) (stripped, debug, bid string) {
	t.Helper()
	stripped = filepath.Join(PrivDir(), "prog.stripped")
	debug = filepath.Join(PrivDir(), "prog.debug")
	bid, err := debuginfodtest.BuildID(stripped)
	if err != nil {
		t.Fatalf("%v: rebuild with testdata/debuginfo/build.sh", err)
	}
	return stripped, debug, bid
}

// DebuginfoServer is a viewer serving debug files on 127.0.0.1.
type DebuginfoServer struct {
	URL    string
	Server *web.Server
	Files  *debuginfo.Store
}

// DebuginfoOptions configure StartDebuginfo's server: its store (a fresh
// directory when nil), the upstream its debuginfo store asks, its token
// (AuthToken), whom it serves (--debuginfod-serve, "open" when empty) and its
// largest debug file.
type DebuginfoOptions struct {
	Store    store.Store
	Upstream symbolize.Fetcher
	Token    string
	Serve    string
	MaxFile  int64
	// LocalDirs are served too (--serve-local-debug).
	LocalDirs     []string
	Symbolization func(files *debuginfo.Store) *web.SymbolizationConfig
	// LocalSource lets the source view read local paths (a loopback
	// server's default), checked against Symbolization's engine.
	LocalSource bool
}

// StartDebuginfo starts a viewer serving debug files on 127.0.0.1, with
// on-demand symbolization when o.Symbolization is set; the test's end stops
// it.
func StartDebuginfo(t testing.TB, o DebuginfoOptions) *DebuginfoServer {
	t.Helper()
	if o.Store == nil {
		d, err := store.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o.Store = d
	}
	if o.Serve == "" {
		o.Serve = "open"
	}
	files := debuginfo.New(debuginfo.Config{Store: o.Store, Upstream: o.Upstream, MaxFile: o.MaxFile,
		TempDir: t.TempDir(), LocalDirs: o.LocalDirs})
	cfg := web.Config{Store: o.Store, AuthToken: o.Token, Debuginfo: &web.DebuginfoConfig{Files: files, Serve: o.Serve}}
	if o.Symbolization != nil {
		cfg.Symbolization = o.Symbolization(files)
	}
	if o.LocalSource && cfg.Symbolization != nil {
		cfg.Source = &web.SourceConfig{LocalPaths: true, Units: web.EngineUnits{Engine: cfg.Symbolization.Engine}, Timeout: 5 * time.Second}
	}
	s, url := startSymbolizing(t, cfg)
	return &DebuginfoServer{URL: url, Server: s, Files: files}
}
