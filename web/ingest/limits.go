package ingest

import (
	"fmt"
	"runtime/debug"

	"github.com/google/pprof/profile"
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
)

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
