package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/jobs"
	"viewer/web/store"
)

// debuginfoFlags are serve's switches for the debuginfod server of
// uploaded debug files.
type debuginfoFlags struct {
	serve      string
	localDebug bool

	files *debuginfo.Store  // set by config; nil when off
	next  symbolize.Fetcher // the symbolizer's debuginfod gate
}

// Fetch is the symbolizer's Fetcher (set in symbolizeFlags.fetchFirst by
// registerDebuginfoFlags, before the store exists): the uploaded files,
// once config made them, then the debuginfod gate.
func (f *debuginfoFlags) Fetch(ctx context.Context, bid string, kind debuginfod.Kind, progress func(debuginfod.Progress)) (string, error) {
	if f.files == nil {
		return f.next.Fetch(ctx, bid, kind, progress)
	}
	return f.files.SymbolizerFetcher(f.next).Fetch(ctx, bid, kind, progress)
}

func registerDebuginfoFlags(fs *flag.FlagSet, sym *symbolizeFlags) *debuginfoFlags {
	f := &debuginfoFlags{}
	sym.fetchFirst = func(next symbolize.Fetcher) symbolize.Fetcher {
		f.next = next
		return f
	}
	fs.StringVar(&f.serve, "debuginfod-serve", "open", "serve uploaded debug files as a debuginfod server (/buildid/…) to `open|token|off`: anyone, only requests with the upload token (Authorization: Bearer, e.g. from DEBUGINFOD_HEADERS_FILE), or nobody (uploads refused too)")
	fs.BoolVar(&f.localDebug, "serve-local-debug", false, "also serve, by build ID, the files of --debug-dir, /usr/lib/debug/.build-id and perf's ~/.debug")
	return f
}

// config builds the debug file store on st (the profile store), after
// symbolizeFlags.config, and puts it in front of the symbolizer's
// debuginfod client, so uploads are used first. It returns nil when
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
		Store:     st,
		MaxFile:   sym.debugFileCap,
		ProfileOf: jobs.JobID,
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
	return &web.DebuginfoConfig{Files: f.files, Serve: f.serve}, nil
}
