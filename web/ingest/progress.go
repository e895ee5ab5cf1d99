package ingest

import "context"

// Progress is told how far a parse is: its phase (perfdata's Phase*:
// "inflating", "reading records", "aggregating stacks") and done of total units of
// it (bytes or records; total 0 when unknown). It is called from the
// parsing goroutine, at most about every megabyte or few thousand
// records, and must return quickly.
type Progress func(phase string, done, total int64)

type progressKey struct{}

// WithProgress returns ctx carrying p, which ParseFile reports to.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// progressOf is ctx's Progress, or one that does nothing.
func progressOf(ctx context.Context) Progress {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok && p != nil {
		return p
	}
	return func(string, int64, int64) {}
}
