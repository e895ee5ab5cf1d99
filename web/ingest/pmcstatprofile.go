package ingest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/pmcstat"
)

// pmcstatFormat reads FreeBSD pmcstat callgraphs (package pmcstat).
var pmcstatFormat = Format{
	Name:  "pmcstat callgraph",
	Sniff: pmcstat.Sniff,
	Parse: func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := pmcstat.Parse(bytes.NewReader(data), pmcstat.Options{MaxLineBytes: lim.MaxLineBytes, MaxSamples: lim.MaxSamples, MaxStackDepth: lim.MaxStackDepth})
		if errors.Is(err, pmcstat.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	},
}
