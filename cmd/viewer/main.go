// Command viewer serves, uploads, converts and symbolizes profiles.
//
// Each subcommand lives in its own file as a func(ctx, args, stdio) error;
// only main exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
)

// stdio is what a subcommand reads and writes, so tests can capture it.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// command is one subcommand: its one-line summary and its entry point.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, s stdio) error
}

var commands = map[string]command{
	"serve":            {"serve profiles over HTTP: viewer serve [flags] [FILE...]", runServe},
	"upload":           {"upload a profile to a server and print its link", runUpload},
	"upload-debuginfo": {"upload ELF debug files to a server, which serves them over debuginfod", runUploadDebuginfo},
	"symbolize":        {"symbolize a profile's addresses: viewer symbolize IN -o OUT.pb.gz", runSymbolize},
	"convert":          {"convert perf.data, perf script, folded stacks or perf JSON to pprof", runConvert},
	"addr2line":        {"addr2line-compatible address to line lookup", runAddr2line},
	"annotate":         {"a function's instructions with their samples, source lines and data types: viewer annotate FILE -fn NAME", runAnnotate},
	"debuginfod-find":  {"fetch debuginfo, executable or source by build ID", runDebuginfodFind},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "viewer:", err)
		}
		os.Exit(exitCode(err))
	}
}

// exitCode is 2 for usage errors and 1 for everything else.
func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

// usageError marks a mistake in how viewer was called.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func run(ctx context.Context, args []string) error {
	return runWith(ctx, args, stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
}

func runWith(ctx context.Context, args []string, s stdio) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(s.err, usage())
		if len(args) == 0 {
			return usageError{"no subcommand given"}
		}
		return nil
	}
	if args[0] == "--version" || args[0] == "-version" || args[0] == "version" {
		fmt.Fprintln(s.out, version())
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		return usageError{fmt.Sprintf("unknown subcommand %q; run 'viewer help' for the list", args[0])}
	}
	return c.run(ctx, args[1:], s)
}

func usage() string {
	var b strings.Builder
	b.WriteString("usage: viewer <subcommand> [flags]\n\nsubcommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-16s %s\n", n, commands[n].summary)
	}
	b.WriteString("\nRun 'viewer <subcommand> -h' for its flags, 'viewer --version' for the build.\n")
	return b.String()
}

// version is the build's module version, VCS revision and time, and the Go
// release it was built with, from the binary's own build information.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "viewer (no build information)"
	}
	v := "viewer " + bi.Main.Version
	var rev, at, dirty string
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value
		case "vcs.time":
			at = st.Value
		case "vcs.modified":
			if st.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if rev != "" {
		v += " " + rev + dirty
	}
	if at != "" {
		v += " " + at
	}
	return v + ", " + bi.GoVersion
}
