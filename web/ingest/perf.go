package ingest

import (
	"errors"
	"fmt"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/perfdata"
	"viewer/web/ingest/perftext"
)

// The perf formats: perf.data itself (read natively, addresses kept for the
// symbolizer) and the text formats perf and flame graph tools write.
var (
	perfDataFormat   = Format{Name: "perf.data", Sniff: perfdata.Sniff, Parse: parsePerfData}
	perfJSONFormat   = Format{Name: "perf JSON", Sniff: perftext.SniffJSON, Parse: textParser(perftext.ParseJSON)}
	perfScriptFormat = Format{Name: "perf script", Sniff: perftext.SniffScript, Parse: textParser(perftext.ParseScript)}
	foldedFormat     = Format{Name: "folded stacks", Sniff: perftext.SniffFolded, Parse: textParser(perftext.ParseFolded)}
)

func parsePerfData(data []byte, lim Limits) (*profile.Profile, error) {
	p, err := perfdata.Parse(data, lim.MaxBytes, lim.MaxSamples)
	if errors.Is(err, perfdata.ErrLimit) {
		return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return p, err
}

func textParser(parse func([]byte, int) (*profile.Profile, error)) func([]byte, Limits) (*profile.Profile, error) {
	return func(data []byte, lim Limits) (*profile.Profile, error) {
		p, err := parse(data, lim.MaxSamples)
		if errors.Is(err, perftext.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	}
}
