// Package ingest turns uploaded bytes into a pprof profile. The format is
// detected from the content, never the file name: each Format sniffs the
// first bytes and the first that claims them parses the whole.
package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"viewer/symbolize"
	"viewer/web/ingest/perfdata"
	"viewer/web/ingest/perftext"
	"viewer/web/prefault"
)

// Format is one input format the viewer reads.
type Format struct {
	Name string
	// Sniff reports whether data (already decompressed, possibly only its
	// first bytes) looks like this format.
	Sniff func(head []byte) bool
	// Parse converts the whole input to a profile.
	Parse func(data []byte, lim Limits) (*profile.Profile, error)
	// Stream, when set, converts the input r gives to a profile as it
	// reads it, never holding it whole; ParseFile reads the format with
	// it (parseStream).
	Stream func(r io.Reader, lim Limits) (*profile.Profile, error)
	// Named says Sniff accepts only inputs that name the format (a
	// header line no other format writes), so that when Parse fails, its
	// error is the answer (a FormatError), as for the JSON profiles.
	Named bool
}

// Limits bound what one input may expand to; zero fields mean no limit.
type Limits struct {
	MaxBytes   int64 // decompressed size
	MaxSamples int
	// MaxLocations, MaxFunctions and MaxMappings bound the parsed
	// profile; MaxRecords bounds a perf.data's records (limits.go).
	MaxLocations, MaxFunctions, MaxMappings, MaxRecords int
	// MaxFrames bounds the frames (locations) of all stacks together,
	// and InlinedFramesPerFrame times it their frames with inlined
	// calls; MaxStackDepth bounds one stack's frames with inlined calls,
	// whose root-most ones beyond it are cut (limitFrames;
	// a perf.data's recorded depth raises it, recordedDepth);
	// MaxStrings bounds a pprof string table; MaxLineBytes one line of a
	// text format.
	MaxFrames, MaxStackDepth, MaxStrings, MaxLineBytes int
	// MaxOTLPProfiles bounds the profiles of one OTLP request, each
	// stored apart (DefaultMaxOTLPProfiles).
	MaxOTLPProfiles int
	// Memory, when set, is the budget a parse takes its estimated memory
	// from before it reads the input into memory (budget.go).
	Memory *Budget
	// SpoolDir is where ParseFile inflates gzip input, and where a
	// zstd-compressed perf.data's records are decompressed to (perfSpool);
	// "" is os.TempDir().
	SpoolDir string
	// Binaries, when set, unwinds a perf.data's --call-graph=dwarf user
	// stacks with the profiled binaries; only where they can be read (the
	// CLI on the recording machine, serve on loopback). NoUnwind says why
	// not, for the profile's warning, when it is nil.
	Binaries perfdata.Binaries
	NoUnwind string

	// Set by ParseFile: where it reports progress, and how a mapped
	// input's pages are dropped once read (readFile).
	progress Progress
	evict    func(lo, hi int)
	// reserve is ParseFile's share of Memory, which a mapped perf.data
	// grows as it learns what it needs (parsePerfData).
	reserve *reservation
	// otlpStream, set by ParseOTLPFile, counts an OTLP request's tables
	// as it inflates (countOTLP); its error stops the inflation.
	otlpStream func(io.Reader) error
	// recordedDepth, set by parseFormats, is where a format's parser
	// says how deep its input's stacks were recorded at most
	// (perfdata.File.RecordedMaxStack): MaxStackDepth, when it is less,
	// is raised to it, so that no stack perf kept whole is cut.
	recordedDepth *int
}

// formats are tried in order. pprofFormat and pprofLegacyFormat are in
// pprof.go; the perf formats are in perf.go; the JSON profiles of
// browsers and language profilers in jsonprofile.go; callgrind in
// callgrindprofile.go.
var formats = []Format{pprofFormat, otlpFormat, perfDataFormat, perfJSONFormat, speedscopeFormat, cpuProfileFormat, heapProfileFormat, traceEventsFormat, firefoxFormat, v8LogFormat, ghcFormat, safariFormat, callgrindFormat, jfrFormat, pmcstatFormat, instrumentsFormat, stackprofFormat, papyrusFormat, ghcReportFormat, pprofLegacyFormat, perfScriptFormat, foldedFormat}

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
	est, pprofErr, err := estimate(bytes.NewReader(data), int64(len(data)), head, lim)
	if err != nil {
		return nil, "", err
	}
	release, err := lim.Memory.take(context.Background(), est, "profile")
	if err != nil {
		return nil, "", err
	}
	defer release()
	return parseFormats(data, head, lim, pprofErr)
}

// textMemoryFactor is what parsing a perf script, perf JSON or perf.data
// input of n bytes is estimated to allocate, as a multiple of n: their
// records merge into far fewer distinct stacks, so the input itself and
// its decoded records dominate (the 3 × the upload the manual gave before
// the budget, input included).
const textMemoryFactor = 2

// foldedLineMemory is what reading one line of folded stacks allocates at
// most (measured: 2M distinct stacks took 1.8 GB): each line may be a new
// stack, with its leaf's function and location.
const foldedLineMemory = 900

// countLines counts the newlines r holds.
func countLines(r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n + 1, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// estimate is the memory parsing an input of size bytes (head its first
// bytes) takes, the input included. A pprof input is pre-scanned (its
// counts checked against lim, stopping at the first over); pprofErr says
// why it is not pprof after all.
func estimate(r io.Reader, size int64, head []byte, lim Limits) (est int64, pprofErr, err error) {
	est = size
	if perftext.SniffFolded(head) {
		lines, err := countLines(r)
		if err != nil {
			return 0, nil, err
		}
		return est + foldedLineMemory*lines, nil, nil
	}
	if !sniffPprof(head) {
		return est + textMemoryFactor*size, nil, nil
	}
	c, err := prescanPprof(bufio.NewReaderSize(r, 64<<10), lim)
	return pprofEstimate(size, head, c, err)
}

// pprofEstimate is estimate for an input of size bytes that sniffs as
// pprof, from its pre-scan's counts and error.
func pprofEstimate(size int64, head []byte, c wireCounts, err error) (est int64, pprofErr, _ error) {
	est = size
	var we errPprofWire
	switch {
	case errors.As(err, &we) && sniffOTLP(head):
		return est + otlpMemoryFactor*size, err, nil
	case errors.As(err, &we):
		return est + textMemoryFactor*size, err, nil
	case err != nil:
		return 0, nil, err
	}
	return est + c.memory(), nil, nil
}

// parseFormats tries each format that claims head on data; pprofErr, when
// set, is why data is not a pprof protobuf (from its pre-scan).
func parseFormats(data, head []byte, lim Limits, pprofErr error) (*profile.Profile, string, error) {
	// A format viewer knows but does not read is named, not guessed at
	// (callgrind's "16 200" lines would pass for folded stacks).
	if err := foreign(head, data); err != nil {
		return nil, "", err
	}
	var tried []string
	lim.recordedDepth = new(int)
	for _, f := range formats {
		if f.Name == pprofFormat.Name && pprofErr != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", f.Name, pprofErr))
			continue
		}
		if f.Sniff == nil || !f.Sniff(head) || f.Parse == nil {
			tried = append(tried, f.Name)
			continue
		}
		p, err := safeParse(f, data, lim) // a parser panic is an error (limits.go)
		if err == nil {
			if err := lim.finish(p); err != nil {
				return nil, "", err
			}
			return p, f.Name, nil
		}
		var pe *PanicError
		if errors.Is(err, ErrTooLarge) || errors.As(err, &pe) {
			return nil, "", err
		}
		if isJSONFormat(f) || f.Named {
			// Its content names it: no other format reads it.
			return nil, "", &FormatError{Format: f.Name, Err: err}
		}
		tried = append(tried, fmt.Sprintf("%s (%v)", f.Name, err))
	}
	// A text input whose first line is too long for any format to see
	// where it ends (a 10 MB folded stack) is named for its line; one
	// with some folded stacks among more other lines, for those lines.
	folded := ""
	if looksText(head) {
		if err := checkLines(data, lim.MaxLineBytes); err != nil {
			return nil, "", err
		}
		folded = foldedHint(head)
	}
	return nil, "", fmt.Errorf("%w: tried %s; upload a pprof protobuf (optionally gzipped) or a perf profile%s",
		ErrUnknownFormat, strings.Join(tried, ", "), folded)
}

// finish is what every format's profile goes through once parsed: its
// empty sample types dropped, its counts and stacks held to lim, and its
// caller frames made call sites.
func (lim Limits) finish(p *profile.Profile) error {
	lim = lim.recordedDepthFloor()
	dropEmptySampleTypes(p) // emptytypes.go
	if err := lim.checkCounts(p); err != nil {
		return err
	}
	if err := lim.limitFrames(p); err != nil {
		return err
	}
	// Every format's caller frames become call sites here, once
	// (symbolize.CallSites), so what is stored, shown and written
	// follows pprof's convention.
	symbolize.CallSites(p)
	return nil
}

// recordedDepthFloor is lim with MaxStackDepth raised to the depth the
// parsed input was recorded with, when a parser set it and it is more (a
// depth of 0, no limit, stays).
func (lim Limits) recordedDepthFloor() Limits {
	if d := lim.recordedDepth; d != nil && lim.MaxStackDepth > 0 && *d > lim.MaxStackDepth {
		lim.MaxStackDepth = *d
	}
	return lim
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
	out, err := readChunked(r)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the gzip stream is truncated (was the upload cut short?)", ErrCorrupt)
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if max > 0 && int64(len(out)) > max {
		return nil, fmt.Errorf("%w: decompresses to more than the %d-byte limit", ErrTooLarge, max)
	}
	return out, nil
}

// readChunked reads r to its end into one slice of its exact length: into
// chunks first (1 MiB, doubling up to 64 MiB), then one copy. Its length
// is unknown until then (a gzip stream of many members, as stored copies
// are, names only its last member's size), and a buffer grown from a
// guess (4× the compressed size: 347 MB zeroed for a 97 MB copy) or by
// doubling allocated and cleared several times what it held.
func readChunked(r io.Reader) ([]byte, error) {
	var chunks [][]byte
	total, size := 0, 1<<20
	for {
		c := make([]byte, size)
		prefault.Slice(c)
		k, eof := 0, false
		for k < len(c) && !eof {
			n, err := r.Read(c[k:])
			k += n
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return nil, err // a truncated gzip stream's io.ErrUnexpectedEOF among them
			}
		}
		chunks = append(chunks, c[:k])
		total += k
		if eof {
			break
		}
		size = min(2*size, 64<<20)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	out := make([]byte, 0, total)
	prefault.Slice(out)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out, nil
}
