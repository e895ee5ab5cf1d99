package symbolize

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

// loaded is one object in the store with where it came from.
type loaded struct {
	obj    object
	source string // the file path, and how it was found
	note   string // why the object is weaker than wanted (no DWARF, ...)
}

// store holds loaded debug info keyed by build ID, so every profile and
// every request shares one copy. Entries in use (refs > 0) are never freed;
// idle ones are evicted least recently used first once the bytes they hold
// exceed the budget. Each key is loaded once however many ask at the same time.
type store struct {
	budget int64

	mu      sync.Mutex
	entries map[string]*entry
	idle    *simplelru.LRU[string, *entry] // entries with refs == 0
	used    int64                          // bytes held by all entries

	group singleflight.Group
}

type entry struct {
	key  string
	l    *loaded
	refs int
	size int64
}

func newStore(budget int64) *store {
	idle, _ := simplelru.NewLRU[string, *entry](1<<30, nil)
	return &store{budget: budget, entries: map[string]*entry{}, idle: idle}
}

// acquire returns the entry for key, loading it with load when absent. Every
// successful acquire must be paired with release. The load runs once for all
// concurrent callers; a caller whose context ends stops waiting, and callers
// still waiting retry if the load failed only because its first caller left.
func (s *store) acquire(ctx context.Context, key string, load func(ctx context.Context) (*loaded, error)) (*entry, error) {
	for {
		s.mu.Lock()
		if e, ok := s.entries[key]; ok {
			e.refs++
			s.idle.Remove(key)
			s.mu.Unlock()
			return e, nil
		}
		s.mu.Unlock()
		ch := s.group.DoChan(key, func() (v any, err error) {
			// singleflight runs this in its own goroutine and re-panics
			// there: a panic while loading a debug file is this load's error.
			defer func() {
				if p := recover(); p != nil {
					v, err = nil, fmt.Errorf("loading the debug info panicked: %v", p)
				}
			}()
			l, err := load(ctx)
			if err != nil {
				return nil, err
			}
			// Not idle yet: every caller of this load claims it below (or a
			// goroutine does so for a caller that left), and the last release
			// makes it idle, so it can be neither freed under a caller nor leak.
			s.mu.Lock()
			e := &entry{key: key, l: l, size: l.obj.Size()}
			s.entries[key] = e
			s.used += e.size
			s.evictLocked() // others, idle; e is not idle yet
			s.mu.Unlock()
			return e, nil
		})
		select {
		case <-ctx.Done():
			go func() {
				if r := <-ch; r.Err == nil {
					s.release(s.claim(r.Val.(*entry)))
				}
			}()
			return nil, ctx.Err()
		case r := <-ch:
			if r.Err != nil {
				if (errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) && ctx.Err() == nil {
					continue // the load was cancelled by another caller's context
				}
				return nil, r.Err
			}
			return s.claim(r.Val.(*entry)), nil
		}
	}
}

func (s *store) claim(e *entry) *entry {
	s.mu.Lock()
	e.refs++
	s.idle.Remove(e.key)
	s.mu.Unlock()
	return e
}

// release gives back an entry from acquire. Its size is measured again (debug
// info is decoded lazily, so it grows with use) and idle entries are evicted
// while the store is over budget.
func (s *store) release(e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := e.l.obj.Size()
	if s.entries[e.key] == e {
		s.used += n - e.size
	}
	e.size = n
	e.refs--
	if e.refs == 0 && s.entries[e.key] == e {
		s.idle.Add(e.key, e)
	}
	s.evictLocked()
}

func (s *store) evictLocked() {
	for s.used > s.budget {
		_, e, ok := s.idle.RemoveOldest()
		if !ok {
			return
		}
		delete(s.entries, e.key)
		s.used -= e.size
		e.l.obj.Close()
	}
}

// stats reports the number of entries and the bytes they hold.
func (s *store) stats() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), s.used
}

// lookup returns the entry for key with a reference taken, or nil when the
// store does not hold it.
func (s *store) lookup(key string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return nil
	}
	e.refs++
	s.idle.Remove(key)
	return e
}
