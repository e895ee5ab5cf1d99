package store

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
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
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), tempPrefix) {
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
