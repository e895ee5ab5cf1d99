package symbolize

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"viewer/symbolize/debuginfod"
)

// maxDebugDirFiles bounds how many files of one --debug-dir are read for
// their build IDs (a directory of the whole /usr/lib/debug is ~10,000).
const maxDebugDirFiles = 50000

// debugDirs indexes the ELF files under each --debug-dir by the build ID
// read from each file, so that a debug file is found whatever it is called
// (app.dbg for /opt/app/bin/app-1.2) and wherever under the directory it
// lies (DIR/usr/lib/libfoo.so.1.debug), not only under the binary's name
// or in a .build-id tree. An index is read again when a directory in it
// changed (a file added before Retry).
type debugDirs struct {
	mu    sync.Mutex
	index map[string]*dirIndex
}

// dirIndex is one --debug-dir's files by build ID.
type dirIndex struct {
	byID  map[string][]string
	dirs  map[string]time.Time // each directory walked, with its mtime then
	files int
}

// lookup returns the files under dir with build ID bid, indexing dir
// first when it is new or changed.
func (d *debugDirs) lookup(dir, bid string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.index == nil {
		d.index = map[string]*dirIndex{}
	}
	ix := d.index[dir]
	if ix == nil || ix.stale() {
		ix = indexDebugDir(dir)
		d.index[dir] = ix
	}
	return ix.byID[bid]
}

// stale reports whether a directory of the index changed since it was read.
func (ix *dirIndex) stale() bool {
	for p, mt := range ix.dirs {
		fi, err := os.Stat(p)
		if err != nil || !fi.ModTime().Equal(mt) {
			return true
		}
	}
	return false
}

// indexDebugDir reads the build ID of every regular file under dir, up to
// maxDebugDirFiles, but for .build-id trees (found by path).
func indexDebugDir(dir string) *dirIndex {
	ix := &dirIndex{byID: map[string][]string{}, dirs: map[string]time.Time{}}
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skipped, as a missing candidate is
		}
		if e.IsDir() {
			if e.Name() == ".build-id" && p != dir {
				return fs.SkipDir
			}
			if fi, err := e.Info(); err == nil {
				ix.dirs[p] = fi.ModTime()
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		if ix.files++; ix.files > maxDebugDirFiles {
			return fs.SkipAll
		}
		if id, err := debuginfod.FileBuildID(p); err == nil && id != "" {
			ix.byID[id] = append(ix.byID[id], p)
		}
		return nil
	})
	return ix
}
