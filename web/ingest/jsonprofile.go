package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/jsonprof"
	"viewer/web/ingest/perfdata"
)

// The JSON profiles of browsers and language profilers, read as
// speedscope reads them (package jsonprof).
var (
	speedscopeFormat  = Format{Name: "speedscope JSON", Sniff: jsonprof.SniffSpeedscope, Parse: jsonParser(jsonprof.ParseSpeedscope), Stream: jsonStreamer(jsonprof.ReadSpeedscope)}
	cpuProfileFormat  = Format{Name: "V8 CPU profile", Sniff: jsonprof.SniffCPUProfile, Parse: jsonParser(jsonprof.ParseCPUProfile), Stream: jsonStreamer(jsonprof.ReadCPUProfile)}
	heapProfileFormat = Format{Name: "V8 heap profile", Sniff: jsonprof.SniffHeapProfile, Parse: jsonParser(jsonprof.ParseHeapProfile), Stream: jsonStreamer(jsonprof.ReadHeapProfile)}
	v8LogFormat       = Format{Name: "node --prof log", Sniff: jsonprof.SniffV8Log, Parse: jsonParser(jsonprof.ParseV8Log), Stream: jsonStreamer(jsonprof.ReadV8Log)}
	firefoxFormat     = Format{Name: "Firefox Profiler", Sniff: jsonprof.SniffFirefox, Parse: jsonParser(jsonprof.ParseFirefox), Stream: jsonStreamer(jsonprof.ReadFirefox)}
	traceEventsFormat = Format{Name: "trace events", Sniff: jsonprof.SniffTraceEvents, Parse: jsonParser(jsonprof.ParseTraceEvents), Stream: jsonStreamer(jsonprof.ReadTraceEvents)}
	ghcFormat         = Format{Name: "GHC profile", Sniff: jsonprof.SniffGHC, Parse: jsonParser(jsonprof.ParseGHC), Stream: jsonStreamer(jsonprof.ReadGHC)}
	safariFormat      = Format{Name: "Safari recording", Sniff: jsonprof.SniffSafari, Parse: jsonParser(jsonprof.ParseSafari), Stream: jsonStreamer(jsonprof.ReadSafari)}
)

// jsonParser adapts a jsonprof parser to lim: MaxSamples bounds the
// profile's samples and MaxRecords the samples or events it reads; the
// memory its records and samples take is taken from lim.Memory as they
// grow (ParseFile's reservation, or one of its own).
func jsonParser(parse func([]byte, jsonprof.Options) (*profile.Profile, error)) func([]byte, Limits) (*profile.Profile, error) {
	return func(data []byte, lim Limits) (*profile.Profile, error) {
		opt := lim.jsonOptions()
		r := lim.reserve
		if r == nil && lim.Memory != nil {
			// Parse of bytes: the records' share is taken here.
			r = &reservation{b: lim.Memory, ctx: context.Background()}
			defer r.release()
		}
		if r != nil {
			opt.Reserve = func(n int64) error { return r.grow(n, "JSON profile's samples") }
		}
		p, err := parse(data, opt)
		if errors.Is(err, jsonprof.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	}
}

// jsonOptions are lim's bounds of a jsonprof read: its samples, records,
// frames and stack depth, and the request's context (ParseFile's, which
// its reservation carries), so that the read stops when the client
// leaves.
func (lim Limits) jsonOptions() jsonprof.Options {
	opt := jsonprof.Options{MaxSamples: lim.MaxSamples, MaxRecords: lim.MaxRecords, MaxFrames: lim.MaxFrames, MaxStackDepth: lim.MaxStackDepth}
	if lim.reserve != nil {
		opt.Context = lim.reserve.ctx
	}
	return opt
}

// jsonStreamer adapts a jsonprof reader of a stream to lim, as
// jsonParser does: what it keeps is taken from lim's reservation as it
// grows.
func jsonStreamer(read func(io.Reader, jsonprof.Options) (*profile.Profile, error)) func(io.Reader, Limits) (*profile.Profile, error) {
	return func(r io.Reader, lim Limits) (*profile.Profile, error) {
		opt := lim.jsonOptions()
		if res := lim.reserve; res != nil {
			opt.Reserve = func(n int64) error { return res.grow(n, "JSON profile's samples") }
		}
		p, err := read(r, opt)
		if errors.Is(err, jsonprof.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	}
}

// jsonStreamMemory is what reading a JSON profile as a stream takes
// before what it keeps (taken as that grows): the decoder's buffer, one
// event or node being decoded and the garbage of those before it
// (TestJSONMemoryEstimate, TestJSONFileMemory).
const jsonStreamMemory = 24 << 20

// streamFormat is the format parseFormats would read head with first,
// when that format reads a stream (Format.Stream).
func streamFormat(head []byte) (Format, bool) {
	for _, f := range formats {
		if f.Sniff != nil && f.Sniff(head) && f.Parse != nil {
			return f, f.Stream != nil
		}
	}
	return Format{}, false
}

// parseStream reads the size bytes of src, which head starts and f
// claims, as a stream: the input is never in memory whole, mapped or
// read; the budget is charged jsonStreamMemory, then what the reader
// keeps as it grows.
func parseStream(ctx context.Context, f Format, src io.ReaderAt, size int64, head []byte, lim Limits) (*profile.Profile, string, error) {
	if err := foreign(head, head); err != nil {
		return nil, "", err
	}
	if lim.reserve == nil {
		lim.reserve = &reservation{b: lim.Memory, ctx: ctx}
	}
	defer lim.reserve.release()
	if err := lim.reserve.grow(jsonStreamMemory, "profile"); err != nil {
		return nil, "", err
	}
	lim.recordedDepth = new(int)
	in := &countReader{r: &ctxReader{ctx: ctx, r: io.NewSectionReader(src, 0, size)}, total: size, report: lim.progress, phase: perfdata.PhaseReadingRecords}
	p, err := safeStream(f, bufio.NewReaderSize(in, 256<<10), lim)
	if err != nil {
		var pe *PanicError
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrBusy) || errors.As(err, &pe) || ctx.Err() != nil {
			return nil, "", err
		}
		return nil, "", &FormatError{Format: f.Name, Err: err}
	}
	if err := lim.finish(p); err != nil {
		return nil, "", err
	}
	return p, f.Name, nil
}

// jsonFormats are the JSON profiles jsonprof reads: ParseFile reads those
// with a Stream (all of them) as streams (parseStream), and would map one
// without instead of reading it.
var jsonFormats = []Format{speedscopeFormat, cpuProfileFormat, heapProfileFormat, traceEventsFormat, firefoxFormat, v8LogFormat, ghcFormat, safariFormat}

// sniffJSONProfile reports whether head starts a JSON profile jsonprof reads.
func sniffJSONProfile(head []byte) bool {
	for _, f := range jsonFormats {
		if f.Sniff(head) {
			return true
		}
	}
	return false
}

// jsonMemoryFactor is what reading a JSON profile of n bytes allocates
// before its records and samples (which the read takes from the budget as
// they grow: jsonprof.Options.Reserve), as a multiple of n: the decoded
// tables a format holds whole and the decoder's garbage
// (TestJSONMemoryEstimate). ParseFile takes it for the JSON formats it
// maps; those it streams take jsonStreamMemory instead.
const jsonMemoryFactor = 2

// jsonMemory is the memory reading a mapped JSON profile of size bytes
// takes before its records, the input not included.
func jsonMemory(size int64) int64 { return jsonMemoryFactor*size + 4<<20 }

// isJSONFormat reports whether f is one of jsonFormats.
func isJSONFormat(f Format) bool {
	for _, j := range jsonFormats {
		if j.Name == f.Name {
			return true
		}
	}
	return false
}

// FormatError is what Parse returns for an input whose content names a
// format viewer reads (a JSON profile's schema or keys) but which cannot
// be read as one: it says which format and why. It matches
// ErrUnknownFormat (HTTP 400) and the reader's error.
type FormatError struct {
	Format string
	Err    error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("This is a %s file, but viewer cannot read it: %v", e.Format, e.Err)
}

func (e *FormatError) Unwrap() []error { return []error{ErrUnknownFormat, e.Err} }
