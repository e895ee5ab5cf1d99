// Package symbolize fills in the functions, source lines and inlined frames of
// a profile whose locations hold only addresses. It finds each binary's debug
// info by build ID (locally, then through a debuginfod Fetcher), keeps what it
// loaded in one store shared by all profiles, and handles each binary on its
// own: one that cannot be found or read is reported and left as addresses.
package symbolize

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"viewer/symbolize/elfsym"
	"viewer/symbolize/perfmap"
)

// Config says where a Symbolizer looks for debug info and how much memory
// loaded debug info may hold.
type Config struct {
	// DebugDirs are searched first (--debug-dir), each in the build-ID layout
	// (DIR/.build-id/ab/cdef….debug, DIR/ab/cdef….debug, DIR/BUILDID/debuginfo)
	// or holding files under any name and subdirectory, found by the build
	// ID read from each (debugdir.go); build IDs are checked.
	DebugDirs []string
	// Fetcher fetches from debuginfod when nothing local fits; nil: none.
	Fetcher Fetcher
	// Uploaded are the debug files uploaded to this server, searched
	// after the local ones (uploaded.go); nil: none.
	Uploaded Uploaded
	// CacheBytes bounds the memory held by what is loaded from binaries
	// (--symbol-cache-size): symbols, line tables, inline frames, data
	// types and CFI, in one store; only binaries in use may exceed it.
	// 0 means 1 GiB.
	CacheBytes int64
	// IgnoreVmlinux: resolve the kernel from kallsyms only (perf's --ignore-vmlinux).
	IgnoreVmlinux bool

	// SystemDebugDir is where distributions install debug files; "" means
	// /usr/lib/debug. "-" disables it.
	SystemDebugDir string
	// BuildIDCacheDir is perf's build-ID cache; "" means ~/.debug, "-" none.
	BuildIDCacheDir string
	// DebuginfodCacheDir is the elfutils debuginfod client cache, read
	// directly so files fetched by gdb or perf are found even without a
	// Fetcher; "" means the elfutils default, "-" none.
	DebuginfodCacheDir string
	// KallsymsPath and KernelNotesPath are the running kernel's symbol list
	// and notes (with its build ID); "" means /proc/kallsyms and
	// /sys/kernel/notes, "-" none.
	KallsymsPath, KernelNotesPath string
	// KernelRelease names the running kernel for vmlinux paths; "" means uname -r.
	KernelRelease string
	// IgnoreMappingPaths: never open the files mappings name, only files
	// found by build ID. A server symbolizing profiles uploaded from other
	// machines sets it, so an upload cannot make it read arbitrary paths.
	IgnoreMappingPaths bool
	// MappingPathsOff says why IgnoreMappingPaths is set, in the reasons
	// that name it ("it runs with --no-local-files"); "" names both
	// causes a server has.
	MappingPathsOff string
	// IgnoreRunningVDSO: never name a [vdso] mapping from this process's
	// own vDSO (the running kernel's, used when its build ID matches); only
	// from files found by build ID, such as perf's build-ID cache.
	IgnoreRunningVDSO bool
	// MaxDebugFile bounds the size of a file opened for its debug info or
	// symbols, found locally or downloaded (--max-debug-file; 0: no limit).
	// A larger file is skipped and named in the binary's reason, so a huge
	// file cannot take the server's memory.
	MaxDebugFile int64
	// PerfMapDir is the directory a JIT's perf map is read from, by the
	// file name of the mapping's /tmp/perf-<digits>.map path (perfmaps.go);
	// "" means /tmp. Only tests set it: the mapping's path is checked the
	// same either way.
	PerfMapDir string
}

// Symbolizer symbolizes profiles. Make one per process with New: it owns the
// store of loaded debug info keyed by build ID. It is safe for concurrent use.
type Symbolizer struct {
	cfg       Config
	store     *store
	debugDirs debugDirs // the --debug-dir files by build ID
}

// New returns a Symbolizer with the defaults for the fields cfg leaves empty.
func New(cfg Config) *Symbolizer {
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = 1 << 30
	}
	home, _ := os.UserHomeDir()
	def := func(v *string, d string) {
		switch *v {
		case "":
			*v = d
		case "-":
			*v = ""
		}
	}
	def(&cfg.SystemDebugDir, "/usr/lib/debug")
	if home != "" {
		def(&cfg.BuildIDCacheDir, filepath.Join(home, ".debug"))
	} else {
		def(&cfg.BuildIDCacheDir, "-")
	}
	def(&cfg.DebuginfodCacheDir, defaultDebuginfodCache(os.Getenv, home))
	def(&cfg.KallsymsPath, "/proc/kallsyms")
	def(&cfg.KernelNotesPath, "/sys/kernel/notes")
	if cfg.PerfMapDir == "" {
		cfg.PerfMapDir = perfmap.Dir
	}
	if cfg.KernelRelease == "" {
		cfg.KernelRelease = kernelRelease()
	}
	return &Symbolizer{cfg: cfg, store: newStore(cfg.CacheBytes)}
}

// defaultDebuginfodCache is elfutils' cache directory: $DEBUGINFOD_CACHE_PATH,
// else ~/.debuginfod_client_cache if it exists, else
// $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client.
func defaultDebuginfodCache(getenv func(string) string, home string) string {
	if p := getenv("DEBUGINFOD_CACHE_PATH"); p != "" {
		return p
	}
	if home != "" {
		if fi, err := os.Stat(filepath.Join(home, ".debuginfod_client_cache")); err == nil && fi.IsDir() {
			return filepath.Join(home, ".debuginfod_client_cache")
		}
	}
	if x := getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "debuginfod_client")
	}
	if home == "" {
		return "-"
	}
	return filepath.Join(home, ".cache", "debuginfod_client")
}

// State is where one binary stands during Symbolize; the job rows, their
// events and stored records use the same values.
type State string

const (
	StateQueued     State = "queued"
	StateSearching  State = "searching"
	StateFetching   State = "fetching"
	StateLoading    State = "loading"
	StateSymbolized State = "symbolized"
	StateNotFound   State = "no symbols" // stripped and nothing found: neutral, not an error
	StateSkipped    State = "skipped"
	StateError      State = "error"
)

// Final reports whether s is an end state for this run.
func (s State) Final() bool {
	switch s {
	case StateSymbolized, StateNotFound, StateSkipped, StateError:
		return true
	}
	return false
}

// Options are one Symbolize call's choices.
type Options struct {
	// Progress receives each binary's state changes and its fetch progress,
	// from any goroutine.
	Progress func(Event)
	// NoDebuginfod: use local debug info only for this profile.
	NoDebuginfod bool
	// Fetcher, when set, is asked instead of Config.Fetcher for this
	// call's downloads: the on-demand job's view of the fetch gate, which
	// reports progress to that job and lets its user skip a download.
	Fetcher Fetcher
	// Profile is the ID of the profile being symbolized, handed to
	// Config.Uploaded so the server notes which profiles used an uploaded
	// file; "" outside a server's job.
	Profile string
	// Binary, when set, gives the context one binary (key is its
	// BinaryKey, m its first mapping) is worked on under, so a caller can
	// cancel just that binary (a Skip button) or bound its time; the engine
	// calls the returned cancel once the binary has its outcome. A binary
	// whose context ends is reported skipped, its Err wrapping the
	// context's cause; one whose context ended already is not started.
	Binary func(ctx context.Context, key string, m *profile.Mapping) (context.Context, context.CancelFunc)
	// Parallel bounds how many binaries are worked on at once; 0 means
	// max(2, GOMAXPROCS).
	Parallel int
	// Names, when set, is held while the engine writes a binary's names
	// into the profile, so a caller may read the profile under it (store
	// or serve the names found so far) while other binaries still resolve.
	// Each binary's final event comes after its names are in the profile.
	Names sync.Locker
}

// Event is one state change of one binary. Mappings of one binary (same
// build ID, or same file when there is none) are handled together; Mapping is
// the first of them.
type Event struct {
	Mapping *profile.Mapping
	Key     string // BinaryKey of the binary
	File    string
	BuildID string
	State   State
	Source  string         // where the debug info was found
	Fetch   *FetchProgress // with StateFetching
	Err     error          // why it was not found, skipped or failed
}

// Report says what happened to each binary.
type Report struct {
	Mappings []MappingReport
}

// MappingReport is the outcome for one binary.
type MappingReport struct {
	Key           string // BinaryKey
	File, BuildID string
	Mappings      int // how many of the profile's mappings are this binary
	State         State
	Source        string // the file used and how it was found
	Resolved      int    // locations given at least a function name
	Unresolved    int    // locations left as addresses
	Reason        string // why not found, skipped or failed; or a caveat
}

// Symbolized counts the binaries in the report that resolved.
func (r *Report) Symbolized() int {
	n := 0
	for _, m := range r.Mappings {
		if m.State == StateSymbolized {
			n++
		}
	}
	return n
}

// NeedsSymbolization reports whether some location has an address but no
// lines in a mapping not yet symbolized, that is whether Symbolize has work.
func NeedsSymbolization(p *profile.Profile) bool {
	for _, l := range p.Location {
		if needs(l) {
			return true
		}
	}
	return false
}

func needs(l *profile.Location) bool { return NeedsName(l) }

// NeedsName reports whether l is an address Symbolize would try to name: it
// has no lines, and its mapping is a real file not yet symbolized. It is the
// one definition the job queue and the pages use too.
func NeedsName(l *profile.Location) bool {
	return l.Mapping != nil && !l.Mapping.HasFunctions && len(l.Line) == 0 && l.Address != 0 && !IsPseudoBinary(l.Mapping.File, l.Mapping.BuildID)
}

// IsPseudo reports whether a mapping names no file with debug info to look
// for: anonymous memory, the heap and stack, the vDSO and vsyscall pages, JIT
// regions (memfd). Such mappings are never missing debug info;
// IsPseudoBinary makes an exception of a vDSO with a build ID. A JIT's
// perf map, exactly /tmp/perf-<digits>.map (IsPerfMap), is not pseudo:
// its names are in that file, read as a binary's debug info is.
func IsPseudo(name string) bool {
	if IsKernel(name) || IsPerfMap(name) {
		return false
	}
	switch {
	case name == "", name == "//anon", strings.HasPrefix(name, "[anon"), name == "[heap]", name == "[stack]",
		name == "[vdso]", name == "[vsyscall]", name == "[vvar]", name == "[uprobes]", strings.HasPrefix(name, "/memfd:"),
		strings.HasPrefix(name, "/anon_hugepage"), strings.HasPrefix(name, "/dev/"), strings.HasPrefix(name, "/tmp/perf-") && strings.HasSuffix(name, ".map"):
		return true
	}
	return false
}

// IsKernel reports whether a mapping's file names the kernel itself (perf's
// "[kernel.kallsyms]_text", "[kernel]", /proc/kcore), not a module.
func IsKernel(name string) bool {
	return strings.HasPrefix(name, "[kernel.kallsyms]") || name == "[kernel]" || strings.HasPrefix(name, "/proc/kcore")
}

// BinaryKey names the binary a mapping belongs to, the one key every
// package uses for it (job rows, Skip, the store of loaded debug info):
// "kernel:" + build ID for the kernel itself (it is loaded differently from
// an ELF file of the same build ID: kallsyms, KASLR), else the lower-case
// build ID, else "file:" + the mapping's file.
func BinaryKey(m *profile.Mapping) string {
	if IsKernel(m.File) {
		return "kernel:" + strings.ToLower(m.BuildID)
	}
	if m.BuildID != "" {
		return strings.ToLower(m.BuildID)
	}
	return "file:" + m.File
}

type group struct {
	key      string
	mappings []*profile.Mapping
	locs     []*profile.Location
}

// Symbolize fills in functions and lines of p's locations that have none, in
// place, binary by binary: a binary that cannot be found or read is reported
// and its locations keep their addresses. Addresses are kept either way
// (callers' as call sites: CallSites runs first), and mappings that are
// already symbolized are left alone. The error is non-nil
// only when ctx ends; the report then covers what was done.
func (s *Symbolizer) Symbolize(ctx context.Context, p *profile.Profile, opt Options) (*Report, error) {
	CallSites(p) // a profile not read by web/ingest (or stored before the convention) gets it here
	var groups []*group
	byKey := map[string]*group{}
	seenMapping := map[*profile.Mapping]bool{}
	for _, l := range p.Location {
		if !needs(l) {
			continue
		}
		k := BinaryKey(l.Mapping)
		g := byKey[k]
		if g == nil {
			g = &group{key: k}
			byKey[k] = g
			groups = append(groups, g)
		}
		if !seenMapping[l.Mapping] {
			seenMapping[l.Mapping] = true
			g.mappings = append(g.mappings, l.Mapping)
		}
		g.locs = append(g.locs, l)
	}
	emit := func(ev Event) {
		if opt.Progress != nil {
			opt.Progress(ev)
		}
	}
	rep := &Report{Mappings: make([]MappingReport, len(groups))}
	for i, g := range groups {
		m := g.mappings[0]
		rep.Mappings[i] = MappingReport{Key: g.key, File: m.File, BuildID: m.BuildID, Mappings: len(g.mappings), State: StateQueued}
		emit(Event{Mapping: m, Key: g.key, File: m.File, BuildID: m.BuildID, State: StateQueued})
	}
	fn := newFunctions(p, opt.Names)
	var wg sync.WaitGroup
	work := make(chan int)
	workers := opt.Parallel
	if workers <= 0 {
		workers = max(2, runtime.GOMAXPROCS(0))
	}
	for range min(len(groups), workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				rep.Mappings[i] = s.symbolizeGroup(ctx, groups[i], opt, emit, fn)
			}
		}()
	}
dispatch:
	for i := range groups {
		if ctx.Err() != nil {
			break
		}
		select {
		case work <- i:
		case <-ctx.Done():
			break dispatch // binaries never started stay queued in the report
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

// symbolizeGroup finds, loads and applies the debug info of one binary.
func (s *Symbolizer) symbolizeGroup(ctx context.Context, g *group, opt Options, emit func(Event), fn *functions) (r MappingReport) {
	m := g.mappings[0]
	r = MappingReport{Key: g.key, File: m.File, BuildID: m.BuildID, Mappings: len(g.mappings), Unresolved: len(g.locs)}
	mctx := ctx
	if opt.Binary != nil {
		var cancel context.CancelFunc
		mctx, cancel = opt.Binary(ctx, g.key, m)
		defer cancel()
	}
	ev := func(st State, src string, err error) {
		emit(Event{Mapping: m, Key: g.key, File: m.File, BuildID: m.BuildID, State: st, Source: src, Err: err})
	}
	fail := func(st State, err error) MappingReport {
		r.State, r.Reason = st, err.Error()
		ev(st, "", err)
		return r
	}
	// This runs in a worker goroutine: a panic on one binary's debug info
	// (untrusted bytes) would end the process, so it fails that binary only.
	defer func() {
		if p := recover(); p != nil {
			r = fail(StateError, fmt.Errorf("symbolization failed on this binary's debug info (%v); it stays unsymbolized", p))
		}
	}()
	switch {
	case ctx.Err() != nil:
		return fail(StateSkipped, fmt.Errorf("stopped: %w", context.Cause(ctx)))
	case mctx.Err() != nil:
		return fail(StateSkipped, fmt.Errorf("skipped: %w", context.Cause(mctx)))
	}
	var e *lease
	var err error
	if IsPerfMap(m.File) {
		ev(StateSearching, "", nil)
		var l *loaded
		if l, err = s.openPerfMap(mctx, m.File); err == nil {
			e = &lease{l: l} // read for this run only, not held in the store
		}
	} else {
		e, err = s.acquire(mctx, g.key, m, opt, emit)
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return fail(StateSkipped, fmt.Errorf("stopped: %w", context.Cause(ctx)))
		case mctx.Err() != nil:
			return fail(StateSkipped, fmt.Errorf("skipped: %w", context.Cause(mctx)))
		case errors.Is(err, errNotFound):
			return fail(StateNotFound, err)
		default:
			return fail(StateError, err)
		}
	}
	if e.e != nil {
		defer s.store.release(e.e)
	}
	r.Source, r.Reason = e.l.source, e.l.note
	ev(StateLoading, e.l.source, nil)

	type result struct {
		loc    *profile.Location
		frames []elfsym.Frame
	}
	results := make([]result, 0, len(g.locs))
	objAddrs := make([]uint64, len(g.locs))
	var firstErr error
	for i, l := range g.locs {
		lm := l.Mapping
		a, err := e.l.obj.ObjAddr(l.Address, lm.Start, lm.Limit, lm.Offset)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		objAddrs[i] = a
	}
	if f, ok := e.l.obj.(*elfsym.File); ok {
		for i, a := range objAddrs {
			// A signal handler's return address is a signal trampoline's
			// first instruction (CallSites moved it one back, as for any
			// caller): it is named there, __restore_rt as perf names it.
			if a != 0 && f.SignalTrampolineAt(a+1) {
				objAddrs[i] = a + 1
			}
		}
	}
	pltErr := s.namePLT(mctx, e.l, m, opt, objAddrs) // plt.go
	if f, ok := e.l.obj.(*elfsym.File); ok && len(objAddrs) > 64 {
		f.Prefetch(objAddrs)
	}
	for i, l := range g.locs {
		if i%1024 == 0 && mctx.Err() != nil {
			return fail(StateSkipped, fmt.Errorf("skipped: %w", context.Cause(mctx)))
		}
		if objAddrs[i] == 0 {
			continue
		}
		frames, err := e.l.obj.Lookup(objAddrs[i], nil)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if len(frames) > 0 {
			results = append(results, result{l, frames})
		}
	}
	fn.mu.Lock()
	hasLines, hasInline := false, false
	for _, res := range results {
		res.loc.Line = res.loc.Line[:0]
		for _, fr := range res.frames {
			res.loc.Line = append(res.loc.Line, profile.Line{Function: fn.get(fr), Line: int64(fr.Line)})
			if fr.Line != 0 {
				hasLines = true
			}
		}
		if len(res.frames) > 1 {
			hasInline = true
		}
	}
	for _, mm := range g.mappings {
		if len(results) == 0 {
			break // nothing resolved: leave the mapping for another try
		}
		mm.HasFunctions = true
		mm.HasFilenames = mm.HasFilenames || hasLines
		mm.HasLineNumbers = mm.HasLineNumbers || hasLines
		mm.HasInlineFrames = mm.HasInlineFrames || hasInline
	}
	fn.mu.Unlock()
	r.Resolved = len(results)
	r.Unresolved = len(g.locs) - len(results)
	if len(results) == 0 {
		if firstErr != nil {
			return fail(StateError, fmt.Errorf("none of its %d addresses resolved: %w", len(g.locs), firstErr))
		}
		// Nothing named: the file loaded (a stripped binary at the mapping's
		// path) is of no use, and kept it would answer every later search for
		// this build ID, so Retry, a debug file uploaded or added to a
		// --debug-dir, and an expired debuginfod miss would change nothing.
		if e.e != nil { // a perf map is read for the run only (perfmaps.go)
			s.store.discard(e.e)
		}
		if pltErr != nil {
			return fail(StateNotFound, pltErr)
		}
		if IsPerfMap(m.File) {
			return fail(StateNotFound, fmt.Errorf("none of its %d addresses is in %s (a map written by another process of the same PID, or code the JIT wrote no line for)", len(g.locs), e.l.source))
		}
		// A stripped file and nothing better: no symbols, not a failure.
		why := ""
		if e.l.passedOver != "" {
			why = "; " + e.l.passedOver
		}
		return fail(StateNotFound, fmt.Errorf("none of its %d addresses is in the symbols of %s, the only file found for it (stripped, no separate debug info)%s", len(g.locs), e.l.source, why))
	}
	r.State = StateSymbolized
	if pltErr != nil {
		r.Reason = strings.TrimPrefix(r.Reason+"; "+pltErr.Error(), "; ")
	}
	if firstErr != nil && r.Reason == "" {
		r.Reason = fmt.Sprintf("some addresses only partly resolved: %v", firstErr)
	}
	emit(Event{Mapping: m, Key: g.key, File: m.File, BuildID: m.BuildID, State: StateSymbolized, Source: e.l.source})
	return r
}

// functions hands out one profile.Function per distinct function.
type functions struct {
	mu   sync.Locker
	p    *profile.Profile
	byID map[funcKey]*profile.Function
	next uint64
}

type funcKey struct {
	name, file string
	start      int
}

func newFunctions(p *profile.Profile, mu sync.Locker) *functions {
	if mu == nil {
		mu = new(sync.Mutex)
	}
	f := &functions{p: p, mu: mu, byID: map[funcKey]*profile.Function{}}
	for _, fn := range p.Function {
		f.next = max(f.next, fn.ID)
		f.byID[funcKey{fn.SystemName, fn.Filename, int(fn.StartLine)}] = fn
	}
	return f
}

func (f *functions) get(fr elfsym.Frame) *profile.Function {
	sys := fr.Name
	if sys == "" {
		sys = "??"
	}
	// The function's own file, so that one function whose code comes from
	// several files (inlined headers, #include'd code) stays one function.
	file := fr.FuncFile
	if file == "" {
		file = fr.File
	}
	k := funcKey{sys, file, fr.StartLine}
	if fn := f.byID[k]; fn != nil {
		return fn
	}
	f.next++
	fn := &profile.Function{ID: f.next, Name: elfsym.Demangle(sys, false), SystemName: sys, Filename: file, StartLine: int64(fr.StartLine)}
	f.byID[k] = fn
	f.p.Function = append(f.p.Function, fn)
	return fn
}

// Handle is one binary's loaded debug info, held in the store until Close.
type Handle struct {
	s *Symbolizer
	e *lease
	m profile.Mapping
}

// Open finds and loads the debug info for mapping m, as Symbolize does, for
// callers that look up addresses one by one (addr2line, benchmarks).
func (s *Symbolizer) Open(ctx context.Context, m *profile.Mapping, opt Options) (*Handle, error) {
	emit := func(ev Event) {
		if opt.Progress != nil {
			opt.Progress(ev)
		}
	}
	e, err := s.acquire(ctx, BinaryKey(m), m, opt, emit)
	if err != nil {
		return nil, err
	}
	return &Handle{s: s, e: e, m: *m}, nil
}

// Source says which file the handle's debug info came from, and how it was found.
func (h *Handle) Source() string { return h.e.l.source }

// Local reports whether the handle's debug info was found on this machine
// rather than uploaded to the server or downloaded from debuginfod: the
// paths other debug info names are someone else's, so the source view
// reads none of them from this machine's disk.
func (h *Handle) Local() bool { return h.e.l.local }

// Lookup returns the frames at runtime address addr of the mapping, innermost
// first, appended to frames[:0].
func (h *Handle) Lookup(addr uint64, frames []elfsym.Frame) ([]elfsym.Frame, error) {
	a, err := h.e.l.obj.ObjAddr(addr, h.m.Start, h.m.Limit, h.m.Offset)
	if err != nil {
		return frames[:0], err
	}
	return h.e.l.obj.Lookup(a, frames)
}

// Unit returns the compile unit of the mapping's debug info that holds
// runtime address addr: the directory and files a source path must match
// before the source view reads it from this machine.
func (h *Handle) Unit(addr uint64) (elfsym.CompileUnit, bool, error) {
	a, err := h.e.l.obj.ObjAddr(addr, h.m.Start, h.m.Limit, h.m.Offset)
	if err != nil {
		return elfsym.CompileUnit{}, false, err
	}
	u, ok := h.e.l.obj.(interface {
		Unit(uint64) (elfsym.CompileUnit, bool, error)
	})
	if !ok {
		return elfsym.CompileUnit{}, false, nil // kallsyms: no DWARF
	}
	return u.Unit(a)
}

// Close gives the debug info back to the store.
func (h *Handle) Close() {
	if h.e != nil {
		h.s.store.release(h.e.e)
		h.e = nil
	}
}

// Lookup resolves one runtime address in mapping m: a convenience over
// Open, Handle.Lookup and Close.
func (s *Symbolizer) Lookup(ctx context.Context, m *profile.Mapping, addr uint64) ([]elfsym.Frame, error) {
	h, err := s.Open(ctx, m, Options{})
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return h.Lookup(addr, nil)
}

// CacheBytes is the memory budget of loaded debug info (Config.CacheBytes,
// --symbol-cache-size), for other holders of debug info to follow.
func (s *Symbolizer) CacheBytes() int64 { return s.cfg.CacheBytes }

// Loads counts what the store loaded from binaries (each facet of each
// binary once while it stays in the budget): a measure of reuse.
func (s *Symbolizer) Loads() int64 { return s.store.loads.Load() }

// CacheStats reports how many binaries the store holds and their bytes.
func (s *Symbolizer) CacheStats() (binaries int, bytes int64) { return s.store.stats() }

// fetcher is the Fetcher for a call with opt: its own, else the Config's
// (nil: none).
func (s *Symbolizer) fetcher(opt Options) Fetcher {
	if opt.Fetcher != nil {
		return opt.Fetcher
	}
	return s.cfg.Fetcher
}
