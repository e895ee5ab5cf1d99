package ingest

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/ingest/perftext"
)

// Default limits on what one profile may hold once parsed. They are far above
// real profiles (a busy 60 s perf record at 4 kHz on 64 CPUs is about 15 M
// records but well under a million distinct stacks) and bound the memory one
// upload can make the server spend.
const (
	DefaultMaxSamples   = 2_000_000
	DefaultMaxLocations = 4_000_000
	DefaultMaxFunctions = 2_000_000
	DefaultMaxMappings  = 100_000
	DefaultMaxRecords   = 50_000_000
	// DefaultMaxFrames bounds the frames of all samples together (a frame
	// is a stack's entry, a location), a pprof's records of one stack
	// merged into one sample first: what the profile keeps, a location
	// pointer each (the 2M benchmark profile's 66M frames in 2M records
	// are 17.5M in its 500k samples); the frames the views expand them
	// into, a location's inlined lines each, are bounded at
	// InlinedFramesPerFrame times it. DefaultMaxStackDepth bounds one
	// sample's stack, its inlined lines each: deeper stacks keep their
	// leaf-most frames under a "[truncated N frames]" frame. perf records
	// at most 127 by default.
	DefaultMaxFrames     = 50_000_000
	DefaultMaxStackDepth = 4096
	// InlinedFramesPerFrame is how many frames with their inlined calls
	// (a location's lines each, as the flame graph draws them) a
	// profile may hold per frame --max-frames allows. What costs memory
	// is a location pointer of the parsed profile (8 bytes) and a frame
	// of the views' stacks (4 bytes a line): a profile at both bounds
	// costs 20 bytes a frame where one without inlining costs 12.
	// Counting lines against --max-frames itself refused issue 36's
	// 2M-sample profiles with 4 inlined calls a location (17.5M
	// locations in their stacks, 87.6M lines; the "all" shape 27.5M and
	// 137.6M), which a default server holds within 1.5 GiB.
	InlinedFramesPerFrame = 3
	// DefaultMaxStrings bounds a pprof profile's string table entries.
	DefaultMaxStrings = 8_000_000
	// DefaultMaxLineBytes bounds one line of a text profile: the text
	// parsers' own bound (perftext.MaxLine), so the two give one answer.
	DefaultMaxLineBytes = perftext.MaxLine
)

// TruncatedName is the label of the frame that stands for the root-most
// frames cut from a stack deeper than the depth limit.
func TruncatedName(n int) string { return sampling.TruncatedName(n) }

// limitFrames cuts every stack of p deeper than lim.MaxStackDepth frames
// (a location's lines each) to its leaf-most frames under a
// TruncatedName frame, noting how many in p's warnings, then fails with
// ErrTooLarge when all samples together hold more than lim.MaxFrames
// locations, or more than InlinedFramesPerFrame × lim.MaxFrames lines.
func (lim Limits) limitFrames(p *profile.Profile) error {
	depth := lim.MaxStackDepth
	var entries, lines int64 // the samples' locations, and their lines
	maxLines := int64(0)     // InlinedFramesPerFrame × MaxFrames, 0: none
	if lim.MaxFrames > 0 {
		maxLines = InlinedFramesPerFrame * int64(lim.MaxFrames)
	}
	cut, deepest := 0, 0
	marks := map[int]*profile.Location{}
	nextID := uint64(0)
	for _, l := range p.Location {
		nextID = max(nextID, l.ID)
	}
	var fnID uint64
	for _, f := range p.Function {
		fnID = max(fnID, f.ID)
	}
	// A stack of k locations has at most k·most frames: one that cannot
	// be over the depth is not walked (a cache miss per location), and
	// its lines are counted as that bound until they pass maxLines.
	most := 1
	for _, l := range p.Location {
		most = max(most, len(l.Line))
	}
	bounded := true // lines is a bound, not a count
	tooMany := func() error {
		return fmt.Errorf("%w: the profile's stacks hold more than %d frames in all (restart the server with a larger --max-frames to accept it)", ErrTooLarge, lim.MaxFrames)
	}
	tooManyLines := func() error {
		return fmt.Errorf("%w: the profile's stacks hold more than %d frames with their inlined calls, %d× the limit of %d (restart the server with a larger --max-frames to accept it)",
			ErrTooLarge, maxLines, InlinedFramesPerFrame, lim.MaxFrames)
	}
	for si, s := range p.Sample {
		if up := int64(len(s.Location)) * int64(most); bounded && (depth <= 0 || up <= int64(depth)) {
			if entries += int64(len(s.Location)); lim.MaxFrames > 0 && entries > int64(lim.MaxFrames) {
				return tooMany()
			}
			if lines += up; maxLines <= 0 || lines <= maxLines {
				continue
			}
			bounded, lines = false, countFrames(p.Sample[:si+1])
			if lines > maxLines {
				return tooManyLines()
			}
			continue
		}
		n := 0
		keep := -1 // locations kept when the stack is cut
		for i, l := range s.Location {
			k := max(1, len(l.Line))
			if depth > 0 && keep < 0 && n+k > depth-1 {
				keep = i
			}
			n += k
		}
		if depth > 0 && n > depth {
			kept := 0
			for _, l := range s.Location[:keep] {
				kept += max(1, len(l.Line))
			}
			m := marks[n-kept]
			if m == nil {
				nextID++
				fnID++
				name := TruncatedName(n - kept)
				fn := &profile.Function{ID: fnID, Name: name, SystemName: name}
				p.Function = append(p.Function, fn)
				m = &profile.Location{ID: nextID, Line: []profile.Line{{Function: fn}}}
				p.Location = append(p.Location, m)
				marks[n-kept] = m
			}
			// A new slice: samples may share their Location slices.
			s.Location = append(s.Location[:keep:keep], m)
			cut++
			deepest = max(deepest, n)
			n = kept + 1
		}
		if entries += int64(len(s.Location)); lim.MaxFrames > 0 && entries > int64(lim.MaxFrames) {
			return tooMany()
		}
		if lines += int64(n); maxLines > 0 && lines > maxLines {
			return tooManyLines()
		}
	}
	if cut > 0 {
		p.Comments = append(p.Comments, sampling.DeepStacksWarning(cut, depth, deepest))
	}
	return nil
}

// countFrames is the frames of samples' stacks, a location's lines each.
func countFrames(samples []*profile.Sample) int64 {
	var n int64
	for _, s := range samples {
		for _, l := range s.Location {
			n += int64(max(1, len(l.Line)))
		}
	}
	return n
}

// checkCounts fails with ErrTooLarge naming the first of p's counts that is
// over its limit and the flag that raises it.
func (lim Limits) checkCounts(p *profile.Profile) error {
	for _, c := range []struct {
		what, flag string
		n, max     int
	}{
		{"samples", "--max-samples", len(p.Sample), lim.MaxSamples},
		{"locations", "--max-locations", len(p.Location), lim.MaxLocations},
		{"functions", "--max-functions", len(p.Function), lim.MaxFunctions},
		{"mappings", "--max-mappings", len(p.Mapping), lim.MaxMappings},
	} {
		if c.max > 0 && c.n > c.max {
			return fmt.Errorf("%w: the profile has %d %s, over the limit of %d (restart the server with a larger %s to accept it)",
				ErrTooLarge, c.n, c.what, c.max, c.flag)
		}
	}
	return nil
}

// PanicError is what Parse returns when a format's parser panics on
// malformed input: the input is rejected, the process keeps running.
type PanicError struct {
	Format string
	Value  any
	Stack  []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%v: the %s reader failed on this input (%v); the file is probably damaged", ErrCorrupt, e.Format, e.Value)
}

// Unwrap makes a PanicError match ErrCorrupt, so callers answer 400.
func (e *PanicError) Unwrap() error { return ErrCorrupt }

// safeParse runs f.Parse, turning a panic into a *PanicError.
func safeParse(f Format, data []byte, lim Limits) (p *profile.Profile, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, &PanicError{Format: f.Name, Value: r, Stack: debug.Stack()}
		}
	}()
	return f.Parse(data, lim)
}

// safeStream is safeParse of f's Stream.
func safeStream(f Format, r io.Reader, lim Limits) (p *profile.Profile, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, &PanicError{Format: f.Name, Value: r, Stack: debug.Stack()}
		}
	}()
	return f.Stream(r, lim)
}
