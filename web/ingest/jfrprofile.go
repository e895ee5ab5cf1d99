package ingest

import (
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/jfr"
)

// jfrFormat reads Java Flight Recorder recordings (package jfr).
var jfrFormat = Format{
	Name:  "Java Flight Recorder",
	Sniff: jfr.Sniff,
	Parse: func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := jfr.Parse(data, jfr.Options{MaxSamples: lim.MaxSamples})
		if errors.Is(err, jfr.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	},
}
