package symbolize

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"viewer/symbolize/elfsym"
)

// fakeObj is an object of a given size that records being closed.
type fakeObj struct {
	size   int64
	closed atomic.Bool
}

func (f *fakeObj) ObjAddr(a, _, _, _ uint64) (uint64, error) { return a, nil }
func (f *fakeObj) Lookup(a uint64, fr []elfsym.Frame) ([]elfsym.Frame, error) {
	if f.closed.Load() {
		panic("lookup in a closed object")
	}
	return append(fr[:0], elfsym.Frame{Name: "f"}), nil
}
func (f *fakeObj) Size() int64  { return f.size }
func (f *fakeObj) Close() error { f.closed.Store(true); return nil }

func loadFake(o *fakeObj) func(context.Context) (part, error) {
	return func(context.Context) (part, error) { return &loaded{obj: o}, nil }
}

// acquireSymbols is store.acquire for the symbols facet, as the symbolizer calls it.
func acquireSymbols(s *store, ctx context.Context, key string, load func(context.Context) (part, error)) (*entry, error) {
	e, _, err := s.acquire(ctx, key, facetSymbols, load)
	return e, err
}

// symbolsOf is e's symbols facet.
func symbolsOf(e *entry) *loaded { return e.parts[facetSymbols].(*loaded) }

func TestStoreEvictsIdleLeastRecentlyUsedWithinBudget(t *testing.T) {
	s := newStore(100)
	ctx := context.Background()
	a, b, c := &fakeObj{size: 40}, &fakeObj{size: 40}, &fakeObj{size: 40}
	ea, _ := acquireSymbols(s, ctx, "a", loadFake(a))
	eb, _ := acquireSymbols(s, ctx, "b", loadFake(b))
	s.release(ea)
	s.release(eb)
	// Use a again, so b is the least recently used.
	ea, _ = acquireSymbols(s, ctx, "a", loadFake(&fakeObj{size: 40}))
	if symbolsOf(ea).obj != a {
		t.Fatal("a was loaded again instead of reused")
	}
	s.release(ea)
	ec, _ := acquireSymbols(s, ctx, "c", loadFake(c))
	defer s.release(ec)
	if !b.closed.Load() || a.closed.Load() || c.closed.Load() {
		t.Errorf("over budget: closed a=%v b=%v c=%v, want only b (least recently used)", a.closed.Load(), b.closed.Load(), c.closed.Load())
	}
	if n, bytes := s.stats(); n != 2 || bytes != 80 {
		t.Errorf("store holds %d entries, %d bytes; want 2, 80", n, bytes)
	}
}

func TestStoreNeverFreesAnEntryInUse(t *testing.T) {
	s := newStore(50)
	ctx := context.Background()
	big := &fakeObj{size: 80} // alone over budget
	e, _ := acquireSymbols(s, ctx, "big", loadFake(big))
	other := &fakeObj{size: 30}
	eo, _ := acquireSymbols(s, ctx, "other", loadFake(other))
	s.release(eo) // over budget: other is idle and goes, big stays in use
	if big.closed.Load() {
		t.Fatal("an entry in use was freed")
	}
	if !other.closed.Load() {
		t.Error("the idle entry was kept although the store is over budget")
	}
	if _, err := symbolsOf(e).obj.Lookup(1, nil); err != nil {
		t.Fatal(err)
	}
	// Grows while in use (lazy decoding): measured again on release.
	big.size = 90
	s.release(e)
	if !big.closed.Load() {
		t.Error("an idle entry over budget was kept")
	}
	if n, bytes := s.stats(); n != 0 || bytes != 0 {
		t.Errorf("store holds %d entries, %d bytes after eviction; want 0, 0", n, bytes)
	}
}

// TestStoreLoadsOnceForConcurrentCallers runs in a synctest bubble, so
// that synctest.Wait, not a sleep, lets every caller reach the load.
func TestStoreLoadsOnceForConcurrentCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(1 << 20)
		var loads atomic.Int32
		release := make(chan struct{})
		load := func(context.Context) (part, error) {
			loads.Add(1)
			<-release
			return &loaded{obj: &fakeObj{size: 10}}, nil
		}
		var wg sync.WaitGroup
		entries := make([]*entry, 8)
		for i := range entries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, err := acquireSymbols(s, context.Background(), "k", load)
				if err != nil {
					t.Error(err)
				}
				entries[i] = e
			}()
		}
		synctest.Wait() // all 8 wait for the one load
		close(release)
		wg.Wait()
		if n := loads.Load(); n != 1 {
			t.Errorf("loaded %d times for 8 concurrent callers, want 1", n)
		}
		if entries[0].refs != 8 {
			t.Errorf("refs = %d, want 8", entries[0].refs)
		}
		for _, e := range entries {
			s.release(e)
		}
		if entries[0].refs != 0 || s.idle.Len() != 1 {
			t.Errorf("after all releases: refs %d, idle %d; want 0, 1", entries[0].refs, s.idle.Len())
		}
	})
}

// A caller that gives up (its context ends) does not fail the others waiting
// for the same load, and the entry does not leak.
func TestStoreCallerLeavingDoesNotFailOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(1 << 20)
		release := make(chan struct{})
		load := func(context.Context) (part, error) {
			<-release
			return &loaded{obj: &fakeObj{size: 10}}, nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error)
		go func() {
			_, err := acquireSymbols(s, ctx, "k", load)
			errc <- err
		}()
		synctest.Wait() // the first caller waits for its load
		okc := make(chan *entry)
		go func() {
			e, err := acquireSymbols(s, context.Background(), "k", load)
			if err != nil {
				t.Error(err)
			}
			okc <- e
		}()
		synctest.Wait() // the second joins it
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("leaving caller: %v, want context.Canceled", err)
		}
		close(release)
		e := <-okc
		s.release(e)
		synctest.Wait() // the leaving caller's goroutine has released its claim
		if refs, idle := e.refs, s.idle.Len(); refs != 0 || idle != 1 {
			t.Fatalf("entry refs %d, idle %d; want 0, 1 (the leaving caller's claim must be released)", refs, idle)
		}
	})
}

// A binary larger than the whole budget is loaded, used and dropped when
// its last user releases it; while it is held, the idle binaries go, so the
// held bytes come back under the budget as soon as it can.
func TestStoreDropsABinaryOverTheWholeBudget(t *testing.T) {
	s := newStore(100)
	ctx := context.Background()
	small, big := &fakeObj{size: 40}, &fakeObj{size: 150}
	es, _ := acquireSymbols(s, ctx, "small", loadFake(small))
	s.release(es)
	eb, err := acquireSymbols(s, ctx, "big", loadFake(big))
	if err != nil {
		t.Fatal(err)
	}
	if big.closed.Load() {
		t.Fatal("the binary over the budget was freed while in use")
	}
	if !small.closed.Load() {
		t.Error("the idle binary was kept although the binary in use is over the budget")
	}
	s.release(eb)
	if !big.closed.Load() {
		t.Error("the binary over the budget was kept after its use")
	}
	if n, bytes := s.stats(); n != 0 || bytes != 0 {
		t.Errorf("store holds %d entries, %d bytes; want 0, 0", n, bytes)
	}
	// Asked for again, it loads again (and is dropped again).
	eb, _ = acquireSymbols(s, ctx, "big", loadFake(&fakeObj{size: 150}))
	s.release(eb)
	if s.loads.Load() != 3 {
		t.Errorf("%d loads, want 3", s.loads.Load())
	}
}

// sizedPart is a facet of a given size that records being closed.
type sizedPart struct {
	size   int64
	closed bool
}

func (p *sizedPart) Size() int64  { return p.size }
func (p *sizedPart) Close() error { p.closed = true; return nil }

// A binary's facets share its one entry: counted together against the
// budget, each loaded once, evicted together.
func TestStoreFacetsShareTheBinarysEntry(t *testing.T) {
	s := newStore(100)
	ctx := context.Background()
	syms, types := &fakeObj{size: 30}, &sizedPart{size: 50}
	e1, _ := acquireSymbols(s, ctx, "bin", loadFake(syms))
	e2, p, err := s.acquire(ctx, "bin", facetTypes, func(context.Context) (part, error) { return types, nil })
	if err != nil || p != types || e2 != e1 {
		t.Fatalf("types facet: entry %p vs %p, part %v, %v; want the binary's one entry", e2, e1, p, err)
	}
	if _, p2, _ := s.acquire(ctx, "bin", facetTypes, func(context.Context) (part, error) { return &sizedPart{}, nil }); p2 != types {
		t.Error("the types facet was loaded again")
	}
	s.release(e1)
	s.release(e2)
	s.release(e2)
	if n, bytes := s.stats(); n != 1 || bytes != 80 || s.loads.Load() != 2 {
		t.Errorf("store holds %d entries, %d bytes after %d loads; want 1 entry of 80 bytes, 2 loads", n, bytes, s.loads.Load())
	}
	other, _ := acquireSymbols(s, ctx, "other", loadFake(&fakeObj{size: 40}))
	defer s.release(other)
	if !syms.closed.Load() || !types.closed {
		t.Errorf("over budget: symbols closed %v, types closed %v; want the whole binary evicted", syms.closed.Load(), types.closed)
	}
}

// Dropped debug info goes back to the operating system once an eighth of
// the budget has been dropped, so the process's RSS follows the budget
// rather than the collector's headroom.
func TestStoreReturnsDroppedMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // the waits below take no time on its clock
		s := newStore(64 << 20)
		returned := make(chan struct{}, 8)
		s.returnMemory = func() { returned <- struct{}{} }
		ctx := context.Background()
		use := func(key string, size int64) {
			e, err := acquireSymbols(s, ctx, key, loadFake(&fakeObj{size: size}))
			if err != nil {
				t.Fatal(err)
			}
			s.release(e)
		}
		use("a", 40<<20)
		use("b", 20<<20) // within budget: nothing dropped
		select {
		case <-returned:
			t.Fatal("memory returned although nothing was dropped")
		case <-time.After(50 * time.Millisecond):
		}
		use("c", 30<<20) // a (40 MiB, over an eighth of the budget) is evicted
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("40 MiB of evicted debug info was not returned to the OS")
		}
		synctest.Wait() // one return at a time: let the first end
		if s.returning.Load() {
			t.Fatal("the first return of memory has not ended")
		}
		use("huge", 100<<20) // over the budget: loaded, used, dropped
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("an entry larger than the budget was dropped but its memory not returned")
		}
	})
}
