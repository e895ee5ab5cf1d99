package symbolize

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize/annotate"
	"viewer/symbolize/datatype"
	"viewer/symbolize/elfsym"
)

// ListingRequest names the function an annotated listing is of, and which
// samples count.
type ListingRequest struct {
	// Fn is the function, as the flame graph or top table names it.
	Fn string
	// In is the symbol to list when fn's code is in several (copies of an
	// inlined function); "" means the one holding fn's hottest address.
	In string
	// SampleIndex is the sample type whose values count.
	SampleIndex int
	// Keep says whether a sample counts (the page's filters); nil keeps all.
	Keep func(*profile.Sample) bool
	// Options are the data-type page's: how the binary is found.
	Options DataTypeOptions
}

// Listing is one function's annotated instructions (annotate.Listing) with
// what the annotate view says around them.
type Listing struct {
	*annotate.Listing
	DSO     string // the binary, named as the data-type page names it
	BuildID string
	Source  string // where the debug info came from
	// ProfileTotal is the profile's total for the sample type (after the
	// filters).
	ProfileTotal int64
	// Others are the other symbols fn's code is in (copies of an inlined
	// function), sorted.
	Others []string
}

// ListingError is why no listing was made: NotFound when the profile has
// no sampled address, or no binary holds the function (the request names
// the wrong thing), else the function could not be decoded.
type ListingError struct {
	NotFound bool
	Msg      string
}

func (e *ListingError) Error() string { return e.Msg }

// Demangle is a symbol's C++ or Rust name as a person reads it, without
// parameters (elfsym.Demangle).
func Demangle(name string) string { return elfsym.Demangle(name, false) }

// DataKindUnknown is the access kind of an instruction whose data type is
// not known (datatype.KindUnknown).
const DataKindUnknown = datatype.KindUnknown

// hasFunc says whether location l's lines include function fn.
func hasFunc(l *profile.Location, fn string) bool {
	for _, ln := range l.Line {
		if f := ln.Function; f != nil && (f.Name == fn || f.SystemName == fn) {
			return true
		}
	}
	return false
}

// maxListingBinaries bounds the binaries the name search opens.
const maxListingBinaries = 8

// Listing lists the instructions of req.Fn in p with their self samples,
// source lines and data-type accesses. The function's binary is the one
// the samples whose leaf is in fn say (the heaviest mapping; the symbol
// holding its hottest address, or the one named In), else found by name
// in the sampled binaries' symbol tables. Code and DWARF are opened as the
// data-type page's are (OpenCode), and the symbol and line tables are the
// binary's symbols in the store: one owner, one --symbol-cache-size budget.
func (s *Symbolizer) Listing(ctx context.Context, p *profile.Profile, req ListingRequest) (*Listing, error) {
	si, fn, in, opt := req.SampleIndex, req.Fn, req.In, req.Options
	var total int64
	byMapping := map[*profile.Mapping]int64{}
	fnWeight := map[*profile.Mapping]int64{}
	hot := map[*profile.Mapping]*profile.Location{}
	hotW := map[*profile.Location]int64{}
	var kept []*profile.Sample
	for _, smp := range p.Sample {
		if si >= len(smp.Value) || smp.Value[si] == 0 || req.Keep != nil && !req.Keep(smp) {
			continue
		}
		w := smp.Value[si]
		total += w
		kept = append(kept, smp)
		if len(smp.Location) == 0 || smp.Location[0].Mapping == nil || smp.Location[0].Address == 0 {
			continue
		}
		leaf := smp.Location[0]
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
	if len(order) > maxListingBinaries {
		order = order[:maxListingBinaries]
	}
	names := dsoNames(order)
	var why []string
	for _, m := range order {
		lst, skip, err := s.listIn(ctx, m, kept, si, fn, in, hot[m], opt)
		if skip != nil {
			why = append(why, names[m]+": "+skip.Error())
			continue
		}
		if err != nil {
			return nil, &ListingError{Msg: fmt.Sprintf("cannot list %s in %s: %v", lst.Func.Name, names[m], err)}
		}
		lst.DSO, lst.BuildID, lst.ProfileTotal = names[m], m.BuildID, total
		return lst, nil
	}
	if len(order) == 0 {
		return nil, &ListingError{NotFound: true, Msg: "no samples with an address for this sample type: the annotate view needs a profile that keeps addresses and build IDs (perf.data, or pprof with mappings)"}
	}
	return nil, &ListingError{NotFound: true, Msg: fmt.Sprintf("function %q not found (%s); pick a function from the flame graph or top table", fn, strings.Join(why, "; "))}
}

// listIn lists fn in mapping m. skip says why m cannot be opened or does
// not hold fn (the next binary is tried); err is a failure to decode the
// function found, whose name is then in the returned listing's Func.
func (s *Symbolizer) listIn(ctx context.Context, m *profile.Mapping, kept []*profile.Sample, si int, fn, in string, hot *profile.Location, opt DataTypeOptions) (lst *Listing, skip, err error) {
	tb, err := s.OpenCode(ctx, m, opt)
	if err != nil {
		return nil, err, nil
	}
	defer tb.Close()
	sf, err := s.listingSymbols(ctx, m, tb, opt)
	if err != nil {
		return nil, err, nil
	}
	defer sf.close()
	syms := annotate.Symbols(sf.file.Symbols())
	if len(syms) == 0 && tb.Exec() != tb.Debug() {
		// A debug file without a symbol table: the executable's, read
		// once for this listing.
		if ef, err := elfsym.OpenContext(ctx, tb.Exec(), trustOf(m, tb.Exec())); err == nil {
			ef.UseSymbolTableNames(true)
			syms = annotate.Symbols(ef.Symbols())
			ef.Close()
		}
	}
	var sym elfsym.Symbol
	var ok bool
	if in != "" {
		sym, ok = syms.Named(in)
	} else if hot != nil {
		if a, err := tb.ObjAddr(m, hot.Address); err == nil {
			sym, ok = syms.At(a)
		}
	}
	if !ok {
		sym, ok = syms.Named(fn)
	}
	if !ok {
		// An inlined function has no symbol: the heaviest sampled
		// address whose source frames include it (an unsymbolized
		// profile names no function at all).
		sym, ok = inlinedIn(sf.file, syms, tb, m, kept, si, fn)
	}
	if !ok {
		return nil, fmt.Errorf("no symbol or inlined function %s", fn), nil
	}
	f := syms.Range(sym)
	// The samples of m, as object addresses, and the other symbols fn's
	// code is in (copies of an inlined function).
	var samples []datatype.Sample
	copies := map[string]bool{}
	for _, smp := range kept {
		leaf := smp.Location[0:1]
		if len(leaf) == 0 || leaf[0].Mapping != m {
			continue
		}
		a, err := tb.ObjAddr(m, leaf[0].Address)
		if err != nil {
			continue
		}
		if a >= f.Lo && a < f.Hi {
			samples = append(samples, datatype.Sample{PC: a, Weight: smp.Value[si]})
		} else if hasFunc(leaf[0], fn) {
			if o, ok := syms.At(a); ok && o.Name != sym.Name {
				copies[o.Name] = true
			}
		}
	}
	al, err := annotate.Build(tb.Binary(), sf.file, syms, f, samples)
	if err != nil {
		return &Listing{Listing: &annotate.Listing{Func: annotate.Func{Name: sym.Name}}}, nil, err
	}
	lst = &Listing{Listing: al, Source: tb.Source()}
	for o := range copies {
		lst.Others = append(lst.Others, o)
	}
	sort.Strings(lst.Others)
	return lst, nil, nil
}

// symbolFile is an ELF file's symbol and line tables.
type symbolFile interface {
	Path() string
	Symbols() []elfsym.Symbol
	Lookup(addr uint64, frames []elfsym.Frame) ([]elfsym.Frame, error)
}

// listingFile is the symbol and line tables a listing reads, and how to
// give them back.
type listingFile struct {
	file  symbolFile
	close func()
}

// listingSymbols returns the symbol and line tables of tb's debug file:
// m's symbols in the store (found and loaded as symbolization does, and
// kept for it), or, when the store's are another file (the kernel's
// kallsyms, a file without the DWARF the code facet found), that file
// opened for this listing only.
func (s *Symbolizer) listingSymbols(ctx context.Context, m *profile.Mapping, tb *CodeHandle, opt DataTypeOptions) (listingFile, error) {
	ls, err := s.acquire(ctx, BinaryKey(m), m, Options{NoDebuginfod: opt.NoDebuginfod}, func(Event) {})
	if err == nil {
		if f, ok := ls.l.obj.(symbolFile); ok && f.Path() == tb.Debug() {
			return listingFile{file: f, close: func() { s.store.release(ls.e) }}, nil
		}
		s.store.release(ls.e)
	}
	f, err := elfsym.OpenContext(ctx, tb.Debug(), trustOf(m, tb.Debug()))
	if err != nil {
		return listingFile{}, err
	}
	f.UseSymbolTableNames(true)
	return listingFile{file: f, close: func() { f.Close() }}, nil
}

// maxInlineProbe bounds the distinct addresses looked up to find where an
// inlined function's code is.
const maxInlineProbe = 4096

// inlinedIn returns the symbol holding the heaviest sampled address of m
// whose source frames include fn.
func inlinedIn(lines annotate.Lines, syms annotate.Symbols, tb *CodeHandle, m *profile.Mapping, kept []*profile.Sample, si int, fn string) (elfsym.Symbol, bool) {
	w := map[uint64]int64{}
	for _, smp := range kept {
		if len(smp.Location) == 0 || smp.Location[0].Mapping != m {
			continue
		}
		if a, err := tb.ObjAddr(m, smp.Location[0].Address); err == nil && (len(w) < maxInlineProbe || w[a] > 0) {
			w[a] += smp.Value[si]
		}
	}
	var best uint64
	var bestW int64
	var frames []elfsym.Frame
	for a, v := range w {
		if v < bestW || v == bestW && a > best {
			continue
		}
		frames, _ = lines.Lookup(a, frames[:0])
		for _, f := range frames[:max(len(frames)-1, 0)] {
			if f.Name == fn || elfsym.Demangle(f.Name, false) == fn {
				best, bestW = a, v
				break
			}
		}
	}
	if bestW == 0 {
		return elfsym.Symbol{}, false
	}
	return syms.At(best)
}
