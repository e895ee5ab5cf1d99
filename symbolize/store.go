package symbolize

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"viewer/symbolize/elfsym"
)

// object is what a mapping's addresses are looked up in: an ELF file
// (elfsym.File) or the kernel's symbol list.
type object interface {
	ObjAddr(addr, start, limit, fileOffset uint64) (uint64, error)
	Lookup(addr uint64, frames []elfsym.Frame) ([]elfsym.Frame, error)
	Size() int64
	Close() error
}

// facet is one kind of thing loaded from a binary. A binary's facets are
// loaded when first asked for, held in its one store entry, counted in the
// one budget and evicted together.
type facet uint8

const (
	facetSymbols facet = iota // names, line tables, inline frames (*loaded)
	facetTypes                // types, variables, code and CFA for the data-type page (*typesBinary)
	facetCFI                  // call frame information for the perf.data unwinder (*unwind.Object)
	nFacets
)

// part is one facet of a loaded binary. Size is measured again at each
// release (debug info is decoded lazily, so it grows with use).
type part interface {
	Size() int64
	Close() error
}

// loaded is a binary's symbols with where they came from.
type loaded struct {
	obj    object
	source string // the file path, and how it was found
	note   string // why the object is weaker than wanted (no DWARF, ...)
	local  bool   // found on this machine, not uploaded or downloaded
	// passedOver is why no better file was used: files passed over, and
	// debuginfod's failure (in note too).
	passedOver string

	pltMu   sync.Mutex // guards the PLT search (plt.go)
	pltDone bool       // the executable's PLT names were sought
	pltErr  error      // why they were not found
}

func (l *loaded) Size() int64  { return l.obj.Size() }
func (l *loaded) Close() error { return l.obj.Close() }

// store is the one owner of what is loaded from binaries, keyed by build ID
// (BinaryKey: the path only for binaries without one), so every profile,
// every request and every consumer (symbolization, the source view, the
// data-type page) shares one copy. Entries in use (refs > 0) are never
// freed; idle ones are evicted least recently used first once the bytes
// they hold exceed the budget, and an entry larger than the whole budget is
// dropped as soon as its last user releases it. Each facet of a key is
// loaded once however many ask at the same time, and no lock is held while
// it loads.
type store struct {
	budget int64

	mu      sync.Mutex
	entries map[string]*entry
	idle    *simplelru.LRU[string, *entry] // entries with refs == 0
	used    int64                          // bytes held by all entries

	group   singleflight.Group
	loads   atomic.Int64 // facets loaded, for tests and stats
	evicted atomic.Int64 // facets dropped

	// Dropped debug info is returned to the operating system once an
	// eighth of the budget (at least 8 MiB) has been dropped since the
	// last return: otherwise the collector's headroom (GOGC) keeps the
	// freed pages in the process, and its RSS exceeds the budget by up to
	// the live heap again. A drop while a return runs is returned with the
	// next one.
	freed        int64       // bytes dropped since the last return (mu)
	returning    atomic.Bool // a return is under way
	returnMemory func()      // debug.FreeOSMemory; tests count calls
}

type entry struct {
	key   string
	parts [nFacets]part
	refs  int
	size  int64
	gone  bool // discarded: out of entries, dropped at its last release
}

func newStore(budget int64) *store {
	idle, _ := simplelru.NewLRU[string, *entry](1<<30, nil)
	return &store{budget: budget, entries: map[string]*entry{}, idle: idle, returnMemory: debug.FreeOSMemory}
}

// acquire returns the entry for key with facet f loaded, loading it with
// load when absent. Every successful acquire must be paired with release.
// The load runs once for all concurrent callers; a caller whose context
// ends stops waiting, and callers still waiting retry if the load failed
// only because its first caller left.
func (s *store) acquire(ctx context.Context, key string, f facet, load func(ctx context.Context) (part, error)) (*entry, part, error) {
	for {
		s.mu.Lock()
		e := s.entries[key]
		if e == nil {
			e = &entry{key: key}
			s.entries[key] = e
		}
		// The reference keeps e in the map (only idle entries are evicted)
		// while the facet loads.
		e.refs++
		s.idle.Remove(key)
		if p := e.parts[f]; p != nil {
			s.mu.Unlock()
			return e, p, nil
		}
		s.mu.Unlock()
		ch := s.group.DoChan(fmt.Sprintf("%d\x00%s", f, key), func() (v any, err error) {
			// singleflight runs this in its own goroutine and re-panics
			// there: a panic while loading a debug file is this load's error.
			defer func() {
				if p := recover(); p != nil {
					v, err = nil, fmt.Errorf("loading the debug info panicked: %v", p)
				}
			}()
			s.mu.Lock()
			if e := s.entries[key]; e != nil && e.parts[f] != nil {
				p := e.parts[f] // installed by a load that ended as this one began
				s.mu.Unlock()
				return p, nil
			}
			s.mu.Unlock()
			p, err := load(ctx)
			if err != nil {
				return nil, err
			}
			s.loads.Add(1)
			return p, nil
		})
		select {
		case <-ctx.Done():
			go func() {
				if r := <-ch; r.Err == nil {
					s.install(e, f, r.Val.(part))
				}
				s.release(e)
			}()
			return nil, nil, ctx.Err()
		case r := <-ch:
			if r.Err != nil {
				s.release(e)
				if (errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) && ctx.Err() == nil {
					continue // the load was cancelled by another caller's context
				}
				return nil, nil, r.Err
			}
			return e, s.install(e, f, r.Val.(part)), nil
		}
	}
}

// install puts a loaded facet in e (held by the caller) unless it is there
// already, and returns the one in e.
func (s *store) install(e *entry, f facet, p part) part {
	n := p.Size()
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := e.parts[f]; q != nil {
		if q != p {
			p.Close() // a second load that raced the first; never handed out
		}
		return q
	}
	e.parts[f] = p
	e.size += n
	s.used += n
	s.evictLocked() // others, idle; e is held
	return p
}

// release gives back an entry from acquire. Its size is measured again
// and idle entries are evicted while the store is over budget.
func (s *store) release(e *entry) {
	s.mu.Lock()
	parts := e.parts
	s.mu.Unlock()
	var n int64
	for _, p := range parts {
		if p != nil {
			n += p.Size()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.parts == parts {
		s.used += n - e.size
		e.size = n
	}
	e.refs--
	if e.refs == 0 {
		switch {
		case e.gone:
			s.dropLocked(e)
		case e.parts == [nFacets]part{}:
			delete(s.entries, e.key) // nothing loaded (the loads failed)
		case e.size > s.budget:
			s.dropLocked(e) // larger than the whole budget: loaded, used, dropped
		default:
			s.idle.Add(e.key, e)
		}
	}
	s.evictLocked()
}

func (s *store) evictLocked() {
	for s.used > s.budget {
		_, e, ok := s.idle.RemoveOldest()
		if !ok {
			return
		}
		s.dropLocked(e)
	}
}

// discard takes e, held by the caller, out of the store: the next acquire
// of its key loads afresh, and e is freed at its last release.
func (s *store) discard(e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries[e.key] == e {
		delete(s.entries, e.key)
	}
	e.gone = true
}

// dropLocked frees an idle (or discarded) entry.
func (s *store) dropLocked(e *entry) {
	if s.entries[e.key] == e {
		s.idle.Remove(e.key)
		delete(s.entries, e.key)
	}
	s.used -= e.size
	for _, p := range e.parts {
		if p != nil {
			p.Close()
			s.evicted.Add(1)
		}
	}
	s.freed += e.size
	if s.freed >= max(s.budget/8, 8<<20) && s.returning.CompareAndSwap(false, true) {
		s.freed = 0
		go func() {
			defer s.returning.Store(false)
			s.returnMemory()
		}()
	}
}

// stats reports the number of entries and the bytes they hold.
func (s *store) stats() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), s.used
}

// lookup returns the entry for key with a reference taken and its facet f,
// or nil when the store does not hold that facet.
func (s *store) lookup(key string, f facet) (*entry, part) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || e.parts[f] == nil {
		return nil, nil
	}
	e.refs++
	s.idle.Remove(key)
	return e, e.parts[f]
}
