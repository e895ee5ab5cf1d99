package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
	"viewer/symbolize/unwind"
	"viewer/web/ingest"
)

// unwindFlag registers --unwind, on by default: the CLI runs where the
// profiled binaries are.
func unwindFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("unwind", true, "unwind perf.data --call-graph=dwarf user stacks with this machine's binaries (at their recorded paths when the build ID matches, or by build ID in /usr/lib/debug and ~/.debug)")
}

// readMapped returns the contents of a large regular file mapped read-only
// rather than copied into the heap, as perf itself reads perf.data: a DWARF-mode
// recording is mostly stack copies, and a heap copy of them would also let
// the garbage collector put off collecting until the heap doubled. The
// mapping lives until the process exits (a CLI run converts one file).
// Small files, and files that cannot be mapped, are read.
func readMapped(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() && st.Size() >= 64<<10 && int64(int(st.Size())) == st.Size() {
		if data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE); err == nil {
			return data, nil
		}
	}
	return io.ReadAll(f)
}

// unwindDirsUsage is --debug-dir's help where it serves unwinding only
// (convert, upload): the warning for a binary not found names the flag.
const unwindDirsUsage = "a `DIR` with binaries or debug files (build-ID tree or plain files) to unwind perf.data --call-graph=dwarf stacks with, found by build ID, beside /usr/lib/debug and ~/.debug; may be repeated"

// dirsLocator finds binaries by build ID under dirs too (--debug-dir), and
// where perf and gdb look; nil when dirs is empty (localUnwinding's own).
func dirsLocator(dirs []string) unwind.Locator {
	if len(dirs) == 0 {
		return nil
	}
	return symbolize.New(symbolize.Config{DebugDirs: dirs})
}

// localUnwinding makes lim unwind perf.data DWARF-mode stacks with the
// binaries of this machine, which the CLI assumes is the one that recorded
// the profile; a binary that differs from the one perf saw (by build ID, or
// inode when perf recorded no build ID) is not used.
// The binaries are found by the symbolizer's locator (loc; nil: one that
// looks where perf and gdb do, /usr/lib/debug and ~/.debug).
func localUnwinding(lim ingest.Limits, on bool, loc unwind.Locator) ingest.Limits {
	if loc == nil {
		loc = symbolize.New(symbolize.Config{})
	}
	if on {
		lim.Binaries = unwind.NewFinder(loc)
	} else {
		lim.NoUnwind = "--unwind=false was given"
	}
	return lim
}

// runConvert converts any input the viewer reads (perf.data, perf script,
// folded stacks, perf JSON, pprof; gzipped or not) to a gzipped pprof file,
// detecting the format from the content as an upload would.
func runConvert(ctx context.Context, args []string, s stdio) error {
	// The object storage SDKs' init left tens of MiB of code and
	// descriptors resident that converting never uses (image_linux.go).
	releaseStartupPages()
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(s.err)
	out := fs.String("o", "", "output `FILE` (gzipped pprof); - for standard output")
	unwindOn := unwindFlag(fs)
	var debugDirs stringsFlag
	fs.Var(&debugDirs, "debug-dir", unwindDirsUsage)
	progress := addProgressFlag(fs)
	maps := addSourceMapFlags(fs) // sourcemaps.go
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: viewer convert IN -o OUT.pb.gz [--debug-dir DIR]... [--progress]   (IN may be - for standard input)")
		fmt.Fprintln(s.err, "IN may be perf.data (file or pipe mode), perf script output, folded stacks,")
		fmt.Fprintln(s.err, "perf data convert --to-json output or pprof, gzipped or not.")
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError{"convert: give exactly one input file (or - for standard input)"}
	}
	if *out == "" {
		return usageError{"convert: give the output file with -o OUT.pb.gz"}
	}
	m := progress.meter(s.err)
	p, format, err := convertInput(ctx, files[0], s.in, localUnwinding(ingest.Limits{}, *unwindOn, dirsLocator(debugDirs)), m)
	m.finish()
	if err != nil {
		return err
	}
	if maps.enabled() {
		if err := maps.apply(p, s.err); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return fmt.Errorf("convert: encoding the profile: %w", err)
	}
	if *out == "-" {
		_, err = s.out.Write(buf.Bytes())
	} else {
		err = os.WriteFile(*out, buf.Bytes(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	withID := 0
	for _, m := range p.Mapping {
		if m.BuildID != "" {
			withID++
		}
	}
	fmt.Fprintf(s.err, "read %s as %s: %s, %d mappings (%d with build IDs)\n", files[0], format, sampleSummary(p), len(p.Mapping), withID)
	for _, c := range p.Comments {
		if strings.HasPrefix(c, sampling.WarningPrefix) || strings.HasPrefix(c, "perf.data: unwound ") {
			fmt.Fprintln(s.err, c)
		}
	}
	return nil
}

// convertInput parses the input named name (stdin when "-"): a file as an
// upload is (ingest.ParseFile: a perf.data is mapped and aggregated as it
// is read, gzip is inflated to a temporary file), standard input from
// memory. m shows the phases and how far each is.
func convertInput(ctx context.Context, name string, stdin io.Reader, lim ingest.Limits, m *phaseMeter) (*profile.Profile, string, error) {
	if name == "-" {
		data, err := io.ReadAll(&countingReader{r: stdin, m: m, phase: "reading"})
		if err != nil {
			return nil, "", fmt.Errorf("convert: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		m.show("converting", 0, 0, false)
		p, format, err := ingest.Parse(data, lim)
		if err != nil {
			return nil, "", fmt.Errorf("convert %s: %w", name, err)
		}
		return p, format, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, "", fmt.Errorf("convert: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		// A pipe or device: read it whole, as standard input.
		return convertInput(ctx, "-", f, lim, m)
	}
	if m != nil {
		ctx = ingest.WithProgress(ctx, m.report)
		m.show("converting", 0, 0, false)
	}
	p, format, err := ingest.ParseFile(ctx, f, lim)
	if err != nil {
		return nil, "", fmt.Errorf("convert %s: %w", name, err)
	}
	return p, format, nil
}

// sampleSummary says how many samples p holds, as perf report counts them:
// "3,864 samples", one figure per event when there are several
// ("3,864 cpu-clock samples, 3,860 task-clock samples"), or "18 stacks"
// when no sample type counts samples (ingest.CountSamples).
func sampleSummary(p *profile.Profile) string {
	c := ingest.CountSamples(p)
	if len(c.Events) == 0 {
		return sampling.FormatCount(int64(c.Stacks)) + " stacks"
	}
	if len(c.Events) == 1 {
		return sampling.FormatCount(c.Events[0].Samples) + " samples"
	}
	parts := make([]string, len(c.Events))
	for i, e := range c.Events {
		parts[i] = strings.TrimSpace(sampling.FormatCount(e.Samples)+" "+e.Event) + " samples"
	}
	return strings.Join(parts, ", ")
}
