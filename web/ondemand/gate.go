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

// Gate is the Fetcher given to the symbolization engine. Fetches made for a
// job (found through the context the job passes to the engine) report their
// progress to that job, and can be cancelled by its Skip and Disable without
// touching other jobs that wait for the same download; other fetches pass
// straight through. A nil inner symbolize.Fetcher means debuginfod is off.
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

type jobKey struct{}

func withJob(ctx context.Context, j *Job) context.Context {
	return context.WithValue(ctx, jobKey{}, j)
}

func jobFrom(ctx context.Context) *Job {
	j, _ := ctx.Value(jobKey{}).(*Job)
	return j
}

// Fetch implements symbolize.Fetcher. No lock is held while the download runs.
func (g *Gate) Fetch(ctx context.Context, buildID string, kind symbolize.FetchKind, progress func(symbolize.FetchProgress)) (string, error) {
	if g.inner == nil {
		return "", fmt.Errorf("debuginfod is off on this server: %w", ErrSkipped)
	}
	j := jobFrom(ctx)
	if j == nil {
		return g.inner.Fetch(ctx, buildID, kind, progress)
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

// JobID is the ID of the profile whose symbolization ctx belongs to, or ""
// outside a job: the uploaded-debug-file store notes which profiles used a
// file (web/debuginfo).
func JobID(ctx context.Context) string {
	if j := jobFrom(ctx); j != nil {
		return j.id
	}
	return ""
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
