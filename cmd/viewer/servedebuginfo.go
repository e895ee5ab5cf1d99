package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/store"
)

// debuginfoFlags are serve's switches for the debuginfod server of
// uploaded debug files.
type debuginfoFlags struct {
	serve      string
	localDebug bool

	files *debuginfo.Store // set by config; nil when off
}

// UploadedFiles is the symbolizer's view of the uploaded files
// (symbolizeFlags.uploaded, set before the store exists): none until
// config made them, or with --debuginfod-serve=off.
func (f *debuginfoFlags) UploadedFiles(ctx context.Context, bid, profile string) []string {
	if f.files == nil {
		return nil
	}
	return f.files.UploadedFiles(ctx, bid, profile)
}

func registerDebuginfoFlags(fs *flag.FlagSet, sym *symbolizeFlags) *debuginfoFlags {
	f := &debuginfoFlags{}
	sym.uploaded = f
	fs.StringVar(&f.serve, "debuginfod-serve", "open", "serve uploaded debug files as a debuginfod server (/buildid/…) to `open|token|off`: anyone, only requests with the upload token (Authorization: Bearer, e.g. from DEBUGINFOD_HEADERS_FILE), or nobody (uploads refused too). Uploads are taken from anyone only on a loopback --addr, with --auth-token, or when =open is given explicitly")
	fs.BoolVar(&f.localDebug, "serve-local-debug", false, "also serve, by build ID, the files of --debug-dir, /usr/lib/debug/.build-id and perf's ~/.debug")
	return f
}

// config builds the debug file store on st (the profile store), after
// symbolizeFlags.config, which the symbolizer then searches. It returns nil when
// --debuginfod-serve=off.
func (f *debuginfoFlags) config(st store.Store, sym *symbolizeFlags, token string) (*web.DebuginfoConfig, error) {
	switch f.serve {
	case "off":
		return nil, nil
	case "open":
	case "token":
		if token == "" {
			return nil, usageError{"serve: --debuginfod-serve=token needs --auth-token or --auth-token-file"}
		}
	default:
		return nil, usageError{fmt.Sprintf("serve: --debuginfod-serve is %q: use open, token or off", f.serve)}
	}
	cfg := debuginfo.Config{
		Store:   st,
		MaxFile: sym.debugFileCap,
	}
	if sym.client != nil {
		cfg.Upstream = sym.client
	}
	if f.localDebug {
		cfg.LocalDirs = append(cfg.LocalDirs, sym.debugDirs...)
		cfg.LocalDirs = append(cfg.LocalDirs, "/usr/lib/debug")
		if home, err := os.UserHomeDir(); err == nil {
			cfg.LocalDirs = append(cfg.LocalDirs, filepath.Join(home, ".debug"))
		}
	}
	f.files = debuginfo.New(cfg)
	dc := &web.DebuginfoConfig{Files: f.files, Serve: f.serve}
	if token == "" && !sym.loopback() && !f.explicit(sym.fs) {
		dc.RefuseUploads = "this server is reachable beyond this machine and has no --auth-token, so anyone could upload debug files that name its profiles' functions and that it serves to debuggers; " +
			"its operator can set --auth-token, or say --debuginfod-serve=open to take uploads from anyone"
	}
	return dc, nil
}

// explicit reports whether --debuginfod-serve was given on the command
// line (open by default serves anyone, but takes uploads from anyone only
// on loopback or when said).
func (f *debuginfoFlags) explicit(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "debuginfod-serve" })
	return set
}

// sweep removes the debug files and sources of uploads a crash left
// unacknowledged (debuginfo.Store.Sweep): all of them in a local
// directory, which is this process's alone, and those older than an
// upload's body may take in a bucket that replicas share (its unfinished
// multipart uploads, and spool files in TMPDIR, once a day old).
func (f *debuginfoFlags) sweep(ctx context.Context, shared bool, deadline time.Duration, log func(string, ...any)) {
	if f.files == nil {
		return
	}
	grace := time.Duration(0)
	if shared {
		grace = deadline + time.Minute
	}
	n, err := f.files.Sweep(ctx, grace)
	switch {
	case err != nil:
		log("sweeping debug files left by interrupted uploads failed", "err", err)
	case n > 0:
		log("removed debug files and sources of uploads that were never acknowledged (interrupted by a crash)", "files", n)
	}
}
