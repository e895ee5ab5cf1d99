package debuginfo

import (
	"os"

	"viewer/symbolize"
	"viewer/symbolize/buildid"
)

// localPath finds bid's file of kind in the local debug directories
// (--serve-local-debug), checking the build ID and contents of each
// candidate, or returns "".
func (s *Store) localPath(bid string, kind symbolize.FetchKind) string {
	if len(bid) < 4 {
		return ""
	}
	want := buildid.Executable
	if kind == symbolize.KindDebuginfo {
		want = buildid.Debuginfo
	}
	for _, d := range s.cfg.LocalDirs {
		// Each layout: a build-ID tree, a copied one, perf's ~/.debug, a
		// debuginfod cache.
		for _, c := range buildid.Paths(d, bid, buildid.Tree|buildid.Bare|buildid.Perf|buildid.Debuginfod, want) {
			if fileIs(c.Path, bid, kind) {
				return c.Path
			}
		}
	}
	return ""
}

// fileIs reports whether the file at p is an ELF file with build ID bid
// that can serve as kind.
func fileIs(p, bid string, kind symbolize.FetchKind) bool {
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
