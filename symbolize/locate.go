package symbolize

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
)

// errNotFound is wrapped by errors saying no usable debug info exists.
var errNotFound = errors.New("no debug info found")

// candidate is a file that may hold a binary's debug info.
type candidate struct {
	path, how string
	// named: the profile chose the path (the mapped file, a debuglink
	// beside it), so its last symlink is not followed (localfile.Named).
	named bool
}

// trust is how localfile opens the candidate.
func (c candidate) trust() localfile.Trust {
	if c.named {
		return localfile.Named
	}
	return localfile.Configured
}

// found is the outcome of a search: the file to read names and lines from,
// and, when it is a separate debug file, the executable whose program
// headers translate addresses.
type found struct {
	debug, exe candidate
	dwarf      bool // debug has DWARF; else only symbols
	unverified bool // the profile had no build ID to check the file against
}

// acquire returns the store entry for mapping m, searching and loading it
// when the store does not hold it yet.
func (s *Symbolizer) acquire(ctx context.Context, key string, m *profile.Mapping, opt Options, emit func(Event)) (*entry, error) {
	if e := s.store.lookup(key); e != nil {
		return e, nil
	}
	ev := func(st State, src string, p *debuginfod.Progress) {
		emit(Event{Mapping: m, File: m.File, BuildID: m.BuildID, State: st, Source: src, Fetch: p})
	}
	ev(StateSearching, "", nil)
	bid, err := mappingBuildID(m)
	if err != nil {
		return nil, err
	}
	if IsKernel(m.File) {
		return s.store.acquire(ctx, key, func(ctx context.Context) (*loaded, error) {
			return s.loadKernel(ctx, bid, opt, ev)
		})
	}
	f, err := s.find(ctx, m, bid, opt, ev)
	if err != nil {
		return nil, err
	}
	src := f.debug.path + " (" + f.debug.how + ")"
	ev(StateLoading, src, nil)
	return s.store.acquire(ctx, key, func(ctx context.Context) (*loaded, error) {
		return openFound(ctx, f, src)
	})
}

// openFound opens a search result for lookups.
func openFound(ctx context.Context, f found, src string) (*loaded, error) {
	df, err := elfsym.OpenContext(ctx, f.debug.path, f.debug.trust())
	if err != nil {
		return nil, err
	}
	df.UseSymbolTableNames(true)
	if f.exe.path != "" && f.exe.path != f.debug.path {
		if ef, err := elfsym.OpenContext(ctx, f.exe.path, f.exe.trust()); err == nil {
			df.UseLoadSegmentsOf(ef)
			ef.Close()
		}
	}
	l := &loaded{obj: df, source: src}
	var notes []string
	if f.unverified {
		notes = append(notes, "the profile has no build ID for this binary: the file at its path on this machine was used, unverified")
	}
	if !f.dwarf {
		notes = append(notes, "no DWARF found: function names from the symbol table, no lines")
	} else if err := df.DWARFError(); err != nil {
		notes = append(notes, fmt.Sprintf("DWARF unreadable (%v): function names from the symbol table", err))
	}
	l.note = strings.Join(notes, "; ")
	return l, nil
}

// candidates lists, in order, the local files that may hold the debug info
// of a binary with build ID bid (lowercase hex, may be empty) mapped from file.
func (s *Symbolizer) candidates(file, bid string) []candidate {
	var c []candidate
	add := func(p, how string) { c = append(c, candidate{path: p, how: how}) }
	if filepath.IsAbs(file) && !s.cfg.IgnoreMappingPaths {
		c = append(c, candidate{path: file, how: "the mapped file", named: true})
	}
	base := filepath.Base(file)
	for _, d := range s.cfg.DebugDirs {
		if len(bid) > 2 {
			add(filepath.Join(d, ".build-id", bid[:2], bid[2:]+".debug"), "--debug-dir build-ID tree")
			add(filepath.Join(d, ".build-id", bid[:2], bid[2:]), "--debug-dir build-ID tree")
			add(filepath.Join(d, bid[:2], bid[2:]+".debug"), "--debug-dir build-ID tree")
			add(filepath.Join(d, bid[:2], bid[2:]), "--debug-dir build-ID tree")
			add(filepath.Join(d, bid, "debuginfo"), "--debug-dir debuginfod layout")
			add(filepath.Join(d, bid, "executable"), "--debug-dir debuginfod layout")
		}
		if base != "" && base != "." && base != "/" {
			add(filepath.Join(d, base+".debug"), "--debug-dir")
			add(filepath.Join(d, base), "--debug-dir")
		}
	}
	if s.cfg.SystemDebugDir != "" && len(bid) > 2 {
		add(filepath.Join(s.cfg.SystemDebugDir, ".build-id", bid[:2], bid[2:]+".debug"), "system build-ID tree")
	}
	if s.cfg.BuildIDCacheDir != "" && len(bid) > 2 {
		d := filepath.Join(s.cfg.BuildIDCacheDir, ".build-id", bid[:2], bid[2:])
		add(filepath.Join(d, "debug"), "perf build-ID cache")
		add(filepath.Join(d, "elf"), "perf build-ID cache")
	}
	if s.cfg.DebuginfodCacheDir != "" && len(bid) > 2 {
		add(filepath.Join(s.cfg.DebuginfodCacheDir, bid, "debuginfo"), "debuginfod cache")
		add(filepath.Join(s.cfg.DebuginfodCacheDir, bid, "executable"), "debuginfod cache")
	}
	return c
}

// mappingBuildID is m's build ID as paths and URLs take it (lowercase hex,
// checked by the debuginfod client's rules, so that a build ID from an
// uploaded profile cannot name a path such as "../.."), or "" when m has none.
func mappingBuildID(m *profile.Mapping) (string, error) {
	if m.BuildID == "" {
		return "", nil
	}
	bid, err := debuginfod.NormalizeBuildID(m.BuildID)
	if err != nil {
		reason := err.Error()
		var ie *debuginfod.InvalidBuildIDError
		if errors.As(err, &ie) {
			reason = ie.Reason
		}
		return "", fmt.Errorf("%w: the mapping's build ID %q is not hexadecimal of even length: %s", errNotFound, m.BuildID, reason)
	}
	return bid, nil
}

// debuglinkCandidates are where .gnu_debuglink says a binary's debug file is.
func (s *Symbolizer) debuglinkCandidates(exe, link string) []candidate {
	dir := filepath.Dir(exe)
	link = filepath.Base(link) // a file name, never a path elsewhere
	c := []candidate{
		{filepath.Join(dir, link), ".gnu_debuglink", true},
		{filepath.Join(dir, ".debug", link), ".gnu_debuglink", true},
	}
	if s.cfg.SystemDebugDir != "" {
		c = append(c, candidate{filepath.Join(s.cfg.SystemDebugDir, dir, link), ".gnu_debuglink", false})
	}
	for _, d := range s.cfg.DebugDirs {
		c = append(c, candidate{filepath.Join(d, link), ".gnu_debuglink in --debug-dir", false})
	}
	return c
}

// search tracks the best files seen so far.
type search struct {
	ctx       context.Context // ends the opens (the worker's deadline)
	bid       string
	res       found
	syms      candidate // a verified file with a symbol table, no DWARF
	links     []string  // .gnu_debuglink names seen in verified files
	exes      []string
	tried     int
	mismatch  []string // files whose build ID differed
	unusable  []string
	oversize  []string // files over Config.MaxDebugFile
	max       int64    // Config.MaxDebugFile
	seen      map[string]bool
	anonymous bool // the mapping has no build ID: a file is taken by path
}

// check opens one candidate and records what it offers. It reports whether
// the search is over (DWARF found).
func (sr *search) check(c candidate) bool {
	if sr.seen[c.path] {
		return false
	}
	if _, err := os.Lstat(c.path); err != nil {
		return false // not seen: it may appear (a debuginfod download into its cache)
	}
	sr.seen[c.path] = true
	sr.tried++
	fi, err := localfile.Stat(sr.ctx, c.path, c.trust())
	if err != nil {
		sr.unusable = append(sr.unusable, err.Error())
		return false
	}
	if err := overLimit(c.path, fi.Size(), sr.max); err != nil {
		sr.oversize = append(sr.oversize, err.Error())
		return false
	}
	f, err := elfsym.OpenContext(sr.ctx, c.path, c.trust())
	if err != nil {
		sr.unusable = append(sr.unusable, fmt.Sprintf("%s: %v", c.path, err))
		return false
	}
	defer f.Close()
	if sr.bid != "" && f.BuildID() != sr.bid {
		got := f.BuildID()
		if got == "" {
			got = "none"
		}
		sr.mismatch = append(sr.mismatch, fmt.Sprintf("%s has build ID %s", c.path, got))
		return false
	}
	if f.Type() != elf.ET_REL && hasCode(f) && sr.res.exe.path == "" {
		sr.res.exe = c
		sr.exes = append(sr.exes, c.path)
	}
	if l := f.DebugLink(); l != "" && hasCode(f) {
		sr.links = append(sr.links, c.path+"\x00"+l)
	}
	if f.HasDWARF() {
		sr.res.debug, sr.res.dwarf = c, true
		return true
	}
	if f.HasSymbols() && sr.syms.path == "" {
		sr.syms = c
	}
	return false
}

func hasCode(f *elfsym.File) bool {
	// Separate debug files keep the program headers but not the code.
	return f.HasCode()
}

// find searches for m's debug info: local candidates, .gnu_debuglink, then
// debuginfod (debuginfo, then the executable).
func (s *Symbolizer) find(ctx context.Context, m *profile.Mapping, bid string, opt Options, ev func(State, string, *debuginfod.Progress)) (found, error) {
	if bid == "" && (!filepath.IsAbs(m.File) || s.cfg.IgnoreMappingPaths) {
		return found{}, fmt.Errorf("%w: the mapping has no build ID to find its debug info by", errNotFound)
	}
	adopted := false
	if bid == "" {
		// The profile recorded no build ID: take the one of the file at the
		// mapping's path on this machine, so its separate debug info can be
		// found. Nothing verifies the file is the one profiled.
		if f, err := elfsym.OpenContext(ctx, m.File, localfile.Named); err == nil {
			bid, adopted = f.BuildID(), f.BuildID() != ""
			f.Close()
		}
	}
	sr := &search{ctx: ctx, bid: bid, seen: map[string]bool{}, anonymous: bid == "", max: s.cfg.MaxDebugFile}
	done := func() (found, error) {
		if sr.res.debug.path == "" {
			sr.res.debug = sr.syms
		}
		if adopted {
			sr.res.unverified = true
		}
		return sr.res, nil
	}
	for _, c := range s.candidates(m.File, bid) {
		if sr.check(c) {
			return done()
		}
	}
	for _, c := range s.uploaded(ctx, bid) { // uploaded.go
		if sr.check(c) {
			return done()
		}
	}
	for i := 0; i < len(sr.links); i++ {
		exe, link, _ := strings.Cut(sr.links[i], "\x00")
		for _, c := range s.debuglinkCandidates(exe, link) {
			if sr.check(c) {
				return done()
			}
		}
	}
	if bid != "" && s.cfg.Fetcher != nil && !opt.NoDebuginfod {
		progress := func(p debuginfod.Progress) {
			pp := p
			ev(StateFetching, "", &pp)
		}
		kinds := []debuginfod.Kind{debuginfod.KindDebuginfo}
		if sr.syms.path == "" {
			kinds = append(kinds, debuginfod.KindExecutable)
		}
		var ferr error
		for _, k := range kinds {
			ev(StateFetching, "", &debuginfod.Progress{BuildID: bid, Kind: k, Phase: debuginfod.PhaseConnecting, Total: -1})
			p, err := s.cfg.Fetcher.Fetch(ctx, bid, k, progress)
			if err != nil {
				if ctx.Err() != nil {
					return found{}, ctx.Err()
				}
				if !errors.Is(err, debuginfod.ErrNotFound) && ferr == nil {
					ferr = err
				}
				continue
			}
			if sr.check(candidate{path: p, how: "debuginfod " + string(k)}) {
				return done()
			}
		}
		if sr.syms.path == "" && ferr != nil {
			// Not a plain "not found": say what failed, and where else we looked.
			skipped := ""
			if len(sr.oversize) > 0 {
				skipped = "; skipped: " + strings.Join(sr.oversize, ", ")
			}
			return found{}, fmt.Errorf("no debug info on this machine (%d candidate files checked%s), and debuginfod failed: %w", sr.tried, skipped, ferr)
		}
	}
	if sr.syms.path != "" {
		return done()
	}
	return found{}, sr.notFound(s, m, opt)
}

// notFound explains where the search looked and what it saw.
func (sr *search) notFound(s *Symbolizer, m *profile.Mapping, opt Options) error {
	var why []string
	if sr.bid == "" {
		why = append(why, "the mapping has no build ID")
	}
	why = append(why, fmt.Sprintf("%d candidate files checked", sr.tried))
	if len(sr.mismatch) > 0 {
		why = append(why, "build ID mismatch: "+strings.Join(sr.mismatch, ", "))
	}
	if len(sr.unusable) > 0 {
		why = append(why, "unreadable: "+strings.Join(sr.unusable, ", "))
	}
	if len(sr.oversize) > 0 {
		why = append(why, "skipped: "+strings.Join(sr.oversize, ", "))
	}
	switch {
	case sr.bid == "":
	case s.cfg.Fetcher == nil:
		why = append(why, "debuginfod is not configured (set DEBUGINFOD_URLS)")
	case opt.NoDebuginfod:
		why = append(why, "debuginfod not asked for this profile")
	default:
		why = append(why, "debuginfod servers do not have it")
	}
	hint := "add the binary or its .debug file with --debug-dir"
	return fmt.Errorf("%w (%s); %s", errNotFound, strings.Join(why, "; "), hint)
}

// overLimit says a file of size bytes is over max (0: no limit).
func overLimit(path string, size, max int64) error {
	if max > 0 && size > max {
		return fmt.Errorf("debug file %s is %d bytes, over --max-debug-file %d", path, size, max)
	}
	return nil
}

// DebugFile returns the file with the best debug info for the ELF object at
// path, searched by its build ID and .gnu_debuglink as Symbolize searches
// (debuginfod only when the Config has a Fetcher): path itself when it has
// DWARF or nothing better is found.
func (s *Symbolizer) DebugFile(ctx context.Context, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	f, err := elfsym.Open(abs)
	if err != nil {
		return "", err
	}
	bid, dw := f.BuildID(), f.HasDWARF()
	f.Close()
	if dw {
		return path, nil
	}
	res, err := s.find(ctx, &profile.Mapping{File: abs, BuildID: bid}, bid, Options{}, func(State, string, *debuginfod.Progress) {})
	if err != nil || res.debug.path == "" {
		return path, nil
	}
	return res.debug.path, nil
}
