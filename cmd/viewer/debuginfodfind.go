package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"viewer/symbolize/buildid"
	"viewer/symbolize/debuginfod"
)

// runDebuginfodFind works like elfutils' debuginfod-find: it fetches the
// debug info, executable or a source file of a build through the shared
// cache and prints the local path. Unlike elfutils it finds cached files
// with no server configured, and reads /etc/debuginfod/*.urls when
// DEBUGINFOD_URLS is unset.
func runDebuginfodFind(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("debuginfod-find", flag.ContinueOnError)
	fs.SetOutput(s.err)
	dflags := debuginfod.RegisterFlags(fs)
	verbose := fs.Bool("v", false, "log retries and discarded files on stderr")
	quiet := fs.Bool("q", false, "print only the path: no server line, no progress")
	fs.Usage = func() {
		fmt.Fprint(s.err, `usage: viewer debuginfod-find [flags] debuginfo BUILDID|FILE
       viewer debuginfod-find [flags] executable BUILDID|FILE
       viewer debuginfod-find [flags] source BUILDID|FILE /PATH

Prints the local path of the file, fetching it from the debuginfod servers
(DEBUGINFOD_URLS, else /etc/debuginfod/*.urls) into the cache shared with
elfutils (DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client).

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err.Error()}
	}
	rest := fs.Args()
	if len(rest) < 2 {
		fs.Usage()
		return usageError{"debuginfod-find: want a kind (debuginfo, executable, source) and a build ID"}
	}
	var kind debuginfod.Kind
	switch rest[0] {
	case "debuginfo":
		kind = debuginfod.KindDebuginfo
	case "executable":
		kind = debuginfod.KindExecutable
	case "source":
		if len(rest) != 3 || !strings.HasPrefix(rest[2], "/") {
			return usageError{"debuginfod-find: source wants a build ID and an absolute source path, e.g. source BUILDID /usr/src/foo.c"}
		}
		kind = debuginfod.SourceKind(path.Clean(rest[2])) // as elfutils canonicalizes it
	default:
		return usageError{fmt.Sprintf("debuginfod-find: unknown kind %q; use debuginfo, executable or source", rest[0])}
	}
	if rest[0] != "source" && len(rest) != 2 {
		return usageError{fmt.Sprintf("debuginfod-find: %s takes one build ID, got %q", rest[0], strings.Join(rest[1:], " "))}
	}
	buildID, err := buildIDArg(rest[1])
	if err != nil {
		return err
	}

	cfg, err := dflags.Config(os.Getenv)
	if err != nil {
		return fmt.Errorf("debuginfod-find: %w", err)
	}
	if *verbose {
		cfg.Logf = func(format string, a ...any) { fmt.Fprintf(s.err, format+"\n", a...) }
	}
	client, err := debuginfod.New(cfg)
	if err != nil {
		return fmt.Errorf("debuginfod-find: %w", err)
	}
	if !*quiet {
		fmt.Fprintln(s.err, client.Describe())
	}
	var progress func(debuginfod.Progress)
	if !*quiet && isTerminal(s.err) {
		bar := &downloadBar{w: s.err}
		defer bar.finish()
		progress = bar.update
	}
	path, err := client.Fetch(ctx, buildID, kind, progress)
	if err != nil {
		return err
	}
	fmt.Fprintln(s.out, path)
	return nil
}

// buildIDArg accepts a build ID or, like elfutils' tool, an ELF file whose
// build ID is used.
func buildIDArg(arg string) (string, error) {
	if id, err := buildid.Normalize(arg); err == nil {
		return id, nil
	} else if _, statErr := os.Stat(arg); statErr != nil {
		return "", usageError{err.Error() + " (nor is it an ELF file's name)"}
	}
	id, err := debuginfod.FileBuildID(arg)
	if err != nil {
		return "", usageError{fmt.Sprintf("debuginfod-find: %v; give a build ID or an ELF file that has one", err)}
	}
	return id, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// downloadBar draws one progress bar per download on a terminal.
type downloadBar struct {
	w      io.Writer
	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	server string
}

func (d *downloadBar) update(p debuginfod.Progress) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.Phase != debuginfod.PhaseDownloading {
		return
	}
	if d.bar == nil || d.server != p.Server {
		d.finishLocked()
		host := p.Server
		if u, err := url.Parse(p.Server); err == nil && u.Host != "" {
			host = u.Host
		}
		d.server = p.Server
		d.bar = progressbar.NewOptions64(p.Total,
			progressbar.OptionSetWriter(d.w),
			progressbar.OptionSetDescription(fmt.Sprintf("%s from %s", p.Kind, host)),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100_000_000), // 100ms
			progressbar.OptionClearOnFinish(),
		)
	}
	d.bar.Set64(p.Bytes)
}

func (d *downloadBar) finishLocked() {
	if d.bar != nil {
		d.bar.Finish()
		d.bar = nil
	}
}

func (d *downloadBar) finish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finishLocked()
}
