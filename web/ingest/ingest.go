// Package ingest turns uploaded bytes into a pprof profile. The format is
// detected from the content, never the file name: each Format sniffs the
// first bytes and the first that claims them parses the whole.
package ingest

import (
	"github.com/google/pprof/profile"
)

// Format is one input format the viewer reads.
type Format struct {
	Name string
	// Sniff reports whether data (already decompressed, possibly only its
	// first bytes) looks like this format.
	Sniff func(head []byte) bool
	// Parse converts the whole input to a profile.
	Parse func(data []byte, lim Limits) (*profile.Profile, error)
}

// Limits bound what one input may expand to; zero fields mean no limit.
type Limits struct {
	MaxBytes   int64 // decompressed size
	MaxSamples int
}

// formats are tried in order. pprofFormat is in pprof.go; the perf formats
// are in perf.go.
var formats = []Format{pprofFormat, perfDataFormat, perfJSONFormat, perfScriptFormat, foldedFormat}
