package symbolize

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/buildid"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
	"viewer/symbolize/unwind"
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

// uploadedHow is how an uploaded debug file is described (uploaded.go).
const uploadedHow = "uploaded debug file"

// local reports whether the candidate was found on this machine (the
// mapped file, --debug-dir, the system and perf trees), not uploaded to
// the server or downloaded from debuginfod (its cache included): only local
// debug info may point the source view at files on this machine.
func (c candidate) local() bool {
	return c.how != uploadedHow && !strings.HasPrefix(c.how, "debuginfod ")
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
	dwarf      bool  // debug has DWARF; else only symbols
	unverified bool  // the profile had no build ID to check the file against
	fetchErr   error // debuginfod failed (not a plain miss), and a weaker file is used
	// rejected lists the files passed over for a weaker one used (build ID
	// mismatch, unreadable, over the size limit).
	rejected []string
}

// lease is a store entry held by a caller, with its symbols facet.
type lease struct {
	e *entry
	l *loaded
}

// acquire returns the store entry for mapping m with its symbols, searching
// and loading them when the store does not hold them yet.
func (s *Symbolizer) acquire(ctx context.Context, key string, m *profile.Mapping, opt Options, emit func(Event)) (*lease, error) {
	if e, p := s.store.lookup(key, facetSymbols); e != nil {
		return &lease{e, p.(*loaded)}, nil
	}
	ev := func(st State, src string, p *debuginfod.Progress) {
		emit(Event{Mapping: m, Key: key, File: m.File, BuildID: m.BuildID, State: st, Source: src, Fetch: p})
	}
	ev(StateSearching, "", nil)
	bid, err := mappingBuildID(m)
	if err != nil {
		return nil, err
	}
	get := func(load func(ctx context.Context) (*loaded, error)) (*lease, error) {
		e, p, err := s.store.acquire(ctx, key, facetSymbols, func(ctx context.Context) (part, error) {
			l, err := load(ctx)
			if err != nil {
				return nil, err
			}
			return l, nil
		})
		if err != nil {
			return nil, err
		}
		return &lease{e, p.(*loaded)}, nil
	}
	if IsKernel(m.File) {
		return get(func(ctx context.Context) (*loaded, error) {
			return s.loadKernel(ctx, bid, opt, ev)
		})
	}
	if IsVDSO(m.File) {
		if s.useRunningVDSO(bid) { // vdso.go
			ev(StateLoading, runningVDSOSource, nil)
			return get(func(context.Context) (*loaded, error) { return openRunningVDSO() })
		}
	}
	f, err := s.find(ctx, m, bid, opt, ev)
	if err != nil {
		return nil, err
	}
	src := f.debug.path + " (" + f.debug.how + ")"
	ev(StateLoading, src, nil)
	return get(func(ctx context.Context) (*loaded, error) {
		l, err := openFound(ctx, f, src)
		if err == nil {
			l.local = l.local && !s.uploadedOrCached(ctx, f.debug.path, bid, opt.Profile)
		}
		return l, err
	})
}

// uploadedOrCached reports whether the file at p is one uploaded to this
// server or lies in the debuginfod cache, although a profile's mapping
// path led to it (a mapping may name the store's own file): such debug
// info is someone else's, like any upload.
func (s *Symbolizer) uploadedOrCached(ctx context.Context, p, bid, profile string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return true
	}
	if d := s.cfg.DebuginfodCacheDir; d != "" {
		if rd, err := filepath.EvalSymlinks(d); err == nil && localfile.Under(real, rd) {
			return true
		}
	}
	if s.cfg.Uploaded == nil || bid == "" {
		return false
	}
	fi, err := os.Stat(real)
	if err != nil {
		return true
	}
	for _, u := range s.cfg.Uploaded.UploadedFiles(ctx, bid, profile) {
		if ui, err := os.Stat(u); err == nil && os.SameFile(fi, ui) {
			return true
		}
	}
	return false
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
			if !df.PLTNamed() {
				df.UsePLTOf(ef)
			}
			ef.Close()
		}
	}
	l := &loaded{obj: df, source: src, local: f.debug.local()}
	var weak []string
	if len(f.rejected) > 0 {
		weak = append(weak, f.rejected...)
	}
	if f.fetchErr != nil {
		weak = append(weak, "debuginfod failed: "+f.fetchErr.Error())
	}
	l.passedOver = strings.Join(weak, "; ")
	var notes []string
	if f.unverified {
		notes = append(notes, "the profile has no build ID for this binary: the file at its path on this machine was used, unverified")
	}
	if !f.dwarf {
		notes = append(notes, "no DWARF found: function names from the symbol table, no lines")
	} else if err := df.DWARFError(); err != nil {
		notes = append(notes, fmt.Sprintf("DWARF unreadable (%v): function names from the symbol table", err))
	}
	if l.passedOver != "" {
		notes = append(notes, l.passedOver)
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
	addAll := func(cs []buildid.Candidate, how string) {
		for _, bc := range cs {
			add(bc.Path, how)
		}
	}
	base := filepath.Base(file)
	for _, d := range s.cfg.DebugDirs {
		for _, bc := range buildid.Paths(d, bid, debugDirLayouts, buildid.Debuginfo|buildid.Executable) {
			add(bc.Path, debugDirHow(bc.Layout))
		}
		if base != "" && base != "." && base != "/" {
			add(filepath.Join(d, base+".debug"), "--debug-dir")
			add(filepath.Join(d, base), "--debug-dir")
		}
		if len(bid) > 2 {
			for _, p := range s.debugDirs.lookup(d, bid) { // debugdir.go
				add(p, "--debug-dir, by build ID")
			}
		}
	}
	if s.cfg.SystemDebugDir != "" {
		addAll(buildid.Paths(s.cfg.SystemDebugDir, bid, buildid.Tree, buildid.Debuginfo), "system build-ID tree")
	}
	if s.cfg.BuildIDCacheDir != "" {
		addAll(buildid.Paths(s.cfg.BuildIDCacheDir, bid, buildid.Perf, buildid.Debuginfo|buildid.Executable|buildid.VDSO), "perf build-ID cache")
	}
	if s.cfg.DebuginfodCacheDir != "" {
		addAll(buildid.Paths(s.cfg.DebuginfodCacheDir, bid, buildid.Debuginfod, buildid.Debuginfo|buildid.Executable), "debuginfod cache")
	}
	return c
}

// debugDirLayouts are the layouts a --debug-dir is searched in by build ID.
const debugDirLayouts = buildid.Tree | buildid.Bare | buildid.Debuginfod

// debugDirHow says where in a --debug-dir a candidate of layout l was.
func debugDirHow(l buildid.Layout) string {
	switch l {
	case buildid.Debuginfod:
		return "--debug-dir debuginfod layout"
	case buildid.Vmlinux:
		return "--debug-dir"
	}
	return "--debug-dir build-ID tree"
}

// mappingBuildID is m's build ID as paths and URLs take it (lowercase hex,
// checked by the debuginfod client's rules, so that a build ID from an
// uploaded profile cannot name a path such as "../.."), or "" when m has none.
func mappingBuildID(m *profile.Mapping) (string, error) {
	if m.BuildID == "" {
		return "", nil
	}
	bid, err := buildid.Normalize(m.BuildID)
	if err != nil {
		reason := err.Error()
		var ie *buildid.InvalidError
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
	// missUntil is when debuginfod's remembered miss ends, when its
	// "not found" came from the negative cache rather than a server.
	missUntil time.Time
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
	var ferr error // debuginfod's failure, other than not found
	done := func() (found, error) {
		if sr.res.debug.path == "" {
			sr.res.debug = sr.syms
			sr.res.fetchErr = ferr
			sr.res.rejected = sr.rejected()
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
	for _, c := range s.uploaded(ctx, bid, opt.Profile) { // uploaded.go
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
	if bid != "" && s.fetcher(opt) != nil && !opt.NoDebuginfod {
		progress := func(p debuginfod.Progress) {
			pp := p
			ev(StateFetching, "", &pp)
		}
		kinds := []debuginfod.Kind{debuginfod.KindDebuginfo}
		if sr.syms.path == "" {
			kinds = append(kinds, debuginfod.KindExecutable)
		}
		for _, k := range kinds {
			ev(StateFetching, "", &debuginfod.Progress{BuildID: bid, Kind: k, Phase: debuginfod.PhaseConnecting, Total: -1})
			p, err := s.fetcher(opt).Fetch(ctx, bid, k, progress)
			if err != nil {
				if ctx.Err() != nil {
					return found{}, ctx.Err()
				}
				if !errors.Is(err, debuginfod.ErrNotFound) && ferr == nil {
					ferr = err
				}
				if until, ok := debuginfod.MissRemembered(err); ok && until.After(sr.missUntil) {
					sr.missUntil = until
				}
				continue
			}
			delete(sr.seen, p) // a new file, though the path may have been checked (a miss's entry)
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

// rejected says which files the search passed over, and why.
func (sr *search) rejected() []string {
	var why []string
	if len(sr.mismatch) > 0 {
		why = append(why, "build ID mismatch: "+strings.Join(sr.mismatch, ", "))
	}
	if len(sr.unusable) > 0 {
		why = append(why, "unreadable: "+strings.Join(sr.unusable, ", "))
	}
	if len(sr.oversize) > 0 {
		why = append(why, "skipped: "+strings.Join(sr.oversize, ", "))
	}
	return why
}

// notFound explains where the search looked and what it saw.
func (sr *search) notFound(s *Symbolizer, m *profile.Mapping, opt Options) error {
	var why []string
	if sr.bid == "" {
		why = append(why, "the mapping has no build ID")
	}
	why = append(why, fmt.Sprintf("%d candidate files checked", sr.tried))
	why = append(why, sr.rejected()...)
	switch {
	case sr.bid == "":
	case s.fetcher(opt) == nil:
		why = append(why, "debuginfod is not configured (set DEBUGINFOD_URLS)")
	case opt.NoDebuginfod:
		why = append(why, "debuginfod not asked for this profile")
	case !sr.missUntil.IsZero():
		// Not asked now: say so, and when it will be.
		why = append(why, fmt.Sprintf("debuginfod servers did not have it when last asked (the miss is remembered until %s UTC, then asked again; a debug file uploaded here is used at once)", sr.missUntil.UTC().Format(time.TimeOnly)))
	default:
		why = append(why, "debuginfod servers do not have it")
	}
	hint := "add the binary or its .debug file with --debug-dir"
	return fmt.Errorf("%w (%s); %s", errNotFound, strings.Join(why, "; "), hint)
}

// overLimit says a file of size bytes is over max (0: no limit).
func overLimit(path string, size, max int64) error {
	if max > 0 && size > max {
		return fmt.Errorf("debug file %s is %d bytes, %w %d", path, size, errOverLimit, max)
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

// Need says what a consumer of a binary's files needs from them.
type Need int

const (
	// NeedSymbols: the best file for names and lines, DWARF else a symbol
	// table (the symbolizer and the source view, through Open).
	NeedSymbols Need = iota
	// NeedTypes: DWARF and the code it describes, which may be two files
	// (the data-type page decodes instructions).
	NeedTypes
	// NeedCode: the executable with its code and .eh_frame, and a
	// separate debug file when one is found (the perf.data unwinder).
	NeedCode
)

// Located is where a binary's files are.
type Located struct {
	// Exec holds the code (empty for NeedSymbols when only a separate
	// debug file was found); Debug the best debug info, which may be Exec.
	Exec, Debug string
	// Source says where the debug info (and, when it differs, the code)
	// came from: "PATH (how it was found)" or "debuginfod URL (PATH)".
	Source string
	// DWARF says Debug has DWARF, not only a symbol table.
	DWARF bool
}

// Locate is the one search for a binary's files, used by every consumer:
// the symbolizer, the data-type page, the unwinder and the source view. It
// looks where Symbolize looks, in this order: the mapped file (unless
// IgnoreMappingPaths), the --debug-dir trees, the system build-ID tree,
// perf's ~/.debug cache, the debuginfod client cache, .gnu_debuglink, then
// the debuginfod servers unless opt.NoDebuginfod (the upload's or the
// server's privacy choice) or no Fetcher is configured. Build IDs are
// checked and files over MaxDebugFile skipped. The kernel's file is the
// vmlinux with the mapping's build ID, never with IgnoreVmlinux. When the
// DWARF is in a separate debug file and need asks for code, the executable
// is a local file with the build ID or else is fetched by build ID.
// Nothing is loaded into the store; no lock is held while it looks.
func (s *Symbolizer) Locate(ctx context.Context, m *profile.Mapping, opt Options, need Need) (Located, error) {
	bid, err := mappingBuildID(m)
	if err != nil {
		return Located{}, err
	}
	var mu sync.Mutex
	servers := map[debuginfod.Kind]string{} // who delivered each kind
	note := func(p debuginfod.Progress) {
		if p.Phase == debuginfod.PhaseDone && p.Server != "" {
			mu.Lock()
			servers[p.Kind] = p.Server
			mu.Unlock()
		}
		if opt.Progress != nil {
			pp := p
			opt.Progress(Event{Mapping: m, File: m.File, BuildID: m.BuildID, State: StateFetching, Fetch: &pp})
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
		case s.fetcher(opt) == nil:
			return "", errors.New("debuginfod is not configured (set DEBUGINFOD_URLS)")
		}
		p, err := s.fetcher(opt).Fetch(ctx, bid, k, note)
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
		if s.cfg.IgnoreVmlinux {
			return Located{}, fmt.Errorf("%w for the kernel: --ignore-vmlinux is set, so no vmlinux is looked for (kernel symbols come from kallsyms, which has no DWARF)", errNotFound)
		}
		if bid == "" {
			return Located{}, fmt.Errorf("%w: the kernel mapping has no build ID to find its vmlinux by", errNotFound)
		}
		for _, c := range s.vmlinuxCandidates(bid) {
			if s.codeFile(c.path, bid, true) {
				return Located{Exec: c.path, Debug: c.path, Source: c.path + " (" + c.how + ")", DWARF: true}, nil
			}
		}
		p, err := fetch(debuginfod.KindDebuginfo, func(p string) bool { return s.codeFile(p, bid, true) })
		if err != nil {
			return Located{}, fmt.Errorf("%w for the kernel: no vmlinux with build ID %s on this machine, and %w; add it with --debug-dir or install the kernel's -dbg package", errNotFound, bid, err)
		}
		src := describe(candidate{path: p, how: "debuginfod debuginfo"}, debuginfod.KindDebuginfo)
		return Located{Exec: p, Debug: p, Source: src, DWARF: true}, nil
	}

	ev := func(_ State, _ string, p *debuginfod.Progress) {
		if p != nil {
			note(*p)
		}
	}
	res, err := s.find(ctx, m, bid, opt, ev)
	if err != nil {
		if need != NeedSymbols && bid != "" && errors.Is(err, errNotFound) && ctx.Err() == nil {
			return Located{}, fmt.Errorf("no executable with build ID %s on this machine: %w", bid, err)
		}
		return Located{}, err
	}
	loc := Located{Debug: res.debug.path, Exec: res.exe.path, DWARF: res.dwarf, Source: describe(res.debug, debuginfod.KindDebuginfo)}
	if need == NeedTypes && !res.dwarf {
		return Located{}, fmt.Errorf("%w: %s has no DWARF (only a symbol table was found), and data types need DWARF; add the -dbg/-dbgsym package's file with --debug-dir or enable debuginfod", errNotFound, res.debug.path)
	}
	if need == NeedSymbols {
		return loc, nil
	}
	if loc.Exec == "" && bid != "" {
		// The search stopped at the DWARF: the code may be in a later candidate.
		var skipped []string
		for _, c := range s.candidates(m.File, bid) {
			if c.path == res.debug.path {
				continue
			}
			if err := s.codeCandidate(ctx, c, bid); err == nil {
				loc.Exec, res.exe = c.path, c
				break
			} else if errors.Is(err, errOverLimit) {
				skipped = append(skipped, err.Error())
			}
		}
		if loc.Exec == "" {
			p, err := fetch(debuginfod.KindExecutable, func(p string) bool { return s.codeFile(p, bid, false) })
			if err != nil {
				if len(skipped) > 0 {
					err = fmt.Errorf("%w; skipped: %s", err, strings.Join(skipped, ", "))
				}
				return Located{}, fmt.Errorf("%w: the code is not on this machine (%s is a separate debug file), and %w; add the executable with --debug-dir", errNotFound, res.debug.path, err)
			}
			loc.Exec = p
			res.exe = candidate{path: p, how: "debuginfod executable"}
		}
	}
	if loc.Exec == "" {
		return Located{}, fmt.Errorf("%w: %s is a separate debug file without code, and the mapping has no build ID to find its executable by", errNotFound, res.debug.path)
	}
	if res.exe.path != res.debug.path {
		loc.Source += "; code: " + describe(res.exe, debuginfod.KindExecutable)
	}
	return loc, nil
}

// LocateCode finds the executable perf saw mapped at path with build ID
// buildID (lowercase hex, not empty), and its separate debug file if any,
// for the perf.data unwinder (unwind.Locator): Locate with NeedCode, local
// files and the debuginfod client cache only, as unwinding runs during an
// upload's conversion, which must not wait on servers.
func (s *Symbolizer) LocateCode(ctx context.Context, path, buildID string) (exec, debug string, err error) {
	loc, err := s.Locate(ctx, &profile.Mapping{File: path, BuildID: buildID}, Options{NoDebuginfod: true}, NeedCode)
	if err != nil {
		return "", "", err
	}
	if loc.Debug == loc.Exec {
		return loc.Exec, "", nil
	}
	return loc.Exec, loc.Debug, nil
}

// errOverLimit is wrapped by the errors of files over MaxDebugFile.
var errOverLimit = errors.New("over --max-debug-file")

// codeCandidate checks that candidate c is a regular file within
// MaxDebugFile with build ID bid and its code, opened as c's trust allows.
func (s *Symbolizer) codeCandidate(ctx context.Context, c candidate, bid string) error {
	if _, err := os.Lstat(c.path); err != nil {
		return err
	}
	fi, err := localfile.Stat(ctx, c.path, c.trust())
	if err != nil {
		return err
	}
	if err := overLimit(c.path, fi.Size(), s.cfg.MaxDebugFile); err != nil {
		return err
	}
	f, err := elfsym.OpenContext(ctx, c.path, c.trust())
	if err != nil {
		return err
	}
	defer f.Close()
	if f.BuildID() != bid || !f.HasCode() {
		return errNotFound
	}
	return nil
}

// CFI returns the call frame information of the binary with build ID
// buildID (lowercase hex) that perf saw mapped at path, for the perf.data
// unwinder (unwind.Locator): located with LocateCode and held in the store
// beside the binary's symbols and data types, under the same budget. The
// Object stays usable after the store evicts it (it holds only memory).
func (s *Symbolizer) CFI(ctx context.Context, path, buildID string) (*CFI, error) {
	m := &profile.Mapping{File: path, BuildID: buildID}
	e, p, err := s.store.acquire(ctx, BinaryKey(m), facetCFI, func(ctx context.Context) (part, error) {
		exec, debug, err := s.LocateCode(ctx, path, buildID)
		if err != nil {
			return nil, err
		}
		o, err := unwind.ReadObject(exec, debug, buildID, exec == path)
		if err != nil {
			return nil, err
		}
		return o, nil
	})
	if err != nil {
		return nil, err
	}
	s.store.release(e)
	return p.(*unwind.Object), nil
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
