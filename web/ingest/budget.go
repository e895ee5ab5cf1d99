package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// DefaultMemory is the default memory budget shared by all parses in
// flight (--ingest-memory).
const DefaultMemory = 1 << 30

// ErrBusy means the memory budget stayed taken by other uploads for the
// wait; the web layer answers 503 with Retry-After.
var ErrBusy = errors.New("server busy")

// Budget is memory shared by the parses in flight: each takes what its
// input is estimated to cost (its decompressed bytes plus what parsing them
// allocates) before reading it into memory, and gives it back when done.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
	// held is what is taken now and peak the most ever taken at once:
	// what the tests compare with the heap the parses reached.
	held, peak atomic.Int64
}

// NewBudget is a budget of size bytes; a parse waits up to wait for its
// share before failing with ErrBusy.
func NewBudget(size int64, wait time.Duration) *Budget {
	return &Budget{sem: semaphore.NewWeighted(size), size: size, wait: wait}
}

// Size is the budget's total.
func (b *Budget) Size() int64 { return b.size }

// Wait is how long a parse waits for its share.
func (b *Budget) Wait() time.Duration { return b.wait }

// take reserves n bytes, failing with ErrTooLarge when n is more than the
// whole budget and ErrBusy when it is not free within the wait. A nil
// Budget always succeeds.
func (b *Budget) take(ctx context.Context, n int64, what string) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	n = max(n, 1)
	if err := b.fits(n, what); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, fmt.Errorf("%w: the memory for uploads (--ingest-memory %s) is taken by other uploads; this one needs %s; retry shortly", ErrBusy, mib(b.size), mib(n))
	}
	return b.taken(n), nil
}

// Take reserves n bytes for what (named in the refusals), waiting up to
// the budget's wait: ErrTooLarge when n is more than the whole budget,
// ErrBusy when it stays taken. For work outside the parses that spends
// memory in proportion to a request (the symbolization API).
func (b *Budget) Take(ctx context.Context, n int64, what string) (release func(), err error) {
	return b.take(ctx, n, what)
}

// TakeMore reserves n more bytes for what, which holds held already: as
// Take, but ErrTooLarge when held+n is more than the whole budget. For
// work that takes its memory in steps as its input arrives (the
// symbolization API's request bodies), so that one whose whole is over
// the budget is refused as too large, not left waiting for itself.
func (b *Budget) TakeMore(ctx context.Context, held, n int64, what string) (release func(), err error) {
	if err := b.fits(held+n, what); err != nil {
		return nil, err
	}
	return b.take(ctx, n, what)
}

// fits is ErrTooLarge, naming what and the flag, when n bytes are more
// than the whole budget (never for a nil Budget).
func (b *Budget) fits(n int64, what string) error {
	if b == nil || n <= b.size {
		return nil
	}
	return fmt.Errorf("%w: reading this %s needs about %s of memory, more than the server's %s for uploads (restart it with a larger --ingest-memory to accept it)",
		ErrTooLarge, what, mib(n), mib(b.size))
}

// taken counts n bytes acquired, and returns what gives them back.
func (b *Budget) taken(n int64) (release func()) {
	h := b.held.Add(n)
	for p := b.peak.Load(); h > p && !b.peak.CompareAndSwap(p, h); p = b.peak.Load() {
	}
	return func() { b.held.Add(-n); b.sem.Release(n) }
}

// TryTake reserves n bytes if they are free now, without waiting, and
// reports whether it did: for work that is worth doing only when memory is
// to spare (the first view built as an upload is stored), and otherwise
// done later, on request. A nil Budget always succeeds.
func (b *Budget) TryTake(n int64) (release func(), ok bool) {
	if b == nil {
		return func() {}, true
	}
	n = max(n, 1)
	if !b.sem.TryAcquire(n) {
		return nil, false
	}
	return b.taken(n), true
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20) }

// reservation is one parse's share of a Budget, taken in steps as the
// parse learns what it needs (a perf.data: its index as it is read, then
// what its conversion is estimated to keep), and given back at once.
type reservation struct {
	b     *Budget
	ctx   context.Context
	held  int64
	gives []func()
}

// grow takes n more bytes for the parse of what (a busy or too-large
// error names it), failing with ErrTooLarge when the parse's share would
// pass the whole budget.
func (r *reservation) grow(n int64, what string) error {
	if r.b == nil || n <= 0 {
		return nil
	}
	if err := r.b.fits(r.held+n, what); err != nil {
		return err
	}
	give, err := r.b.take(r.ctx, n, what)
	if err != nil {
		return err
	}
	r.held += n
	r.gives = append(r.gives, give)
	return nil
}

// room is how much more the parse may take before it passes the whole
// budget (all of it for a nil Budget: no limit).
func (r *reservation) room() int64 {
	if r == nil || r.b == nil {
		return 1<<63 - 1
	}
	return r.b.size - r.held
}

// release gives back all the parse took.
func (r *reservation) release() {
	for _, give := range r.gives {
		give()
	}
	r.gives, r.held = nil, 0
}
