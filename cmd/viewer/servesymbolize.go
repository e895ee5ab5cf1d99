package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/unwind"
	"viewer/web"
	"viewer/web/ondemand"
)

// symbolizeFlags are serve's switches for on-demand symbolization.
type symbolizeFlags struct {
	debugDirs     stringsFlag
	cacheSize     sizeFlag
	ignoreVmlinux bool
	workers       int
	queue         int
	debuginfod    *debuginfod.Flags
	fs            *flag.FlagSet      // to read --addr
	maxDebugFile  sizeFlag           // servelimits.go's concern: bounds a downloaded debug file
	debugFileCap  int64              // the resolved --max-debug-file: also bounds files opened locally (set by config)
	timeout       time.Duration      // bounds the symbolization of each binary of a profile
	profTimeout   time.Duration      // bounds a whole profile's run
	sourceDirs    stringsFlag        // --source-dir: roots local source may be read from
	noLocalFiles  bool               // --no-local-files: never open a path a profile names
	client        *debuginfod.Client // set by config: the upstream of the debuginfod server too (servedebuginfo.go)
	uploaded      symbolize.Uploaded // the uploaded debug files (servedebuginfo.go)
}

func registerSymbolizeFlags(fs *flag.FlagSet) *symbolizeFlags {
	f := &symbolizeFlags{cacheSize: 1 << 30, fs: fs}
	fs.Var(&f.debugDirs, "debug-dir", "a `DIR` with binaries or debug files (build-ID tree or plain files) to symbolize uploads from; may be repeated")
	fs.Var(&f.cacheSize, "symbol-cache-size", "memory for what is loaded from binaries (symbols, lines, data types, unwinding tables), shared by all profiles and pages (e.g. 1GiB)")
	fs.BoolVar(&f.ignoreVmlinux, "ignore-vmlinux", false, "resolve the kernel from kallsyms only, not from a vmlinux")
	fs.IntVar(&f.workers, "workers", 2, "profiles symbolized at once")
	fs.IntVar(&f.queue, "queue", 64, "profiles that may wait for symbolization; beyond it uploads get 503 with Retry-After (and stay stored)")
	f.debuginfod = debuginfod.RegisterFlags(fs)
	fs.Var(&f.maxDebugFile, "max-debug-file", "largest debug file fetched from debuginfod or opened on this machine, for symbolization and the data-type page; a binary whose file is larger stays unsymbolized with the reason (default $DEBUGINFOD_MAXSIZE, else 4GiB)")
	fs.DurationVar(&f.timeout, "symbolize-timeout", 10*time.Minute, "longest the symbolization of one binary of a profile may take (search, download, lookups); names found by then are kept")
	fs.Var(&f.sourceDirs, "source-dir", "a `DIR` the source view may read source files from on loopback, besides each compile unit's own directory; may be repeated")
	fs.BoolVar(&f.noLocalFiles, "no-local-files", false, "never open a file a profile names, even on loopback: no binaries by mapping path, no JIT perf maps (/tmp/perf-PID.map), no local source, no DWARF unwinding (files found by build ID under --debug-dir and debuginfod still are)")
	fs.DurationVar(&f.profTimeout, "symbolize-profile-timeout", 30*time.Minute, "longest one symbolization run over a whole profile may take, all its binaries together; binaries still looking then are reported timed out (Retry looks again) and names found are kept")
	return f
}

// config builds the server's symbolization from the flags and the
// environment, and says where build IDs will go.
func (f *symbolizeFlags) config(logf func(string, ...any)) (*web.SymbolizationConfig, string, error) {
	if f.workers < 1 || f.queue < 1 {
		return nil, "", usageError{"serve: --workers and --queue must be at least 1"}
	}
	dcfg, err := f.debuginfod.Config(os.Getenv)
	if err != nil {
		return nil, "", usageError{"serve: " + err.Error()}
	}
	dcfg.Logf = logf
	if f.maxDebugFile > 0 {
		dcfg.MaxSize = int64(f.maxDebugFile)
	} else if dcfg.MaxSize <= 0 {
		dcfg.MaxSize = 4 << 30
	}
	f.debugFileCap = dcfg.MaxSize
	client, err := debuginfod.New(dcfg)
	if err != nil {
		return nil, "", fmt.Errorf("serve: %w", err)
	}
	// The client answers from its cache even with no server; the gate
	// lets each upload refuse servers and the user skip or disable.
	gate := ondemand.NewGate(client)
	f.client = client
	scfg := symbolize.Config{
		DebugDirs:     f.debugDirs,
		CacheBytes:    int64(f.cacheSize),
		IgnoreVmlinux: f.ignoreVmlinux,
		Fetcher:       gate,
		Uploaded:      f.uploaded,
		// Reachable from other machines, uploads are not this machine's:
		// never open the paths their mappings name (only files found by
		// build ID). On loopback they are, and the binaries at those paths
		// (checked by build ID) are the best source.
		IgnoreMappingPaths: !f.localFiles(),
		MappingPathsOff:    f.localFilesOff(),
		MaxDebugFile:       f.debugFileCap, // local files too, not only downloads
	}
	if dcfg.CacheDir != "" {
		scfg.DebuginfodCacheDir = dcfg.CacheDir
	}
	return &web.SymbolizationConfig{
		Engine:         symbolize.New(scfg),
		Gate:           gate,
		Servers:        client.Servers(),
		Workers:        f.workers,
		Queue:          f.queue,
		Timeout:        f.timeout,
		ProfileTimeout: f.profTimeout,
	}, client.Describe(), nil
}

// unwinding makes uploads of perf.data have their --call-graph=dwarf
// stacks unwound with this machine's binaries when serve listens on
// loopback only (not with --behind-proxy), where uploads are this
// machine's, as for symbolization by mapping path above.
func (f *symbolizeFlags) unwinding(lim *web.Limits, sym *web.SymbolizationConfig) {
	if f.localFiles() {
		var loc unwind.Locator = symbolize.New(symbolize.Config{DebugDirs: f.debugDirs, IgnoreVmlinux: f.ignoreVmlinux})
		if sym != nil && sym.Engine != nil {
			loc = sym.Engine // the one locator: --debug-dir applies to unwinding too
		}
		lim.Binaries = unwind.NewFinder(loc)
		return
	}
	lim.NoUnwind = "this server " + strings.TrimPrefix(f.localFilesOff(), "it ") + ", so it does not read the binaries profiles name"
}

// localFilesOff says why the server does not open the files profiles
// name ("" when it does).
func (f *symbolizeFlags) localFilesOff() string {
	switch {
	case f.localFiles():
		return ""
	case f.noLocalFiles:
		return "it runs with --no-local-files"
	}
	return "it is reachable from other machines"
}

// localFiles reports whether the server opens the files profiles name
// (binaries by mapping path, source files): on loopback only, and not
// with --no-local-files.
func (f *symbolizeFlags) localFiles() bool { return f.loopback() && !f.noLocalFiles }

// loopback reports whether serve listens on a loopback address only.
func (f *symbolizeFlags) loopback() bool {
	if p := f.fs.Lookup("behind-proxy"); p != nil && p.Value.String() == "true" {
		return false // servelimits.go: others reach this loopback address
	}
	a := f.fs.Lookup("addr")
	return a != nil && web.LoopbackOnly(a.Value.String())
}
