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
// writing a file and its meta (or index) leaves them, and, in an S3
// bucket, the unfinished multipart uploads of a file a crash interrupted
// (store.UploadAborter), whose parts List does not show, and the local
// spool files of uploads to a bucket (sweepSpool). Files younger
// than grace, and with a grace unfinished uploads younger than
// UnfinishedUploadGrace, are kept: on a bucket shared by replicas they
// may be another replica's upload in progress (a local directory is one
// process's, and is swept with no grace at start-up). It returns how many
// files and uploads it removed.
func (s *Store) Sweep(ctx context.Context, grace time.Duration) (int, error) {
	l, ok := s.st.(store.Lister)
	d, ok2 := s.st.(store.Deleter)
	if !ok || !ok2 {
		return 0, nil
	}
	now := time.Now()
	aborted := 0
	if a, ok := s.st.(store.UploadAborter); ok {
		uploadGrace := grace
		if grace > 0 {
			uploadGrace = max(grace, UnfinishedUploadGrace)
		}
		n, err := a.AbortUploads(ctx, prefix, now.Add(-uploadGrace))
		if err != nil {
			return n, err
		}
		aborted = n
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
	removed := aborted + s.sweepSpool(now)
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

// spoolPattern names the files Put spools an upload to, in TempDir, when
// the store is not a local directory.
const spoolPattern = "viewer-debuginfo-upload-*"

// sweepSpool removes the spool files in TempDir that a crash left, those
// last written UnfinishedUploadGrace ago or more: TempDir may be shared
// by other servers on this machine, whose uploads in progress are
// younger. It returns how many it removed.
func (s *Store) sweepSpool(now time.Time) int {
	if _, ok := s.st.(store.Spooler); ok {
		return 0 // a directory spools in itself (store.NewDir sweeps)
	}
	return store.RemoveStale(s.cfg.TempDir, []string{spoolPattern}, UnfinishedUploadGrace, now)
}

// UnfinishedUploadGrace is the least age of an unfinished multipart
// upload Sweep aborts when it is given a grace (a shared bucket): a debug
// file is written to the bucket after its body arrived, in a write no
// deadline bounds (a 4 GiB file at a few MB/s takes many minutes), so
// the grace of the upload's body is too short for it; a day is not.
const UnfinishedUploadGrace = 24 * time.Hour

func metaKind(base string) symbolize.FetchKind {
	return symbolize.FetchKind(strings.TrimSuffix(base, ".json"))
}
