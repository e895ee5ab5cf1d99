package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"viewer/symbolize"
	"viewer/symbolize/annotate"
	"viewer/symbolize/datatype"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
	"viewer/web/flame"
	"viewer/web/ingest"
)

// runAnnotate prints one function's instructions as `perf annotate --stdio`
// does: each instruction's share of the function's self samples, its
// address and text, with the source lines it comes from interleaved and,
// with --data-type, the type and member it accesses (perf annotate
// --code-with-type). The binary is found by build ID as serve finds it.
func runAnnotate(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("annotate", flag.ContinueOnError)
	fs.SetOutput(s.err)
	fn := fs.String("fn", "", "the `FUNCTION` to list, as the flame graph or top table names it (an inlined one lists the function holding its hottest copy)")
	in := fs.String("in", "", "list the copy of an inlined -fn in this `SYMBOL`")
	inline := fs.String("inline", annotate.InlineCopy, "an inlined function's copies: \"copy\" lists one, \"merge\" merges them all by the inlined function's source lines")
	si := fs.String("si", "", "the sample `TYPE` (its name or index; default the profile's)")
	withType := fs.Bool("data-type", false, "add the data type and member each instruction accesses, or why none (perf annotate --code-with-type)")
	counts := fs.Bool("n", false, "print sample counts beside the percentages")
	skid := fs.Bool("skid", true, "with --data-type, note timer samples that skidded past the access they count on")
	var debugDirs stringsFlag
	fs.Var(&debugDirs, "debug-dir", "a `DIR` with binaries or debug files (build-ID tree or plain files); may be repeated")
	ignoreVmlinux := fs.Bool("ignore-vmlinux", false, "do not look for a vmlinux for kernel samples")
	cacheSize := sizeFlag(1 << 30)
	fs.Var(&cacheSize, "symbol-cache-size", "memory for loaded debug info (e.g. 1GiB)")
	unwindOn := unwindFlag(fs)
	dflags := debuginfod.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: viewer annotate FILE -fn FUNCTION [--data-type] [--debug-dir DIR]... [--no-debuginfod]\n\nFILE is a pprof profile, perf.data or any format viewer reads that keeps addresses and build IDs.")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usageError{"annotate: give exactly one profile"}
	case *fn == "":
		return usageError{"annotate: give the function with -fn NAME"}
	case *inline != annotate.InlineCopy && *inline != annotate.InlineMerge:
		return usageError{fmt.Sprintf("annotate: -inline %q: give copy or merge", *inline)}
	}
	data, err := readMapped(pos[0])
	if err != nil {
		return fmt.Errorf("annotate: %w", err)
	}
	cfg := symbolize.Config{DebugDirs: debugDirs, CacheBytes: int64(cacheSize), IgnoreVmlinux: *ignoreVmlinux}
	dcfg, err := dflags.Config(os.Getenv)
	if err != nil {
		return usageError{"annotate: " + err.Error()}
	}
	if dcfg.CacheDir != "" {
		cfg.DebuginfodCacheDir = dcfg.CacheDir
	}
	if len(dcfg.URLs) > 0 {
		client, err := debuginfod.New(dcfg)
		if err != nil {
			return fmt.Errorf("annotate: %w", err)
		}
		cfg.Fetcher = client
	}
	eng := symbolize.New(cfg)
	p, _, err := ingest.Parse(data, localUnwinding(ingest.Limits{}, *unwindOn, eng))
	if err != nil {
		return fmt.Errorf("annotate: %s is not a profile viewer can read: %w", pos[0], err)
	}
	i, err := flame.SampleIndex(p, *si)
	if err != nil {
		return usageError{"annotate: -si: " + err.Error()}
	}
	res, err := eng.Listing(ctx, p, symbolize.ListingRequest{Fn: *fn, In: *in, SampleIndex: i, Inline: *inline,
		Options: symbolize.DataTypeOptions{Skid: true, NoDebuginfod: cfg.Fetcher == nil}})
	if err != nil {
		return fmt.Errorf("annotate: %s: %w", pos[0], err)
	}
	st := p.SampleType[i]
	w := bufio.NewWriter(s.out)
	writeAnnotation(w, res, st.Type, st.Unit, annotateStyle{counts: *counts, dataType: *withType, skid: *skid})
	return w.Flush()
}

// annotateStyle is what the listing prints besides percentages.
type annotateStyle struct{ counts, dataType, skid bool }

// writeAnnotation prints res as perf annotate --stdio does: a header, then
// per instruction "PERCENT :   ADDR:   TEXT", each new source line above
// its instructions as "file:line" and the line's text when the file is
// readable here.
func writeAnnotation(w io.Writer, res *annotate.Result, event, unit string, st annotateStyle) {
	l := res.Listing
	if unit == "count" || unit == "" {
		unit = "samples"
	}
	build := ""
	if res.BuildID != "" {
		build = ", build ID " + res.BuildID
	}
	fmt.Fprintf(w, " Percent |\tSource code & Disassembly of %s%s (%s) for %s (%d %s, %s%% of the profile's %d)\n",
		res.DSO, build, l.Arch, event, l.Total, unit, pct(l.Total, res.Total), res.Total)
	fmt.Fprintln(w, "------------------------------------------------------------------------------------------")
	if len(res.Copies) > 0 {
		fmt.Fprintf(w, "         :\t%s's copies merged by its source lines: %s\n", l.Func.Name, strings.Join(res.Copies, ", "))
	} else {
		fmt.Fprintf(w, "         :\t%016x <%s>:\n", l.Func.Lo, l.Func.Name)
	}
	if len(res.Others) > 0 {
		fmt.Fprintf(w, "         :\tother copies (inlined): %s\n", strings.Join(res.Others, ", "))
	}
	src := sourceLines{}
	for _, r := range l.Rows {
		if r.NewSource && len(r.Frames) > 0 {
			f := r.Frames[0]
			where := fmt.Sprintf("%s:%d", f.File, f.Line)
			if f.File == "" {
				where = "(no line information)"
			}
			var chain []string
			for _, c := range r.Frames[1:] {
				chain = append(chain, elfsym.Demangle(c.Name, false))
			}
			if r.Symbol != "" {
				where += " (in " + r.Symbol + ")"
			} else if len(chain) > 0 {
				where += " (" + elfsym.Demangle(f.Name, false) + " inlined in " + strings.Join(chain, " ← ") + ")"
			}
			fmt.Fprintf(w, "         :\t%s\n", where)
			if text, ok := src.line(f.File, f.Line); ok {
				fmt.Fprintf(w, "         :\t  %s\n", text)
			}
		}
		if st.counts {
			fmt.Fprintf(w, "%8s %8d :\t", pct(r.Self, l.Total), r.Self)
		} else {
			fmt.Fprintf(w, "%8s :\t", pct(r.Self, l.Total))
		}
		text := objdumpSpacing(r.Text, l.Arch)
		if r.TargetLabel != "" {
			text += " <" + r.TargetLabel + ">"
		}
		fmt.Fprintf(w, "%6x:\t%s", r.PC, text)
		if st.dataType {
			label := r.Access.Label()
			if r.Access.Kind == datatype.KindUnknown && r.Access.Reason != "" {
				label += " (" + r.Access.Reason + ")"
			}
			fmt.Fprintf(w, "\t\t# data-type: %s", label)
			if st.skid && r.SkidFrom != 0 && r.Self > 0 {
				fmt.Fprintf(w, "; counted on %x (skid)", r.SkidFrom)
			}
			if st.skid && r.SkidIn > 0 {
				fmt.Fprintf(w, "; +%d skidded here", r.SkidIn)
			}
		}
		fmt.Fprintln(w)
	}
}

// objdumpSpacing pads the mnemonic as objdump -d does: to 6 columns and a
// space on x86-64, a tab on arm64.
func objdumpSpacing(text, arch string) string {
	op, rest, ok := strings.Cut(text, " ")
	if !ok || strings.HasPrefix(text, "data16 ") || strings.HasPrefix(text, "cs ") {
		return text
	}
	if arch == "arm64" {
		return op + "\t" + rest
	}
	return fmt.Sprintf("%-6s %s", op, rest)
}

// pct is part's share of whole as perf prints it ("12.34"), "0.00" for none.
func pct(part, whole int64) string {
	if whole <= 0 {
		return "0.00"
	}
	return fmt.Sprintf("%.2f", 100*float64(part)/float64(whole))
}

// sourceLines reads source files (once each) for their lines' text.
type sourceLines map[string][]string

func (s sourceLines) line(file string, n int) (string, bool) {
	if file == "" || n <= 0 {
		return "", false
	}
	lines, ok := s[file]
	if !ok {
		if data, err := os.ReadFile(file); err == nil && len(data) < 16<<20 {
			lines = strings.Split(string(data), "\n")
		}
		s[file] = lines
	}
	if n > len(lines) {
		return "", false
	}
	return strings.TrimRight(lines[n-1], " \t\r"), true
}
