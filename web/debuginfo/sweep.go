package debuginfo

import (
	"context"
	"errors"
	"strings"
	"time"

	"viewer/symbolize"
	"viewer/web/store"
)

// Sweep removes the files of uploads that were never acknowledged: debug
// files and sources no meta or source index names, as a crash between
// writing a file and its meta (or index) leaves them. Files younger than
// grace are kept: on a bucket shared by replicas they may be another
// replica's upload in progress (a local directory is one process's, and
// is swept with no grace at start-up). It returns how many it removed.
func (s *Store) Sweep(ctx context.Context, grace time.Duration) (int, error) {
	l, ok := s.st.(store.Lister)
	d, ok2 := s.st.(store.Deleter)
	if !ok || !ok2 {
		return 0, nil
	}
	keys, err := l.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	named := map[string]bool{}
	var files []string
	for _, k := range keys {
		rest := strings.TrimPrefix(k, prefix)
		bid, base, ok := strings.Cut(rest, "/")
		if !ok || strings.Contains(base, "/") || ValidBuildID(bid) != nil {
			continue
		}
		switch {
		case base == "debuginfo.json" || base == "executable.json":
			e, err := s.entry(ctx, bid, metaKind(base))
			if err != nil {
				if errors.Is(err, ErrNotFound) {
					continue
				}
				return 0, err
			}
			named[e.Object] = true
		case base == "sources.json":
			ix, err := s.sources(ctx, bid)
			if err != nil {
				return 0, err
			}
			for _, f := range ix.Files {
				named[f.Object] = true
			}
		case strings.HasPrefix(base, "elf-") || strings.HasPrefix(base, "src-"):
			files = append(files, k)
		}
	}
	removed := 0
	now := time.Now()
	for _, k := range files {
		if named[k] {
			continue
		}
		if grace > 0 {
			info, err := s.st.Stat(ctx, k)
			if err != nil || now.Sub(info.ModTime) < grace {
				continue
			}
		}
		if err := d.Delete(ctx, k); err != nil {
			return removed, err
		}
		removed++
	}
	return removed, nil
}

func metaKind(base string) symbolize.FetchKind {
	return symbolize.FetchKind(strings.TrimSuffix(base, ".json"))
}
