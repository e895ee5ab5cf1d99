package symbolize

import (
	"context"

	"github.com/google/pprof/profile"

	"viewer/symbolize/annotate"
	"viewer/symbolize/datatype"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
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
	// Inline is annotate.InlineCopy ("" too) or annotate.InlineMerge.
	Inline string
	// Keep says whether a sample counts (focus, ignore, time); nil keeps
	// all. LeafKept says whether a sample's leaf is drawn (hide, show): a
	// sample whose leaf is not counts on no instruction. nil keeps all.
	Keep     func(*profile.Sample) bool
	LeafKept func(*profile.Location) bool
	// Options are the data-type page's: how the binary is found.
	Options DataTypeOptions
}

// Listing is one function's annotated instructions with what the annotate
// view and `viewer annotate` say around them (annotate.Result).
type Listing = annotate.Result

// ListingError is a request the profile cannot answer (annotate's
// RequestError): NotFound when it has no such function or no binary to list
// it from, else a bad parameter.
type ListingError = annotate.RequestError

// Sampled is a function's self samples by address from the profile alone,
// which a ListingError carries when the function's executable is absent
// (annotate.Sampled).
type Sampled = annotate.Sampled

// The inline modes of a ListingRequest.
const (
	InlineCopy  = annotate.InlineCopy
	InlineMerge = annotate.InlineMerge
)

// Demangle is a symbol's C++ or Rust name as a person reads it, without
// parameters (elfsym.Demangle).
func Demangle(name string) string { return elfsym.Demangle(name, false) }

// DataKindUnknown is the access kind of an instruction whose data type is
// not known (datatype.KindUnknown).
const DataKindUnknown = datatype.KindUnknown

// Listing lists the instructions of req.Fn in p with their self samples,
// source lines and data-type accesses, choosing the binary and symbol as
// annotate.ForProfile does. Code and DWARF are opened as the data-type
// page's are (OpenCode), and the symbol and line tables are the binary's
// symbols in the store: one owner, one --symbol-cache-size budget.
func (s *Symbolizer) Listing(ctx context.Context, p *profile.Profile, req ListingRequest) (*Listing, error) {
	op := &storeOpener{s: s, opt: req.Options}
	defer op.close()
	return annotate.ForProfile(ctx, op, p, annotate.Request{Fn: req.Fn, In: req.In, SI: req.SampleIndex, Inline: req.Inline,
		Keep: req.Keep, LeafKept: req.LeafKept, DSONames: DSONames})
}

// storeOpener opens binaries for annotate.ForProfile from the engine: the
// code through OpenCode, and symbol files from the store's symbols of the
// mapping last opened when they are the same file, else opened for this
// listing only (the kernel's kallsyms, a debug file without a symbol
// table). Everything it hands out is given back by close.
type storeOpener struct {
	s       *Symbolizer
	opt     DataTypeOptions
	ctx     context.Context
	m       *profile.Mapping
	closers []func()
}

func (o *storeOpener) OpenCode(ctx context.Context, m *profile.Mapping) (annotate.Handle, error) {
	o.ctx, o.m = ctx, m
	h, err := o.s.OpenCode(ctx, m, o.opt)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// symbolFile is an ELF file's symbol and line tables, as the store holds
// them.
type symbolFile interface {
	annotate.SymbolFile
	Path() string
}

func (o *storeOpener) SymbolFile(path string) (annotate.SymbolFile, error) {
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if o.m != nil {
		ls, err := o.s.acquire(ctx, BinaryKey(o.m), o.m, Options{NoDebuginfod: o.opt.NoDebuginfod}, func(Event) {})
		if err == nil {
			if f, ok := ls.l.obj.(symbolFile); ok && f.Path() == path {
				o.closers = append(o.closers, func() { o.s.store.release(ls.e) })
				return f, nil
			}
			o.s.store.release(ls.e)
		}
	}
	trust := localfile.Configured
	if o.m != nil {
		trust = trustOf(o.m, path)
	}
	f, err := elfsym.OpenContext(ctx, path, trust)
	if err != nil {
		return nil, err
	}
	f.UseSymbolTableNames(true)
	o.closers = append(o.closers, func() { f.Close() })
	return f, nil
}

func (o *storeOpener) close() {
	for _, c := range o.closers {
		c()
	}
}

// DataStatOther is the type-stat category of accesses no other reason
// covers (datatype.StatOther).
const DataStatOther = datatype.StatOther
