package ingest

import (
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/stackprof"
)

// stackprofFormat reads Ruby stackprof JSON profiles (package stackprof).
var stackprofFormat = Format{
	Name:  "stackprof",
	Sniff: stackprof.Sniff,
	Parse: func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := stackprof.Parse(data, stackprof.Options{MaxSamples: lim.MaxSamples})
		if errors.Is(err, stackprof.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	},
}
