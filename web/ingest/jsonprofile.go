package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/jsonprof"
)

// The JSON profiles of browsers and language profilers, read as
// speedscope reads them (package jsonprof).
var (
	speedscopeFormat  = Format{Name: "speedscope JSON", Sniff: jsonprof.SniffSpeedscope, Parse: jsonParser(jsonprof.ParseSpeedscope)}
	cpuProfileFormat  = Format{Name: "V8 CPU profile", Sniff: jsonprof.SniffCPUProfile, Parse: jsonParser(jsonprof.ParseCPUProfile)}
	heapProfileFormat = Format{Name: "V8 heap profile", Sniff: jsonprof.SniffHeapProfile, Parse: jsonParser(jsonprof.ParseHeapProfile)}
	v8LogFormat       = Format{Name: "node --prof log", Sniff: jsonprof.SniffV8Log, Parse: jsonParser(jsonprof.ParseV8Log)}
	firefoxFormat     = Format{Name: "Firefox Profiler", Sniff: jsonprof.SniffFirefox, Parse: jsonParser(jsonprof.ParseFirefox)}
	traceEventsFormat = Format{Name: "trace events", Sniff: jsonprof.SniffTraceEvents, Parse: jsonParser(jsonprof.ParseTraceEvents)}
	ghcFormat         = Format{Name: "GHC profile", Sniff: jsonprof.SniffGHC, Parse: jsonParser(jsonprof.ParseGHC)}
	safariFormat      = Format{Name: "Safari recording", Sniff: jsonprof.SniffSafari, Parse: jsonParser(jsonprof.ParseSafari)}
)

// jsonParser adapts a jsonprof parser to lim: MaxSamples bounds the
// profile's samples and MaxRecords the samples or events it reads; the
// memory its records and samples take is taken from lim.Memory as they
// grow (ParseFile's reservation, or one of its own).
func jsonParser(parse func([]byte, jsonprof.Options) (*profile.Profile, error)) func([]byte, Limits) (*profile.Profile, error) {
	return func(data []byte, lim Limits) (*profile.Profile, error) {
		opt := jsonprof.Options{MaxSamples: lim.MaxSamples, MaxRecords: lim.MaxRecords}
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

// jsonFormats are the JSON profiles ParseFile maps instead of reading.
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
// tables a format holds whole (a .cpuprofile's samples, a trace's spans,
// a Firefox thread's tables) and the decoder's garbage
// (TestJSONMemoryEstimate).
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
