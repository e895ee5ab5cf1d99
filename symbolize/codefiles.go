package symbolize

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
)

// CodeFiles is where a binary's instructions and DWARF are, for callers that
// decode instructions (the data-type page): the executable, or the
// unstripped vmlinux, and the file with DWARF, which may be the same file.
type CodeFiles struct {
	Exec, Debug string
	// Source says where the debug info (and, when it differs, the code)
	// came from: "PATH (how it was found)" or "debuginfod URL (PATH)".
	Source string
}

// FindCode finds the DWARF of mapping m as Symbolize does (the same
// candidates in the same order, build-ID checks, IgnoreMappingPaths and
// MaxDebugFile, then debuginfod unless opt.NoDebuginfod), and the file with
// its code: when the DWARF is in a separate debug file (NOBITS .text), a
// local executable with the build ID or else the executable fetched from
// debuginfod by build ID. For the kernel it is the vmlinux with the
// mapping's build ID, local or fetched from debuginfod (debuginfo). Nothing
// is loaded into the symbol store.
func (s *Symbolizer) FindCode(ctx context.Context, m *profile.Mapping, opt Options) (CodeFiles, error) {
	bid, err := mappingBuildID(m)
	if err != nil {
		return CodeFiles{}, err
	}
	var mu sync.Mutex
	servers := map[debuginfod.Kind]string{} // who delivered each kind
	note := func(p debuginfod.Progress) {
		if p.Phase == debuginfod.PhaseDone && p.Server != "" {
			mu.Lock()
			servers[p.Kind] = p.Server
			mu.Unlock()
		}
	}
	describe := func(c candidate, k debuginfod.Kind) string {
		if !strings.HasPrefix(c.how, "debuginfod ") || c.how == "debuginfod cache" {
			return c.path + " (" + c.how + ")"
		}
		mu.Lock()
		srv := servers[k]
		mu.Unlock()
		if srv == "" {
			return "debuginfod cache (" + c.path + ")"
		}
		return "debuginfod " + srv + " (" + c.path + ")"
	}
	fetch := func(k debuginfod.Kind, check func(path string) bool) (string, error) {
		switch {
		case opt.NoDebuginfod:
			return "", errors.New("debuginfod not asked for this profile")
		case s.cfg.Fetcher == nil:
			return "", errors.New("debuginfod is not configured (set DEBUGINFOD_URLS)")
		}
		p, err := s.cfg.Fetcher.Fetch(ctx, bid, k, note)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("debuginfod %s: %w", k, err)
		}
		if !check(p) {
			return "", fmt.Errorf("the %s from debuginfod (%s) does not fit: wrong build ID, no code, or over --max-debug-file", k, p)
		}
		return p, nil
	}

	if IsKernel(m.File) {
		if bid == "" {
			return CodeFiles{}, fmt.Errorf("%w: the kernel mapping has no build ID to find its vmlinux by", errNotFound)
		}
		for _, c := range s.vmlinuxCandidates(bid) {
			if s.codeFile(c.path, bid, true) {
				return CodeFiles{Exec: c.path, Debug: c.path, Source: c.path + " (" + c.how + ")"}, nil
			}
		}
		p, err := fetch(debuginfod.KindDebuginfo, func(p string) bool { return s.codeFile(p, bid, true) })
		if err != nil {
			return CodeFiles{}, fmt.Errorf("%w for the kernel: no vmlinux with build ID %s on this machine, and %w; add it with --debug-dir or install the kernel's -dbg package", errNotFound, bid, err)
		}
		src := describe(candidate{path: p, how: "debuginfod debuginfo"}, debuginfod.KindDebuginfo)
		return CodeFiles{Exec: p, Debug: p, Source: src}, nil
	}

	ev := func(_ State, _ string, p *debuginfod.Progress) {
		if p != nil {
			note(*p)
		}
	}
	res, err := s.find(ctx, m, bid, opt, ev)
	if err != nil {
		return CodeFiles{}, err
	}
	if !res.dwarf {
		return CodeFiles{}, fmt.Errorf("%w: only a symbol table was found (%s), and data types need DWARF; add the -dbg/-dbgsym package's file with --debug-dir or enable debuginfod", errNotFound, res.debug.path)
	}
	cf := CodeFiles{Debug: res.debug.path, Exec: res.exe.path, Source: describe(res.debug, debuginfod.KindDebuginfo)}
	if cf.Exec == "" {
		if bid == "" {
			return CodeFiles{}, fmt.Errorf("%w: %s is a separate debug file without code, and the mapping has no build ID to find its executable by", errNotFound, res.debug.path)
		}
		p, err := fetch(debuginfod.KindExecutable, func(p string) bool { return s.codeFile(p, bid, false) })
		if err != nil {
			return CodeFiles{}, fmt.Errorf("%w: the code is not on this machine (%s is a separate debug file), and %w; add the executable with --debug-dir", errNotFound, res.debug.path, err)
		}
		cf.Exec = p
		res.exe = candidate{path: p, how: "debuginfod executable"}
	}
	if res.exe.path != res.debug.path {
		cf.Source += "; code: " + describe(res.exe, debuginfod.KindExecutable)
	}
	return cf, nil
}

// codeFile reports whether the file at path has build ID bid, its code, and
// (when dwarf) DWARF, and is within MaxDebugFile.
func (s *Symbolizer) codeFile(path, bid string, dwarf bool) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || overLimit(path, fi.Size(), s.cfg.MaxDebugFile) != nil {
		return false
	}
	f, err := elfsym.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.BuildID() == bid && f.HasCode() && (!dwarf || f.HasDWARF())
}
