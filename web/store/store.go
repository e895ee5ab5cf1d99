// Package store keeps uploaded profiles and what is derived from them. The
// Store interface is deliberately small (put, get, stat by key) so an
// object-storage backend can implement it later; Dir is the local-directory
// backend used by `viewer serve`.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"viewer/web/prefault"
)

// ErrNotFound is returned (wrapped) by Get and Stat when a key does not exist.
var ErrNotFound = errors.New("not found")

// Info describes a stored object.
type Info struct {
	Size    int64
	ModTime time.Time
	// ETag identifies the object's version where the store has one (the
	// object stores; empty for Dir).
	ETag string
}

// Store saves and returns objects by key. Keys are slash-separated paths of
// safe segments, e.g. "abcd…/original" (see ValidKey). A Put is durable once
// it returns nil: after a crash or restart, Get returns the whole object or
// ErrNotFound, never a partial one.
type Store interface {
	Put(ctx context.Context, key string, r io.Reader) error
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Stat(ctx context.Context, key string) (Info, error)
}

// Object is one object of a PutAll: its key and its bytes.
type Object struct {
	Key  string
	Body io.Reader
}

// BatchPutter is a Store that writes several objects of one folder at
// once, with fewer syncs than a Put each; Dir is.
type BatchPutter interface {
	// PutAll writes objs, whose keys share all but their last segment,
	// as Put would each: when it returns nil they are all durable, and
	// after a crash each is whole or absent.
	PutAll(ctx context.Context, objs []Object) error
}

// PutAll writes objs with s's PutAll when it has one, else with a Put
// each, in order (an object store shows each object once written).
func PutAll(ctx context.Context, s Store, objs []Object) error {
	if b, ok := s.(BatchPutter); ok {
		return b.PutAll(ctx, objs)
	}
	return putEach(ctx, s, objs)
}

// IndexPutter is a BatchPutter that also creates empty index objects
// (keys in other folders, such as a service's listing) once a PutAll's
// objects are in place, syncing in fewer rounds than a PutAll and a Put
// each; Dir is.
type IndexPutter interface {
	// PutAllIndexed is PutAll(objs), then an empty object at each key of
	// index, all durable when it returns nil. An index object is never
	// seen before objs are; after a crash it may be left without them
	// (their write was not acknowledged), so a reader of the index skips
	// an entry whose objects are missing.
	PutAllIndexed(ctx context.Context, objs []Object, index []string) error
}

// PutAllIndexed writes objs, then an empty object at each key of index,
// with s's PutAllIndexed when it has one, else with PutAll and a Put each.
func PutAllIndexed(ctx context.Context, s Store, objs []Object, index []string) error {
	if ip, ok := s.(IndexPutter); ok {
		return ip.PutAllIndexed(ctx, objs, index)
	}
	if err := PutAll(ctx, s, objs); err != nil {
		return err
	}
	return PutIndex(ctx, s, index)
}

// PutIndex creates an empty object at each key, one after the other.
func PutIndex(ctx context.Context, s Store, index []string) error {
	for _, k := range index {
		if err := s.Put(ctx, k, strings.NewReader("")); err != nil {
			return err
		}
	}
	return nil
}

func putEach(ctx context.Context, s Store, objs []Object) error {
	for _, o := range objs {
		if err := s.Put(ctx, o.Key, o.Body); err != nil {
			return err
		}
	}
	return nil
}

// ValidKey reports whether key is 1–4 segments of [a-z0-9._-], none of them
// "." or ".." or empty, so a key can never escape the store's root.
func ValidKey(key string) error {
	segs := strings.Split(key, "/")
	if len(segs) > 4 {
		return fmt.Errorf("store: key %q has too many segments", key)
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || len(s) > 128 {
			return fmt.Errorf("store: invalid key %q", key)
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return fmt.Errorf("store: invalid character %q in key %q", c, key)
			}
		}
	}
	return nil
}

// Exists reports whether key is stored.
func Exists(ctx context.Context, s Store, key string) (bool, error) {
	_, err := s.Stat(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ReadAll returns the whole object at key, refusing objects over max bytes
// (max <= 0 means no limit).
func ReadAll(ctx context.Context, s Store, key string, max int64) ([]byte, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var r io.Reader = rc
	if max > 0 {
		r = io.LimitReader(rc, max+1)
	}
	size := sizeHint(rc)
	if max > 0 && size > max {
		size = max // refused after max+1 bytes anyway
	}
	b, err := readAll(r, size)
	if err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", key, err)
	}
	if max > 0 && int64(len(b)) > max {
		return nil, fmt.Errorf("store: %s is larger than %d bytes", key, max)
	}
	return b, nil
}

// sizeHint is the size of what rc will give when it can tell (a file's,
// a blob's), else -1.
func sizeHint(rc io.Reader) int64 {
	switch r := rc.(type) {
	case interface{ Size() int64 }:
		return r.Size()
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := r.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return -1
}

// readAll is io.ReadAll into an array of size+1 bytes when the size is
// known (size ≥ 0), its pages mapped in at once: io.ReadAll grows its
// array step by step from 512 bytes, copying it each time, and a stored
// copy of a 2M-sample profile is about 90 MB. It still reads to the end
// of r, growing the array if r gives more than size.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size < 0 || size > 1<<40 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1) // +1: the read that finds the end
	prefault.Slice(b)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than its size said
		}
	}
}
