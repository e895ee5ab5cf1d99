package symbolize

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
	"golang.org/x/sync/errgroup"

	"viewer/symbolize/buildid"
	"viewer/symbolize/elfsym"
)

// AddressBase says what the addresses of a BinaryAddresses are relative to.
type AddressBase int

const (
	// ObjectAddresses are addresses in the object's own address space, as
	// addr2line and llvm-symbolizer take them.
	ObjectAddresses AddressBase = iota
	// ModuleOffsets are offsets from the object's image base (its first
	// byte's link address), as the Firefox Profiler and samply send them.
	ModuleOffsets
)

// BinaryAddresses are addresses of one binary to name, for callers outside
// profiles (the symbolication APIs).
type BinaryAddresses struct {
	// BuildID finds the debug info; File names the binary as recorded and
	// finds it by path only where the Symbolizer may open mapping paths.
	BuildID, File string
	Addresses     []uint64
	Base          AddressBase
}

// BinaryFrames is what SymbolizeAddresses found for one BinaryAddresses.
type BinaryFrames struct {
	BuildID, File string
	State         State
	// Source is where the debug info came from; Reason why it was not
	// found or failed.
	Source, Reason string
	// Frames holds, per address, its frames innermost first (the inline
	// chain, then the function the code is in); nil when the address
	// resolved to nothing.
	Frames [][]Frame
}

// Frame is one function at an address: its demangled name (with its
// parameters, as llvm-symbolizer prints it), and the source
// file and line of the code there (0 when unknown).
type Frame struct {
	Function, File string
	Line           int
	// FuncOffset is the address's distance from the start of the
	// function symbol that holds it, when HasFuncOffset (the symbol
	// table has one); only the outermost frame has it.
	FuncOffset    uint64
	HasFuncOffset bool
}

// maxParallelBinaries bounds the binaries SymbolizeAddresses loads at once.
const maxParallelBinaries = 4

// SymbolizeAddresses names the addresses of each binary with the same
// locator, cache of loaded debug info and debuginfod policy as Symbolize,
// a few binaries at a time. One binary's failure is reported in its own
// result and never fails the others.
func (s *Symbolizer) SymbolizeAddresses(ctx context.Context, bins []BinaryAddresses, opt Options) []BinaryFrames {
	out := make([]BinaryFrames, len(bins))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallelBinaries)
	for i, b := range bins {
		g.Go(func() error {
			out[i] = s.symbolizeBinary(ctx, b, opt)
			return nil
		})
	}
	g.Wait()
	return out
}

func (s *Symbolizer) symbolizeBinary(ctx context.Context, b BinaryAddresses, opt Options) (r BinaryFrames) {
	r = BinaryFrames{BuildID: b.BuildID, File: b.File}
	// Debug info is untrusted bytes: a panic fails this binary only.
	defer func() {
		if p := recover(); p != nil {
			r.State, r.Frames = StateError, nil
			r.Reason = fmt.Sprintf("symbolization failed on this binary's debug info (%v)", p)
		}
	}()
	m := &profile.Mapping{ID: 1, BuildID: b.BuildID, File: b.File}
	h, err := s.Open(ctx, m, opt)
	if err != nil {
		r.State, r.Reason = StateError, err.Error()
		switch {
		case ctx.Err() != nil:
			r.State = StateSkipped
		case errors.Is(err, errNotFound):
			r.State = StateNotFound
		}
		return r
	}
	defer h.Close()
	r.State, r.Source = StateSymbolized, h.Source()
	f, _ := h.e.l.obj.(*elfsym.File)
	var base uint64
	if b.Base == ModuleOffsets && f != nil {
		base = f.ImageBase()
	}
	addrs := make([]uint64, len(b.Addresses))
	for i, a := range b.Addresses {
		addrs[i] = base + a
	}
	if f != nil && len(addrs) > 64 {
		f.Prefetch(addrs)
	}
	r.Frames = make([][]Frame, len(addrs))
	var buf []elfsym.Frame
	for i, a := range addrs {
		if i%4096 == 0 && ctx.Err() != nil {
			r.State, r.Reason = StateSkipped, fmt.Sprintf("stopped after %d of %d addresses: %v", i, len(addrs), context.Cause(ctx))
			return r
		}
		buf, err = h.e.l.obj.Lookup(a, buf)
		if err != nil || len(buf) == 0 {
			continue
		}
		fr := make([]Frame, len(buf))
		for j, e := range buf {
			fr[j] = Frame{Function: elfsym.Demangle(e.Name, true), File: e.File, Line: e.Line}
		}
		if f != nil {
			if start, ok := f.FuncStart(a); ok {
				fr[len(fr)-1].FuncOffset, fr[len(fr)-1].HasFuncOffset = a-start, true
			}
		}
		r.Frames[i] = fr
	}
	return r
}

// CompleteBuildID finds the full build ID that starts with prefix (lower
// case hex) among the build IDs of the debug files this Symbolizer can
// read locally: the --debug-dir directories, the system debug directory,
// perf's build-ID cache and the debuginfod cache. Breakpad debug IDs, as
// the Firefox Profiler sends them, hold only a GNU build ID's first 16
// bytes, and a debuginfod server can only be asked for a whole one.
func (s *Symbolizer) CompleteBuildID(prefix string) (string, bool) {
	if len(prefix) < 4 {
		return "", false
	}
	head, rest := prefix[:2], prefix[2:]
	var globs []string
	buildIDDir := func(d string) {
		globs = append(globs, filepath.Join(d, ".build-id", head, rest+"*"), filepath.Join(d, head, rest+"*"))
	}
	for _, d := range s.cfg.DebugDirs {
		buildIDDir(d)
		globs = append(globs, filepath.Join(d, prefix+"*"))
	}
	for _, d := range []string{s.cfg.SystemDebugDir, s.cfg.BuildIDCacheDir} {
		if d != "" {
			buildIDDir(d)
		}
	}
	if d := s.cfg.DebuginfodCacheDir; d != "" {
		globs = append(globs, filepath.Join(d, prefix+"*"))
	}
	for _, g := range globs {
		matches, _ := filepath.Glob(g)
		sort.Strings(matches)
		for _, m := range matches {
			name := strings.TrimSuffix(filepath.Base(m), ".debug")
			id := name
			if filepath.Base(filepath.Dir(m)) == head && !strings.HasPrefix(name, prefix) {
				id = head + name
			}
			if n, err := buildid.Normalize(id); err == nil && n == id && strings.HasPrefix(id, prefix) {
				return id, true
			}
		}
	}
	return "", false
}
