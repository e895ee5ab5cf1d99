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
	f, err := perfdata.Read(data, perfdata.Options{MaxDecompressed: lim.MaxBytes, UserStacks: lim.Binaries != nil})
	if err == nil && lim.MaxRecords > 0 && len(f.Records) > lim.MaxRecords {
		return nil, fmt.Errorf("%w: perf.data holds %d records, over the limit of %d (record a shorter run, or restart the server with a larger --max-records)", ErrTooLarge, len(f.Records), lim.MaxRecords)
	}
	var p *profile.Profile
	if err == nil {
		p, err = perfdata.Convert(f, perfdata.ConvertOptions{MaxSamples: lim.MaxSamples, Binaries: lim.Binaries, NoUnwind: lim.NoUnwind})
	}
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
