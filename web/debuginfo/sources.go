package debuginfo

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"viewer/web/store"
)

// maxSourceFiles bounds the files one build ID's source index may list.
const maxSourceFiles = 100000

// sourceIndex maps the absolute source paths of a build ID (as its DWARF
// names them) to stored objects.
type sourceIndex struct {
	Files map[string]sourceFile `json:"files"`
}

type sourceFile struct {
	Object  string `json:"object"`
	Size    int64  `json:"size"`
	Archive string `json:"archive"` // the tarball it came from
}

func sourcesKey(bid string) string { return prefix + bid + "/sources.json" }

// sourceKey is where the source file at path of bid is stored by the
// upload up: named by digests, so no path from a tarball or a URL ever
// becomes part of a key, and an upload never writes over a file another
// one stored (a refused upload then leaves the files before it as they
// were).
func sourceKey(bid, p, up string) string {
	sum := sha256.Sum256([]byte(p))
	return prefix + bid + "/src-" + hex.EncodeToString(sum[:16]) + "-" + up
}

// cleanSource turns a tar entry name or a requested path into the absolute
// path the index is keyed by ("a/../b.c" is "/b.c").
func cleanSource(p string) string { return path.Clean("/" + p) }

func (s *Store) sources(ctx context.Context, bid string) (*sourceIndex, error) {
	b, err := store.ReadAll(ctx, s.st, sourcesKey(bid), 64<<20)
	if errors.Is(err, store.ErrNotFound) {
		return &sourceIndex{Files: map[string]sourceFile{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var ix sourceIndex
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("debuginfo: %s: %w", sourcesKey(bid), err)
	}
	if ix.Files == nil {
		ix.Files = map[string]sourceFile{}
	}
	return &ix, nil
}

// PutSources stores the source files of build ID bid from a tar archive
// (plain, gzip or zstd) read from r: each regular file at its absolute path
// with the archive's leading "/" optional, as `tar -C / -cf src.tar
// home/me/app/main.c` makes it. The build ID must have an uploaded file.
// It returns how many files were stored. An archive refused (over the
// limit, damaged) or not stored (the disk full, the client gone) leaves
// nothing: the files written for it are removed, and those a crash left
// are removed by Sweep.
func (s *Store) PutSources(ctx context.Context, bid string, r io.Reader, name string) (n int, err error) {
	if err := ValidBuildID(bid); err != nil {
		return 0, refused("%v", err)
	}
	if _, err := s.entry(ctx, bid, "debuginfo"); err != nil {
		if _, err2 := s.entry(ctx, bid, "executable"); err2 != nil {
			return 0, refused("no debug file is uploaded for build ID %s: upload it first, then its sources", bid)
		}
	}
	ix, err := s.sources(ctx, bid)
	if err != nil {
		return 0, err
	}
	var nonce [8]byte
	rand.Read(nonce[:])
	up := hex.EncodeToString(nonce[:])
	files := map[string]sourceFile{}
	defer func() {
		if err != nil {
			for _, f := range files {
				s.remove(ctx, f.Object)
			}
		}
	}()
	br := bufio.NewReader(io.LimitReader(r, s.cfg.MaxFile+1))
	var in io.Reader = br
	if head, _ := br.Peek(4); len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return 0, refused("the sources are not a valid gzip file: %v", err)
		}
		in = gz
	} else if len(head) == 4 && string(head) == "\x28\xb5\x2f\xfd" {
		zr, err := zstd.NewReader(br)
		if err != nil {
			return 0, refused("the sources are not a valid zstd file: %v", err)
		}
		defer zr.Close()
		in = zr
	}
	archive := path.Base(strings.ReplaceAll(name, "\\", "/"))
	tr := tar.NewReader(in)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if n == 0 {
				return 0, refused("the sources are not a tar archive (%v): make one with tar -C / -czf src.tar.gz PATHS", err)
			}
			return 0, refused("the tar archive is damaged after %d files (%v): none of it was stored", n, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		total += h.Size
		if total > s.cfg.MaxFile {
			return 0, &RefusedError{TooLarge: true, Reason: fmt.Sprintf("the sources are larger than this server's --max-debug-file (%d bytes): none of them was stored", s.cfg.MaxFile)}
		}
		p := cleanSource(h.Name)
		if _, ok := ix.Files[p]; !ok && len(ix.Files)+len(files) >= maxSourceFiles {
			return 0, refused("build ID %s would have more than %d source files", bid, maxSourceFiles)
		}
		key := sourceKey(bid, p, up)
		files[p] = sourceFile{Object: key, Size: h.Size, Archive: archive}
		if err := s.st.Put(ctx, key, tr); err != nil {
			return 0, err
		}
		n++
	}
	if n == 0 {
		return 0, refused("the tar archive has no regular files")
	}
	// The index is read again and written under the lock, so uploads of
	// one build ID's sources at once each keep their files.
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix, err = s.sources(ctx, bid); err != nil {
		return 0, err
	}
	var replaced []string
	for p, f := range files {
		if old, ok := ix.Files[p]; ok && old.Object != f.Object {
			replaced = append(replaced, old.Object)
		}
		ix.Files[p] = f
	}
	b, _ := json.Marshal(ix)
	if err := s.st.Put(ctx, sourcesKey(bid), strings.NewReader(string(b))); err != nil {
		return 0, err
	}
	for _, k := range replaced {
		s.remove(ctx, k)
	}
	return n, nil
}

// openSource opens an uploaded source file of bid.
func (s *Store) openSource(ctx context.Context, bid, p string) (*File, error) {
	ix, err := s.sources(ctx, bid)
	if err != nil {
		return nil, err
	}
	sf, ok := ix.Files[cleanSource(p)]
	if !ok {
		return nil, ErrNotFound
	}
	f, err := s.openObject(ctx, sf.Object)
	if err != nil {
		return nil, err
	}
	f.Name, f.Archive = cleanSource(p), sf.Archive
	return f, nil
}

// SourceCount is how many source files bid has uploaded.
func (s *Store) SourceCount(ctx context.Context, bid string) int {
	ix, err := s.sources(ctx, bid)
	if err != nil {
		return 0
	}
	return len(ix.Files)
}
