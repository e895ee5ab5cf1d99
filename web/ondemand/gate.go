package ondemand

import (
	"context"
	"errors"
	"fmt"

	"viewer/symbolize"
)

// ErrSkipped is returned (wrapped) for fetches the user skipped or disabled,
// or that the upload asked not to make.
var ErrSkipped = errors.New("not asked")

// Gate is the Fetcher given to the symbolization engine. A job passes its
// own view of the gate (For) in symbolize.Options.Fetcher, so the fetches
// made for it report their progress to that job, and can be cancelled by its
// Skip and Disable without touching other jobs that wait for the same
// download; other fetches (source files, annotate) pass straight through.
// A nil inner symbolize.Fetcher means debuginfod is off.
type Gate struct {
	inner symbolize.Fetcher
}

// NewGate wraps the debuginfod client; inner may be nil.
func NewGate(inner symbolize.Fetcher) *Gate { return &Gate{inner: inner} }

// Enabled reports whether there is a debuginfod client behind the gate.
func (g *Gate) Enabled() bool { return g != nil && g.inner != nil }

// cacher is implemented by clients that can answer from their cache alone
// (the debuginfod client does).
type cacher interface {
	Cached(buildID string, kind symbolize.FetchKind) (string, bool)
}

// Fetch implements symbolize.Fetcher for fetches made for no job.
func (g *Gate) Fetch(ctx context.Context, buildID string, kind symbolize.FetchKind, progress func(symbolize.FetchProgress)) (string, error) {
	if g.inner == nil {
		return "", fmt.Errorf("debuginfod is off on this server: %w", ErrSkipped)
	}
	return g.inner.Fetch(ctx, buildID, kind, progress)
}

// For is the Fetcher for job j's symbolization (symbolize.Options.Fetcher);
// nil without a gate, so the engine's own Fetcher (none) applies.
func (g *Gate) For(j *Job) symbolize.Fetcher {
	if g == nil {
		return nil
	}
	return jobFetcher{g: g, j: j}
}

// jobFetcher is the gate as one job sees it.
type jobFetcher struct {
	g *Gate
	j *Job
}

// Fetch implements symbolize.Fetcher. No lock is held while the download runs.
func (f jobFetcher) Fetch(ctx context.Context, buildID string, kind symbolize.FetchKind, progress func(symbolize.FetchProgress)) (string, error) {
	g, j := f.g, f.j
	if g.inner == nil {
		return "", fmt.Errorf("debuginfod is off on this server: %w", ErrSkipped)
	}
	fctx, done, err := j.startFetch(ctx, buildID)
	if err != nil {
		// Not asking a server still allows what is already on disk.
		if c, ok := g.inner.(cacher); ok {
			if path, hit := c.Cached(buildID, kind); hit {
				return path, nil
			}
		}
		return "", err
	}
	path, err := g.inner.Fetch(fctx, buildID, kind, func(p symbolize.FetchProgress) {
		j.fetchProgress(buildID, p)
		if progress != nil {
			progress(p)
		}
	})
	if err != nil {
		if why := j.refusal(buildID); why != nil {
			err = why // the user's Skip/Disable, not a network failure
		}
	}
	done()
	j.afterFetch()
	return path, err
}

// ForgetMiss drops the misses the debuginfod client remembers for buildID
// (its negative cache), when the client can: the file just arrived.
func (g *Gate) ForgetMiss(buildID string) {
	if !g.Enabled() {
		return
	}
	if f, ok := g.inner.(interface{ ForgetMiss(string) }); ok {
		f.ForgetMiss(buildID)
	}
}
