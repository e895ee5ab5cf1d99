package store

import (
	"os"
	"path/filepath"
	"time"
)

// RemoveStale removes the regular files in dir whose names match one of
// patterns and that were last written age ago or more, and returns how
// many it removed: the spool files of uploads a killed server left in a
// directory other servers may share ($TMPDIR), whose files in use are
// younger.
func RemoveStale(dir string, patterns []string, age time.Duration, now time.Time) int {
	n := 0
	for _, pattern := range patterns {
		names, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, p := range names {
			if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() && now.Sub(info.ModTime()) >= age && os.Remove(p) == nil {
				n++
			}
		}
	}
	return n
}
