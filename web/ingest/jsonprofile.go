package ingest

import (
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
)

// jsonParser adapts a jsonprof parser to lim: MaxSamples bounds the
// profile's samples and MaxRecords the samples or events it reads.
func jsonParser(parse func([]byte, jsonprof.Options) (*profile.Profile, error)) func([]byte, Limits) (*profile.Profile, error) {
	return func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := parse(data, jsonprof.Options{MaxSamples: lim.MaxSamples, MaxRecords: lim.MaxRecords})
		if errors.Is(err, jsonprof.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	}
}
