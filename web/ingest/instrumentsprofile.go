package ingest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/instruments"
)

// instrumentsFormat reads the call trees Instruments copies as text
// (package instruments).
var instrumentsFormat = Format{
	Name:  "Instruments deep copy",
	Sniff: instruments.Sniff,
	Parse: func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := instruments.Parse(bytes.NewReader(data), instruments.Options{MaxLineBytes: lim.MaxLineBytes, MaxSamples: lim.MaxSamples, MaxStackDepth: lim.MaxStackDepth})
		if errors.Is(err, instruments.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	},
}
