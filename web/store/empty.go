package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// emptyFile is Dir's one empty file, of which every empty object (an
// index entry, such as a service's listing of OTLP profiles) is a hard
// link: a link is a directory entry and no inode. Creating an inode on
// ext4 without a journal (this project's benchmark machine) scans the
// inode bitmap past every inode freed in the last minutes (the kernel's
// recently_deleted), and on a file system where other programs delete
// files by the thousand the index entry's inode alone took 15% of the
// OTLP intake server's CPU. No object is ever written in place (Put
// renames a new file over its key), so the links never see bytes.
type emptyFile struct {
	mu   sync.Mutex
	path string // "" until made, "-" once it cannot be (links refused)
}

// emptyName is the empty file's name in the root: upper case, which no
// key has (ValidKey).
const emptyName = "EMPTY"

// create makes p an empty file, a new link of the empty file where it
// can, else a file of its own; fs.ErrExist when p exists.
func (e *emptyFile) create(root, p string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.path == "" {
		e.path = filepath.Join(root, emptyName)
		if err := e.make(); err != nil {
			e.path = "-"
		}
	}
	if e.path != "-" {
		err := os.Link(e.path, p)
		if err == nil || errors.Is(err, fs.ErrExist) {
			return err
		}
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(filepath.Dir(p)); serr != nil {
				return err // p's folder is missing, not the empty file
			}
		}
		// Too many links (65,000 on ext4), or the empty file gone: a new
		// one is made for the next links; this one gets a file of its own.
		if e.make() != nil {
			e.path = "-"
		}
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = f.Chmod(0o644)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
	}
	return err
}

// make replaces the empty file by a new one, synced with its entry, so
// that the links made to it survive a crash as well as it does.
func (e *emptyFile) make() error {
	f, err := os.CreateTemp(filepath.Dir(e.path), tempPrefix+"empty-*")
	if err != nil {
		return err
	}
	err = f.Chmod(0o644)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), e.path)
	}
	if err == nil {
		err = fsyncDir(filepath.Dir(e.path))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
