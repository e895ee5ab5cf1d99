package ingest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/ghcprof"
)

// ghcReportFormat reads GHC's text profiling reports (package ghcprof);
// its JSON reports are jsonprof's (ghcFormat).
var ghcReportFormat = Format{
	Name:  "GHC profiling report",
	Sniff: ghcprof.Sniff,
	Parse: func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := ghcprof.Parse(bytes.NewReader(data), ghcprof.Options{MaxLineBytes: lim.MaxLineBytes, MaxSamples: lim.MaxSamples, MaxStackDepth: lim.MaxStackDepth})
		if errors.Is(err, ghcprof.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	},
	Named: true, // its first line says what it is
}
