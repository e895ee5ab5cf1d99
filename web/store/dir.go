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
)

// Dir stores each key as a file under a root directory. Writes go to a
// temporary file in the destination directory, which is fsynced, renamed
// into place and followed by an fsync of the directory, so an acknowledged
// Put survives a crash.
type Dir struct {
	root string
}

// tempPrefix names Put's temporary files; Dir refuses keys with a path
// element starting with it, so sweeping them never removes a stored key.
const tempPrefix = ".tmp-"

// NewDir returns a store rooted at root, creating the directory if needed.
// It removes the temporary files of writes a crash interrupted (a kill -9
// during an upload leaves one beside its destination; none was ever
// acknowledged). A directory is one process's: every temporary file found
// at start-up is an orphan. Two processes sharing a directory are not
// supported (replicas share an object store instead, see blob.go).
func NewDir(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("store: empty directory name")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	sweepTemps(root)
	return &Dir{root: root}, nil
}

// sweepTemps removes the regular files named like Put's temporary files
// under root (best effort: an unreadable directory is left as it is).
func sweepTemps(root string) {
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if e != nil && e.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), tempPrefix) {
			os.Remove(p)
		}
		return nil
	})
}

// Root is the directory the store writes to.
func (d *Dir) Root() string { return d.root }

func (d *Dir) path(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	if strings.HasPrefix(key, tempPrefix) || strings.Contains(key, "/"+tempPrefix) {
		return "", fmt.Errorf("store: invalid key %q (%s… names temporary files)", key, tempPrefix)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes r to key atomically and durably.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader) (err error) {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = io.Copy(f, ctxReader{ctx, r}); err != nil {
		return fmt.Errorf("store: writing %s: %w", key, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("store: syncing %s: %w", key, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("store: closing %s: %w", key, err)
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err = os.Rename(f.Name(), p); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// Sync the directory (and its parent, which may have just gained it) so
	// the new names are durable too.
	if err = syncDir(dir); err != nil {
		return err
	}
	if dir != d.root {
		return syncDir(filepath.Dir(dir))
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: syncing directory %s: %w", dir, err)
	}
	return nil
}

// Get opens key for reading.
func (d *Dir) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return f, nil
}

// Stat returns key's size and modification time.
func (d *Dir) Stat(ctx context.Context, key string) (Info, error) {
	p, err := d.path(key)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("store: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("store: %s is not a file", key)
	}
	return Info{Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// ctxReader stops a long copy when the context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
