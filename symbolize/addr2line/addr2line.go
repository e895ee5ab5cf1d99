// Package addr2line is a drop-in for GNU addr2line on top of elfsym: same
// flags (-e -a -f -i -C -p -s, combined as getopt allows, and the long
// names), same output, much faster on large batches. viewer addr2line runs it.
package addr2line

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"viewer/symbolize"
	"viewer/symbolize/elfsym"
)

// UsageError is a mistake in how addr2line was called.
type UsageError struct{ Msg string }

func (u *UsageError) Error() string { return u.Msg }

// Run reads hexadecimal addresses from args or, when there are none, from
// stdin, and prints the same lines GNU addr2line prints, so scripts built
// around addr2line can use it. Bad flags give a *UsageError; -h gives
// flag.ErrHelp.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("addr2line", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exe := fs.String("e", "a.out", "the ELF `FILE` (executable, library or debug file) to look addresses up in")
	showAddr := fs.Bool("a", false, "print each address before its frames")
	funcs := fs.Bool("f", false, "print function names")
	inlines := fs.Bool("i", false, "print the callers an address is inlined into")
	demangle := fs.Bool("C", false, "demangle C++ and Rust function names")
	pretty := fs.Bool("p", false, "print each frame on one line: FUNC at FILE:LINE")
	base := fs.Bool("s", false, "print file base names only")
	// GNU's long names.
	fs.StringVar(exe, "exe", "a.out", "same as -e")
	fs.BoolVar(showAddr, "addresses", false, "same as -a")
	fs.BoolVar(funcs, "functions", false, "same as -f")
	fs.BoolVar(inlines, "inlines", false, "same as -i")
	fs.BoolVar(demangle, "demangle", false, "same as -C")
	fs.BoolVar(pretty, "pretty-print", false, "same as -p")
	fs.BoolVar(base, "basenames", false, "same as -s")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: addr2line [-e FILE] [-a] [-f] [-i] [-C] [-p] [-s] [ADDR...]\n\nAddresses are hexadecimal object addresses; without arguments they are read from stdin.\nShort flags combine as in addr2line: -fie FILE, -Cfe FILE.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(splitShortFlags(args)); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return &UsageError{err.Error()}
	}
	// Like addr2line, follow the build ID and .gnu_debuglink of a stripped
	// file to its separate debug file.
	path, err := symbolize.New(symbolize.Config{}).DebugFile(ctx, *exe)
	if err != nil {
		return fmt.Errorf("addr2line: %w", err)
	}
	f, err := elfsym.Open(path)
	if err != nil {
		return fmt.Errorf("addr2line: %w", err)
	}
	defer f.Close()
	if err := f.DWARFError(); err != nil {
		fmt.Fprintf(stderr, "addr2line: %v; using the symbol table\n", err)
	}
	p := a2lPrinter{f: f, addr: *showAddr, funcs: *funcs, inlines: *inlines, demangle: *demangle, pretty: *pretty, base: *base}
	w := bufio.NewWriterSize(stdout, 64<<10)
	defer w.Flush()
	if fs.NArg() > 0 {
		addrs := make([]uint64, 0, fs.NArg())
		for _, a := range fs.Args() {
			addrs = append(addrs, parseHexAddr(a))
		}
		f.Prefetch(addrs)
		for i, a := range addrs {
			p.print(w, fs.Arg(i), a)
		}
		return nil
	}
	// Read stdin in chunks: all lines already buffered form one batch whose
	// debug info is decoded in parallel; output is flushed when input pauses,
	// so an interactive pipe gets each answer at once.
	r := bufio.NewReaderSize(stdin, 256<<10)
	var words []string
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		words = append(words, strings.Fields(line)...)
		if r.Buffered() == 0 || err != nil {
			addrs := make([]uint64, len(words))
			for i, wd := range words {
				addrs[i] = parseHexAddr(wd)
			}
			if len(addrs) > 64 {
				f.Prefetch(addrs)
			}
			for i, a := range addrs {
				p.print(w, words[i], a)
			}
			words = words[:0]
			if ferr := w.Flush(); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("addr2line: reading addresses: %w", err)
		}
	}
}

// splitShortFlags expands combined short flags as getopt reads them, so that
// "-fiCe FILE" and "-afeFILE" mean what they mean to addr2line.
func splitShortFlags(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' || !strings.ContainsRune("afiCpse", rune(a[1])) {
			out = append(out, a)
			continue
		}
		ok := true
		var exp []string
		for j := 1; j < len(a); j++ {
			c := a[j]
			if c == 'e' {
				exp = append(exp, "-e")
				if j+1 < len(a) {
					exp = append(exp, a[j+1:])
				}
				break
			}
			if !strings.ContainsRune("afiCps", rune(c)) {
				ok = false
				break
			}
			exp = append(exp, "-"+string(c))
		}
		if ok {
			out = append(out, exp...)
		} else {
			out = append(out, a)
		}
	}
	return out
}

// parseHexAddr parses an address as addr2line does: hex with an optional 0x;
// anything unparsable is address 0.
func parseHexAddr(s string) uint64 {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, _ := strconv.ParseUint(s, 16, 64)
	return v
}

type a2lPrinter struct {
	f                                            *elfsym.File
	addr, funcs, inlines, demangle, pretty, base bool
	frames                                       []elfsym.Frame
}

func (p *a2lPrinter) print(w *bufio.Writer, word string, a uint64) {
	if p.addr {
		fmt.Fprintf(w, "0x%016x", a)
		if p.pretty {
			w.WriteString(": ")
		} else {
			w.WriteByte('\n')
		}
	}
	frames, _ := p.f.Lookup(a, p.frames)
	p.frames = frames
	if len(frames) == 0 {
		frames = []elfsym.Frame{{}}
	}
	if !p.inlines {
		// Without -i addr2line prints the innermost frame only.
		frames = frames[:1]
	}
	// addr2line prints the line-table row's discriminator with every frame.
	disc := frames[0].Discriminator
	for i, fr := range frames {
		fr.Discriminator = disc
		if p.pretty {
			if i > 0 {
				w.WriteString(" (inlined by) ")
			}
			if p.funcs {
				w.WriteString(p.name(fr))
				// addr2line -p writes "?? ??:0" for an unknown address.
				if fr.Name != "" || fr.File != "" {
					w.WriteString(" at ")
				} else {
					w.WriteByte(' ')
				}
			}
			p.location(w, fr)
			w.WriteByte('\n')
			continue
		}
		if p.funcs {
			w.WriteString(p.name(fr))
			w.WriteByte('\n')
		}
		p.location(w, fr)
		w.WriteByte('\n')
	}
}

func (p *a2lPrinter) name(fr elfsym.Frame) string {
	if fr.Name == "" {
		return "??"
	}
	if p.demangle {
		return elfsym.Demangle(fr.Name, true)
	}
	return fr.Name
}

func (p *a2lPrinter) location(w *bufio.Writer, fr elfsym.Frame) {
	file := fr.File
	if file == "" {
		file = "??"
	} else if p.base {
		file = filepath.Base(file)
	}
	w.WriteString(file)
	w.WriteByte(':')
	if fr.Line == 0 {
		// addr2line: "??:0" when nothing is known, "??:?" or "FILE:?" when
		// the function is known but not the line.
		if fr.File == "" && fr.Name == "" {
			w.WriteByte('0')
		} else {
			w.WriteByte('?')
		}
	} else {
		w.WriteString(strconv.Itoa(fr.Line))
	}
	if fr.Discriminator > 0 {
		fmt.Fprintf(w, " (discriminator %d)", fr.Discriminator)
	}
}
