package ingest

import (
	"bytes"
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
	perfJSONFormat   = Format{Name: "perf JSON", Sniff: perftext.SniffJSON, Parse: textParser(perftext.ParseJSON, false)}
	perfScriptFormat = Format{Name: "perf script", Sniff: perftext.SniffScript, Parse: textParser(perftext.ParseScript, true)}
	foldedFormat     = Format{Name: "folded stacks", Sniff: perftext.SniffFolded, Parse: textParser(perftext.ParseFolded, true)}
)

func parsePerfData(data []byte, lim Limits) (*profile.Profile, error) {
	f, err := perfdata.Scan(data, perfdata.Options{MaxDecompressed: lim.MaxBytes, UserStacks: lim.Binaries != nil, Evict: lim.evict, Progress: lim.progress})
	if err == nil && lim.MaxRecords > 0 && f.NumRecords() > lim.MaxRecords {
		return nil, fmt.Errorf("%w: perf.data holds %d records, over the limit of %d (record a shorter run, or restart the server with a larger --max-records)", ErrTooLarge, f.NumRecords(), lim.MaxRecords)
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

// textParser adapts a perftext parser; lines says its format is read line
// by line, so that lines longer than lim.MaxLineBytes are refused first.
func textParser(parse func([]byte, int) (*profile.Profile, error), lines bool) func([]byte, Limits) (*profile.Profile, error) {
	return func(data []byte, lim Limits) (*profile.Profile, error) {
		if lines {
			if err := checkLines(data, lim.MaxLineBytes); err != nil {
				return nil, err
			}
		}
		p, err := parse(data, lim.MaxSamples)
		if errors.Is(err, perftext.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	}
}

// checkLines fails with ErrTooLarge naming the first line of data longer
// than max bytes (0: no limit).
func checkLines(data []byte, max int) error {
	if max <= 0 {
		return nil
	}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			i = len(data)
		}
		if i > max {
			return fmt.Errorf("%w: line %d is longer than the %d-byte limit (restart the server with a larger --max-line to accept it)", ErrTooLarge, n, max)
		}
		data = data[min(i+1, len(data)):]
	}
	return nil
}

// looksText reports whether head is text (no NUL or other control bytes
// but tab, CR and LF), as the line-based formats are.
func looksText(head []byte) bool {
	for _, b := range head {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' {
			return false
		}
	}
	return len(head) > 0
}
