// Package ingest turns uploaded bytes into a pprof profile. The format is
// detected from the content, never the file name: each Format sniffs the
// first bytes and the first that claims them parses the whole.
package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"viewer/symbolize"
	"viewer/web/ingest/perfdata"
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
	// MaxLocations, MaxFunctions and MaxMappings bound the parsed
	// profile; MaxRecords bounds a perf.data's records (limits.go).
	MaxLocations, MaxFunctions, MaxMappings, MaxRecords int
	// Binaries, when set, unwinds a perf.data's --call-graph=dwarf user
	// stacks with the profiled binaries; only where they can be read (the
	// CLI on the recording machine, serve on loopback). NoUnwind says why
	// not, for the profile's warning, when it is nil.
	Binaries perfdata.Binaries
	NoUnwind string
}

// formats are tried in order. pprofFormat is in pprof.go; the perf formats
// are in perf.go.
var formats = []Format{pprofFormat, perfDataFormat, perfJSONFormat, perfScriptFormat, foldedFormat}

// sniffLen is how many leading bytes Sniff functions are given.
const sniffLen = 4096

// maxGzipLayers bounds nested gzip (a .gz of a .pb.gz).
const maxGzipLayers = 3

// Errors Parse returns; match them with errors.Is. Each is wrapped with a
// message saying what was wrong and what to do.
var (
	// ErrEmpty means there was nothing to parse.
	ErrEmpty = errors.New("empty input")
	// ErrTooLarge means the input, or what it decompresses to, exceeds
	// Limits; the web layer answers 413.
	ErrTooLarge = errors.New("input too large")
	// ErrCorrupt means a gzip stream was truncated or damaged.
	ErrCorrupt = errors.New("corrupt compressed input")
	// ErrUnknownFormat means no format accepted the input.
	ErrUnknownFormat = errors.New("not a recognised profile")
)

// Parse decompresses data if it is gzip (repeatedly, within lim.MaxBytes),
// then tries each format whose Sniff claims it, in order, and returns the
// first profile parsed with the name of its format. When none succeeds the
// error lists the formats tried and why each declined.
func Parse(data []byte, lim Limits) (*profile.Profile, string, error) {
	if len(data) == 0 {
		return nil, "", fmt.Errorf("%w: the upload has no bytes; send a pprof (.pb.gz) or perf profile", ErrEmpty)
	}
	if lim.MaxBytes > 0 && int64(len(data)) > lim.MaxBytes {
		return nil, "", fmt.Errorf("%w: %d bytes is over the %d-byte limit", ErrTooLarge, len(data), lim.MaxBytes)
	}
	for i := 0; isGzip(data); i++ {
		if i == maxGzipLayers {
			return nil, "", fmt.Errorf("%w: more than %d nested gzip layers", ErrCorrupt, maxGzipLayers)
		}
		var err error
		if data, err = gunzip(data, lim.MaxBytes); err != nil {
			return nil, "", err
		}
	}
	if len(data) == 0 {
		return nil, "", fmt.Errorf("%w: the gzip stream decompresses to nothing", ErrEmpty)
	}
	head := data[:min(len(data), sniffLen)]
	var tried []string
	for _, f := range formats {
		if f.Sniff == nil || !f.Sniff(head) || f.Parse == nil {
			tried = append(tried, f.Name)
			continue
		}
		p, err := safeParse(f, data, lim) // a parser panic is an error (limits.go)
		if err == nil {
			if err := lim.checkCounts(p); err != nil {
				return nil, "", err
			}
			// Every format's caller frames become call sites here, once
			// (symbolize.CallSites), so what is stored, shown and written
			// follows pprof's convention.
			symbolize.CallSites(p)
			return p, f.Name, nil
		}
		var pe *PanicError
		if errors.Is(err, ErrTooLarge) || errors.As(err, &pe) {
			return nil, "", err
		}
		tried = append(tried, fmt.Sprintf("%s (%v)", f.Name, err))
	}
	return nil, "", fmt.Errorf("%w: tried %s; upload a pprof protobuf (optionally gzipped) or a perf profile",
		ErrUnknownFormat, strings.Join(tried, ", "))
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// gunzip decompresses all of data (including concatenated members), failing
// with ErrTooLarge past max bytes and ErrCorrupt on truncation or damage.
func gunzip(data []byte, max int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: bad gzip header: %v", ErrCorrupt, err)
	}
	defer zr.Close()
	var r io.Reader = zr
	if max > 0 {
		r = io.LimitReader(zr, max+1)
	}
	var out bytes.Buffer
	// Compressed profiles typically expand 3–10×; start with a guess to
	// avoid repeated growth.
	guess := int64(len(data)) * 4
	if max > 0 && guess > max+1 {
		guess = max + 1
	}
	out.Grow(int(guess))
	if _, err := out.ReadFrom(r); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the gzip stream is truncated (was the upload cut short?)", ErrCorrupt)
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if max > 0 && int64(out.Len()) > max {
		return nil, fmt.Errorf("%w: decompresses to more than the %d-byte limit", ErrTooLarge, max)
	}
	return out.Bytes(), nil
}
