package debuginfo

import (
	"os"
	"path/filepath"

	"viewer/symbolize"
)

// localPath finds bid's file of kind in the local debug directories
// (--serve-local-debug), checking the build ID and contents of each
// candidate, or returns "".
func (s *Store) localPath(bid string, kind symbolize.FileKind) string {
	if len(bid) < 4 {
		return ""
	}
	for _, d := range s.cfg.LocalDirs {
		var cands []string
		if kind == symbolize.KindDebuginfo {
			cands = []string{
				filepath.Join(d, ".build-id", bid[:2], bid[2:]+".debug"),
				filepath.Join(d, bid[:2], bid[2:]+".debug"),
				filepath.Join(d, ".build-id", bid[:2], bid[2:], "debug"), // perf's ~/.debug
				filepath.Join(d, bid, "debuginfo"),
			}
		} else {
			cands = []string{
				filepath.Join(d, ".build-id", bid[:2], bid[2:]),
				filepath.Join(d, bid[:2], bid[2:]),
				filepath.Join(d, ".build-id", bid[:2], bid[2:], "elf"),
				filepath.Join(d, bid, "executable"),
			}
		}
		for _, p := range cands {
			if fileIs(p, bid, kind) {
				return p
			}
		}
	}
	return ""
}

// fileIs reports whether the file at p is an ELF file with build ID bid
// that can serve as kind.
func fileIs(p, bid string, kind symbolize.FileKind) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	c, err := classify(f)
	return err == nil && c.bid == bid && hasKind(c.kinds(), kind)
}
