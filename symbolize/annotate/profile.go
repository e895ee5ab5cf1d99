package annotate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize/datatype"
	"viewer/symbolize/elfsym"
)

// Choosing a function's binary and symbol from a profile, for the annotate
// view and `viewer annotate` alike.

// Handle is one mapping's code and DWARF, opened by build ID
// (*symbolize.CodeHandle).
type Handle interface {
	Binary() *datatype.Binary
	ObjAddr(m *profile.Mapping, pc uint64) (uint64, error)
	Exec() string
	Debug() string
	Source() string
	Close()
}

// SymbolFile is a debug or executable file's symbol table and line table
// (*elfsym.File).
type SymbolFile interface {
	Lines
	Symbols() []elfsym.Symbol
}

// Opener finds a mapping's code as the data-type page does, and opens the
// symbol and line tables of a file it found.
type Opener interface {
	OpenCode(ctx context.Context, m *profile.Mapping) (Handle, error)
	SymbolFile(path string) (SymbolFile, error)
}

// Inline modes for a function inlined in several places.
const (
	// InlineCopy lists the symbol holding the hottest copy (or the one
	// Request.In names); the others are listed in Result.Others.
	InlineCopy = "copy"
	// InlineMerge lists every copy's instructions of the function under
	// the function's own source lines, as perf annotate's --inline views
	// merge them.
	InlineMerge = "merge"
)

// Request says what to annotate.
type Request struct {
	Fn string // the function, as the profile or the symbol table names it
	In string // the symbol to list when Fn is inlined in several ("" = hottest)
	SI int    // the sample type
	// Inline is InlineCopy ("" too) or InlineMerge.
	Inline string
	// Keep selects the samples (the focus, ignore and time filters); nil
	// keeps all. LeafKept says whether a sample's leaf location is still
	// drawn (hide and show): a sample whose leaf is not counts on no
	// instruction, though it stays in the profile's total. nil keeps all.
	Keep     func(*profile.Sample) bool
	LeafKept func(*profile.Location) bool
	// DSONames names the binaries in results and errors
	// (symbolize.DSONames); nil names each by its file's base name.
	DSONames func([]*profile.Mapping) map[*profile.Mapping]string
}

// Result is a listing and what a page says around it.
type Result struct {
	Listing *Listing
	DSO     string
	BuildID string
	Source  string // where the debug info came from
	Total   int64  // the profile's total for the sample type, after Keep
	// Others are the other symbols holding copies of Fn (InlineCopy).
	Others []string
	// Copies are the symbols a merged listing (InlineMerge) combines.
	Copies []string
}

// RequestError is a request the profile cannot answer: NotFound when it
// has no such function or no binary to list it from, else a bad parameter.
// Its message says what to do.
type RequestError struct {
	NotFound bool
	Msg      string
	// Sampled is what the profile alone says about the function when the
	// profile places its samples in a binary whose code cannot be opened
	// (the executable is absent): nil otherwise.
	Sampled *Sampled
}

// Sampled is a function's self samples by address as the profile records
// them, for when its binary's code cannot be read: no instructions, but
// where the time went and, when the profile has them, the source lines.
type Sampled struct {
	DSO     string
	BuildID string
	// Why says why the code could not be opened (the locator's reasons).
	Why   string
	Total int64 // the function's self samples, after Keep and LeafKept
	// ProfileTotal is the profile's total for the sample type, after Keep.
	ProfileTotal int64
	Addrs        []SampledAddr // by address
}

// SampledAddr is one address of a function in the profile: the address in
// the process, as the profile records it, and its self samples.
type SampledAddr struct {
	Addr uint64
	Self int64
	// Frames are the profile's source frames at the address, innermost
	// first (more than one when the code is inlined).
	Frames []elfsym.Frame
}

func (e *RequestError) Error() string { return e.Msg }

// maxBinaries bounds the binaries a name search opens.
const maxBinaries = 8

// maxInlineProbe bounds the distinct addresses looked up to find where an
// inlined function's code is.
const maxInlineProbe = 4096

// ForProfile finds req.Fn in p and lists it. The binary is the one the
// samples whose leaf is in Fn are in (the heaviest), else Fn is looked up
// by name in the symbol tables of the sampled binaries, heaviest first;
// one binary that cannot be opened never stops the search.
func ForProfile(ctx context.Context, op Opener, p *profile.Profile, req Request) (*Result, error) {
	switch req.Inline {
	case "", InlineCopy, InlineMerge:
	default:
		return nil, &RequestError{Msg: fmt.Sprintf("inline=%q: give %q (one copy) or %q (copies merged by source line)", req.Inline, InlineCopy, InlineMerge)}
	}
	si, fn := req.SI, req.Fn
	var total int64
	byMapping := map[*profile.Mapping]int64{}
	fnWeight := map[*profile.Mapping]int64{}
	hot := map[*profile.Mapping]*profile.Location{}
	hotW := map[*profile.Location]int64{}
	var kept []*profile.Sample // the samples with a value whose leaf is drawn
	for _, smp := range p.Sample {
		if si >= len(smp.Value) || smp.Value[si] == 0 || req.Keep != nil && !req.Keep(smp) {
			continue
		}
		w := smp.Value[si]
		total += w
		if len(smp.Location) == 0 || smp.Location[0].Mapping == nil || smp.Location[0].Address == 0 {
			continue
		}
		leaf := smp.Location[0]
		if req.LeafKept != nil && !req.LeafKept(leaf) {
			continue
		}
		kept = append(kept, smp)
		byMapping[leaf.Mapping] += w
		if hasFunc(leaf, fn) {
			fnWeight[leaf.Mapping] += w
			hotW[leaf] += w
			if h := hot[leaf.Mapping]; h == nil || hotW[leaf] > hotW[h] {
				hot[leaf.Mapping] = leaf
			}
		}
	}
	var order []*profile.Mapping
	for m := range byMapping {
		order = append(order, m)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if fnWeight[a] != fnWeight[b] {
			return fnWeight[a] > fnWeight[b]
		}
		if byMapping[a] != byMapping[b] {
			return byMapping[a] > byMapping[b]
		}
		return a.ID < b.ID
	})
	if len(order) > 0 && fnWeight[order[0]] > 0 {
		n := 0
		for n < len(order) && fnWeight[order[n]] > 0 {
			n++
		}
		order = order[:n] // fn is where the profile says it is
	}
	if len(order) > maxBinaries {
		order = order[:maxBinaries]
	}
	names := baseNames(order)
	if req.DSONames != nil {
		names = req.DSONames(order)
	}
	var why []string
	var unopened *profile.Mapping // the first binary holding fn's samples whose code is absent
	var unopenedWhy string
	for _, m := range order {
		res, err := listIn(ctx, op, m, names[m], kept, req, hot[m])
		if err != nil {
			if errors.Is(err, errNotHere) {
				why = append(why, names[m]+": "+err.Error())
				var nh notHere
				if errors.As(err, &nh) && nh.unopened && fnWeight[m] > 0 && unopened == nil {
					unopened, unopenedWhy = m, err.Error()
				}
				continue
			}
			return nil, err
		}
		res.Total = total
		return res, nil
	}
	if len(order) == 0 {
		return nil, &RequestError{NotFound: true, Msg: "no samples with an address for this sample type: annotating needs a profile that keeps addresses and build IDs (perf.data, or pprof with mappings)"}
	}
	if unopened != nil {
		sm := sampledIn(unopened, kept, fn, si)
		sm.DSO, sm.BuildID, sm.Why, sm.ProfileTotal = names[unopened], unopened.BuildID, unopenedWhy, total
		id := ""
		if sm.BuildID != "" {
			id = " (build ID " + sm.BuildID + ")"
		}
		return nil, &RequestError{NotFound: true, Sampled: sm, Msg: fmt.Sprintf(
			"the executable of %s%s was not found, so %s's instructions cannot be listed: give its directory with --debug-dir, let a debuginfod server (DEBUGINFOD_URLS) serve it, or upload it with viewer upload-debuginfo (%s)",
			sm.DSO, id, fn, unopenedWhy)}
	}
	return nil, &RequestError{NotFound: true, Msg: fmt.Sprintf("function %q not found (%s); pick a function from the flame graph or top table", fn, strings.Join(why, "; "))}
}

// sampledIn is fn's self samples in mapping m by address, from the kept
// samples whose leaf the profile places in fn, with the leaf's lines.
func sampledIn(m *profile.Mapping, kept []*profile.Sample, fn string, si int) *Sampled {
	sm := &Sampled{}
	at := map[uint64]int{}
	for _, smp := range kept {
		leaf := smp.Location[0]
		if leaf.Mapping != m || !hasFunc(leaf, fn) {
			continue
		}
		w := smp.Value[si]
		sm.Total += w
		i, ok := at[leaf.Address]
		if !ok {
			i = len(sm.Addrs)
			at[leaf.Address] = i
			a := SampledAddr{Addr: leaf.Address}
			for _, ln := range leaf.Line {
				f := elfsym.Frame{Line: int(ln.Line)}
				if ln.Function != nil {
					f.Name, f.File = ln.Function.Name, ln.Function.Filename
				}
				a.Frames = append(a.Frames, f)
			}
			sm.Addrs = append(sm.Addrs, a)
		}
		sm.Addrs[i].Self += w
	}
	sort.Slice(sm.Addrs, func(i, j int) bool { return sm.Addrs[i].Addr < sm.Addrs[j].Addr })
	return sm
}

// errNotHere is a binary that does not hold the function or cannot be
// opened: the search goes on to the next.
var errNotHere = errors.New("not here")

// notHere says why; unopened when the binary's code or symbols could not
// be opened at all (rather than not holding the function).
type notHere struct {
	msg      string
	unopened bool
}

func (e notHere) Error() string        { return e.msg }
func (e notHere) Is(target error) bool { return target == errNotHere }

// listIn lists req.Fn from mapping m, or says why it cannot (errNotHere).
func listIn(ctx context.Context, op Opener, m *profile.Mapping, name string, kept []*profile.Sample, req Request, hot *profile.Location) (*Result, error) {
	fn, si := req.Fn, req.SI
	tb, err := op.OpenCode(ctx, m)
	if err != nil {
		return nil, notHere{err.Error(), true}
	}
	defer tb.Close()
	sf, err := op.SymbolFile(tb.Debug())
	if err != nil {
		return nil, notHere{err.Error(), true}
	}
	syms := Symbols(sf.Symbols())
	if len(syms) == 0 && tb.Exec() != tb.Debug() {
		if ef, err := op.SymbolFile(tb.Exec()); err == nil {
			syms = Symbols(ef.Symbols())
		}
	}
	// The samples of m as object addresses, and the weight by address of
	// those that may be fn's.
	var samples []datatype.Sample
	byAddr := map[uint64]int64{}
	for _, smp := range kept {
		leaf := smp.Location[0]
		if leaf.Mapping != m {
			continue
		}
		a, err := tb.ObjAddr(m, leaf.Address)
		if err != nil {
			continue
		}
		samples = append(samples, datatype.Sample{PC: a, Weight: smp.Value[si]})
		// Candidates for fn's copies: the addresses the profile places in
		// fn, or does not name at all (looked up in the line table).
		if len(leaf.Line) > 0 && !hasFunc(leaf, fn) {
			continue
		}
		if len(byAddr) < maxInlineProbe || byAddr[a] > 0 {
			byAddr[a] += smp.Value[si]
		}
	}
	own, hasOwn := syms.Named(fn)
	// The symbols holding sampled code of fn: its own, and those it is
	// inlined in, by weight.
	holders := inlineHolders(sf, syms, byAddr, fn)
	var sym elfsym.Symbol
	var ok bool
	switch {
	case req.In != "":
		sym, ok = syms.Named(req.In)
	case hot != nil:
		if a, err := tb.ObjAddr(m, hot.Address); err == nil {
			sym, ok = syms.At(a)
		}
	}
	if !ok && hasOwn {
		sym, ok = own, true
	}
	if !ok && len(holders) > 0 {
		sym, ok = holders[0], true
	}
	if !ok {
		return nil, notHere{msg: "no symbol or inlined function " + fn}
	}
	res := &Result{DSO: name, BuildID: m.BuildID, Source: tb.Source()}
	if req.Inline == InlineMerge {
		copies := holders
		if hasOwn && !hasSymbol(copies, own.Name) {
			copies = append([]elfsym.Symbol{own}, copies...)
		}
		if !hasSymbol(copies, sym.Name) {
			copies = append(copies, sym)
		}
		var parts []*Listing
		for _, c := range copies {
			l, err := Build(tb.Binary(), sf, syms, syms.Range(c), samples)
			if err != nil {
				return nil, fmt.Errorf("cannot list %s in %s: %w", c.Name, name, err)
			}
			parts = append(parts, l)
			res.Copies = append(res.Copies, c.Name)
		}
		res.Listing = Merge(fn, parts)
		return res, nil
	}
	lst, err := Build(tb.Binary(), sf, syms, syms.Range(sym), samples)
	if err != nil {
		return nil, fmt.Errorf("cannot list %s in %s: %w", sym.Name, name, err)
	}
	res.Listing = lst
	for _, h := range holders {
		if h.Name != sym.Name {
			res.Others = append(res.Others, h.Name)
		}
	}
	if hasOwn && own.Name != sym.Name && !contains(res.Others, own.Name) {
		res.Others = append(res.Others, own.Name)
	}
	sort.Strings(res.Others)
	return res, nil
}

func baseNames(ms []*profile.Mapping) map[*profile.Mapping]string {
	out := map[*profile.Mapping]string{}
	for _, m := range ms {
		out[m] = filepath.Base(m.File)
	}
	return out
}

func hasSymbol(syms []elfsym.Symbol, name string) bool {
	for _, s := range syms {
		if s.Name == name {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// inlineHolders returns the symbols holding sampled addresses whose
// source frames include fn inlined (not as the outermost frame), the
// heaviest first.
func inlineHolders(lines Lines, syms Symbols, byAddr map[uint64]int64, fn string) []elfsym.Symbol {
	weight := map[string]int64{}
	bySym := map[string]elfsym.Symbol{}
	var frames []elfsym.Frame
	for a, w := range byAddr {
		frames, _ = lines.Lookup(a, frames[:0])
		for _, f := range frames[:max(len(frames)-1, 0)] {
			if nameIs(f.Name, fn) {
				if s, ok := syms.At(a); ok {
					weight[s.Name] += w
					bySym[s.Name] = s
				}
				break
			}
		}
	}
	out := make([]elfsym.Symbol, 0, len(bySym))
	for _, s := range bySym {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if weight[out[i].Name] != weight[out[j].Name] {
			return weight[out[i].Name] > weight[out[j].Name]
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// nameIs says whether a DWARF or symbol name (perhaps mangled) is fn.
func nameIs(name, fn string) bool {
	return name == fn || strings.HasPrefix(name, "_Z") && elfsym.Demangle(name, false) == fn
}

// hasFunc says whether location l's lines include function fn.
func hasFunc(l *profile.Location, fn string) bool {
	for _, ln := range l.Line {
		if f := ln.Function; f != nil && (f.Name == fn || f.SystemName == fn) {
			return true
		}
	}
	return false
}
