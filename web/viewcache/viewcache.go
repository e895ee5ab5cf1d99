// Package viewcache keeps what the pages build from a stored profile (flame
// trees and their encoded bodies, tables, stacks, time orders, annotate
// listings, data-type profiles), a bounded number of each, least recently
// used first out, builds each once however many requests ask for it at the
// same time, and drops every view of a profile when told it changed (Drop:
// a symbolized copy replaced it). The web root decides what is built, when,
// and which caches are dropped; this package only holds it.
package viewcache

import (
	"errors"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Key is a view's cache key: comparable, and naming the profile the view
// was built from.
type Key interface {
	comparable
	Profile() string
}

// Cache holds up to a fixed number of views by key; the embedded LRU's
// Get, Add, Keys and Purge are its reads and writes, and Build computes a
// missing view once for all who ask.
type Cache[K Key, V any] struct {
	*lru.Cache[K, V]

	mu       sync.Mutex
	building map[K]*build[V] // the views being built, by key
}

// build is one view being built: done closes when v and err are set.
type build[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// New makes a Cache of size views.
func New[K Key, V any](size int) (*Cache[K, V], error) {
	c, err := lru.New[K, V](size)
	if err != nil {
		return nil, err
	}
	return &Cache[K, V]{Cache: c, building: map[K]*build[V]{}}, nil
}

// Drop removes every view built from profile id.
func (c *Cache[K, V]) Drop(id string) {
	for _, k := range c.Keys() {
		if k.Profile() == id {
			c.Remove(k)
		}
	}
}

// errBuildPanicked is what those waiting on a build that panicked get.
var errBuildPanicked = errors.New("building the view failed (panic)")

// Build returns the cached view of key, else builds it with compute: once per
// key however many ask at the same time (the others wait for that build
// and share its result). The view is kept when compute returns no error and
// keep (a view built from a partial result, such as one cut short by a
// timeout, is returned but built again next time). Errors are not kept.
// compute runs on the goroutine of the first caller: it should not depend on
// that caller's request staying open, as the others wait on it.
func (c *Cache[K, V]) Build(key K, compute func() (v V, keep bool, err error)) (V, error) {
	if v, ok := c.Get(key); ok {
		return v, nil
	}
	c.mu.Lock()
	if v, ok := c.Get(key); ok { // built while this caller waited for the lock
		c.mu.Unlock()
		return v, nil
	}
	if b, ok := c.building[key]; ok {
		c.mu.Unlock()
		<-b.done
		return b.v, b.err
	}
	b := &build[V]{done: make(chan struct{}), err: errBuildPanicked}
	c.building[key] = b
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.building, key)
		c.mu.Unlock()
		close(b.done)
	}()
	v, keep, err := compute()
	if err == nil && keep {
		c.Add(key, v)
	}
	b.v, b.err = v, err
	return v, err
}
