package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Lister is a Store that can list its keys; Dir and Blob are. The debug
// file index (web/debuginfo) needs it, profiles do not.
type Lister interface {
	// List returns the keys that start with prefix (a key prefix ending
	// in "/"), in no particular order.
	List(ctx context.Context, prefix string) ([]string, error)
}

// List returns the keys under prefix.
func (d *Dir) List(ctx context.Context, prefix string) ([]string, error) {
	root := filepath.Join(d.root, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
	var keys []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(e.Name(), tempPrefix) && e.IsDir() {
			return fs.SkipDir // a PutAll's, not yet in place
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), tempPrefix) || strings.HasPrefix(e.Name(), journalPrefix) || e.Name() == emptyName {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return keys, nil
}

// List returns the keys under prefix.
func (s *Blob) List(ctx context.Context, prefix string) ([]string, error) {
	it := s.b.List(&blob.ListOptions{Prefix: prefix})
	var keys []string
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return keys, nil
		}
		if err != nil {
			return nil, s.wrap("listing", prefix, err)
		}
		if !o.IsDir {
			keys = append(keys, o.Key)
		}
	}
}

// Seek lets http.ServeContent answer Range requests from an object without
// reading what comes before the range (gocloud reopens the object at the
// new offset).
func (b blobReader) Seek(offset int64, whence int) (int64, error) {
	return b.r.Seek(offset, whence)
}

// Spooler is a Store that can take a finished local file as an object
// without copying it; Dir is. Uploads of large files (web/debuginfo) write
// them once, into TempFile, and Commit moves them into place.
type Spooler interface {
	// TempFile creates a temporary file on the store's file system,
	// removed at the next start if never committed.
	TempFile() (*os.File, error)
	// Commit makes the temporary file f the object at key, durably, as Put
	// would, and closes it; f is gone afterwards whatever the outcome.
	Commit(ctx context.Context, key string, f *os.File) error
}

// TempFile creates a temporary file in the store's root.
func (d *Dir) TempFile() (*os.File, error) {
	return os.CreateTemp(d.root, tempPrefix+"spool-*")
}

// Commit moves f, from TempFile, to key.
func (d *Dir) Commit(ctx context.Context, key string, f *os.File) (err error) {
	defer func() {
		f.Close()
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := d.settle(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: syncing %s: %w", key, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return d.syncEntry(dir)
}

// Deleter is a Store that can remove objects; Dir and Blob are. The debug
// file store (web/debuginfo) removes what it wrote for an upload it then
// refused, and the objects a crash left unreferenced.
type Deleter interface {
	// Delete removes key; a key that does not exist is no error.
	Delete(ctx context.Context, key string) error
}

// Delete removes key's file.
func (d *Dir) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := d.settle(key); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Delete removes key's object.
func (s *Blob) Delete(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	if err := s.b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return s.wrap("deleting", key, err)
	}
	return nil
}
