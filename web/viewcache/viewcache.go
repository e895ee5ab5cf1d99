// Package viewcache keeps what the pages build from a stored profile (flame
// trees and their encoded bodies, tables, stacks, time orders), a bounded
// number of each, least recently used first out, and drops every view of a
// profile when it changes (a symbolized copy replaced it). The web root
// decides what is built and when; this package only holds it.
package viewcache

import lru "github.com/hashicorp/golang-lru/v2"

// Key is a view's cache key: comparable, and naming the profile the view
// was built from.
type Key interface {
	comparable
	Profile() string
}

// Cache holds up to a fixed number of views by key; the embedded LRU's
// Get, Add and Keys are its reads and writes.
type Cache[K Key, V any] struct {
	*lru.Cache[K, V]
}

// New makes a Cache of size views.
func New[K Key, V any](size int) (*Cache[K, V], error) {
	c, err := lru.New[K, V](size)
	if err != nil {
		return nil, err
	}
	return &Cache[K, V]{c}, nil
}

// Drop removes every view built from profile id.
func (c *Cache[K, V]) Drop(id string) {
	for _, k := range c.Keys() {
		if k.Profile() == id {
			c.Remove(k)
		}
	}
}
