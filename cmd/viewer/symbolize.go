package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/google/pprof/profile"
	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/sampling"
	"viewer/web/ingest"
)

// stringsFlag collects a flag given several times.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// runSymbolize reads a profile, fills in functions and lines from debug info
// found by build ID (locally, then debuginfod), writes it, and prints what
// happened to each binary.
func runSymbolize(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("symbolize", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var debugDirs stringsFlag
	fs.Var(&debugDirs, "debug-dir", "a `DIR` with binaries or debug files (build-ID tree or plain files); may be repeated")
	out := fs.String("o", "", "write the symbolized profile to `OUT.pb.gz`")
	ignoreVmlinux := fs.Bool("ignore-vmlinux", false, "resolve the kernel from kallsyms only, not from a vmlinux")
	cacheSize := sizeFlag(1 << 30)
	fs.Var(&cacheSize, "symbol-cache-size", "memory for loaded debug info (e.g. 1GiB)")
	unwindOn := unwindFlag(fs)
	dflags := debuginfod.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: viewer symbolize [--debug-dir DIR]... [--no-debuginfod] IN -o OUT.pb.gz\n\nIN is a pprof profile, perf.data or any format viewer reads; OUT is pprof.")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"symbolize: give exactly one input profile"}
	}
	if *out == "" {
		return usageError{"symbolize: give the output file with -o OUT.pb.gz"}
	}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		return fmt.Errorf("symbolize: %w", err)
	}
	// Every format the server takes: pprof, perf.data, perf script, ...
	// Unwinding finds the binaries as symbolization does: --debug-dir too.
	loc := symbolize.New(symbolize.Config{DebugDirs: debugDirs, IgnoreVmlinux: *ignoreVmlinux})
	p, _, err := ingest.Parse(data, localUnwinding(ingest.Limits{}, *unwindOn, loc))
	if err != nil {
		return fmt.Errorf("symbolize: %s is not a profile viewer can read: %w", pos[0], err)
	}
	for _, c := range p.Comments { // what unwinding --call-graph=dwarf stacks did
		warn := strings.HasPrefix(c, sampling.WarningPrefix) && (strings.Contains(c, "--call-graph=dwarf") || strings.Contains(c, "cannot unwind"))
		if warn || strings.HasPrefix(c, "perf.data: unwound ") {
			fmt.Fprintln(s.err, c)
		}
	}

	cfg := symbolize.Config{DebugDirs: debugDirs, CacheBytes: int64(cacheSize), IgnoreVmlinux: *ignoreVmlinux}
	dcfg, err := dflags.Config(os.Getenv)
	if err != nil {
		return usageError{"symbolize: " + err.Error()}
	}
	if dcfg.CacheDir != "" {
		cfg.DebuginfodCacheDir = dcfg.CacheDir
	}
	if len(dcfg.URLs) > 0 {
		client, err := debuginfod.New(dcfg)
		if err != nil {
			return fmt.Errorf("symbolize: %w", err)
		}
		cfg.Fetcher = client
	}
	sym := symbolize.New(cfg)

	var opt symbolize.Options
	if f, ok := s.err.(*os.File); ok && isatty.IsTerminal(f.Fd()) && symbolize.NeedsSymbolization(p) {
		bar := newSymbolizeBar(s.err, p)
		opt.Progress = bar.event
		defer bar.finish()
	}
	rep, err := sym.Symbolize(ctx, p, opt)
	if err != nil {
		return fmt.Errorf("symbolize: %w", err)
	}
	if err := writeProfile(*out, p); err != nil {
		return fmt.Errorf("symbolize: %w", err)
	}
	printReport(s.err, rep)
	return nil
}

func writeProfile(path string, p *profile.Profile) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".symbolize-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := p.Write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// printReport writes one line per binary: state, name, counts, and where the
// debug info came from or why it was not found.
func printReport(w io.Writer, rep *symbolize.Report) {
	if len(rep.Mappings) == 0 {
		fmt.Fprintln(w, "nothing to symbolize: every location already has functions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, m := range rep.Mappings {
		id := m.BuildID
		if len(id) > 12 {
			id = id[:12] + "…"
		}
		if id == "" {
			id = "no build ID"
		}
		detail := m.Source
		if m.Reason != "" {
			if detail != "" {
				detail += "; "
			}
			detail += m.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d resolved, %d unresolved\t%s\n", m.State, displayName(m.File), id, m.Resolved, m.Unresolved, detail)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d binaries symbolized\n", rep.Symbolized(), len(rep.Mappings))
}

func displayName(file string) string {
	if file == "" {
		return "(no file)"
	}
	if strings.HasPrefix(file, "[") {
		return file
	}
	return filepath.Base(file)
}

// symbolizeBar is a terminal progress bar over the binaries of a profile.
type symbolizeBar struct {
	mu   sync.Mutex
	bar  *progressbar.ProgressBar
	done map[string]bool
}

func newSymbolizeBar(w io.Writer, p *profile.Profile) *symbolizeBar {
	n := map[string]bool{}
	for _, l := range p.Location {
		if l.Mapping != nil && !l.Mapping.HasFunctions && len(l.Line) == 0 {
			n[barKey(l.Mapping.BuildID, l.Mapping.File)] = true
		}
	}
	return &symbolizeBar{
		bar: progressbar.NewOptions(len(n),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("symbolizing"),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetWidth(30)),
		done: map[string]bool{},
	}
}

func (b *symbolizeBar) event(ev symbolize.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.Mapping == nil {
		return
	}
	name := displayName(ev.File)
	switch ev.State {
	case symbolize.StateFetching:
		if ev.Fetch != nil && ev.Fetch.Total > 0 {
			b.bar.Describe(fmt.Sprintf("fetching %s %d/%d KiB", name, ev.Fetch.Bytes>>10, ev.Fetch.Total>>10))
		} else {
			b.bar.Describe("fetching " + name)
		}
	case symbolize.StateSearching, symbolize.StateLoading:
		b.bar.Describe(string(ev.State) + " " + name)
	case symbolize.StateSymbolized, symbolize.StateNotFound, symbolize.StateSkipped, symbolize.StateError:
		k := barKey(ev.BuildID, ev.File)
		if !b.done[k] {
			b.done[k] = true
			b.bar.Add(1)
		}
	}
}

// barKey is how Symbolize groups mappings into binaries.
func barKey(buildID, file string) string {
	if buildID != "" {
		return strings.ToLower(buildID)
	}
	return file
}

func (b *symbolizeBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.bar.Finish(); err != nil && !errors.Is(err, io.EOF) {
		return
	}
}

// parseInterleaved parses fs's flags wherever they stand among args (before
// or after the file names, as perf's commands take them) and returns the
// other arguments in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if err == flag.ErrHelp {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}
