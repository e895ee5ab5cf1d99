package debuginfod

import "context"

// Quota bounds the fetches one caller makes the servers answer: a fetch
// its context carries a Quota for (WithQuota) asks it first, unless the
// cache answers, and a non-nil error refuses the fetch with that error
// (naming the limit), asking no server and caching nothing. A web API
// that fetches for anonymous callers bounds them so: one request naming
// 256 unknown build IDs made 512 upstream requests.
type Quota func() error

type quotaKey struct{}

// WithQuota is ctx with q asked before each of its fetches from a server.
func WithQuota(ctx context.Context, q Quota) context.Context {
	return context.WithValue(ctx, quotaKey{}, q)
}

// askQuota asks ctx's Quota, if any, for one fetch from a server.
func askQuota(ctx context.Context) error {
	if q, _ := ctx.Value(quotaKey{}).(Quota); q != nil {
		return q()
	}
	return nil
}
