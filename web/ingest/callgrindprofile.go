package ingest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/callgrind"
)

// callgrindFormat reads Valgrind's callgrind and cachegrind output, one
// sample type per event (package callgrind).
var callgrindFormat = Format{
	Name:  "callgrind",
	Sniff: callgrind.Sniff,
	Parse: func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := callgrind.Parse(bytes.NewReader(data), callgrind.Options{MaxLineBytes: lim.MaxLineBytes, MaxSamples: lim.MaxSamples})
		if errors.Is(err, callgrind.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	},
}
