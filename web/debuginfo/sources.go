package debuginfo

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"viewer/symbolize/buildid"
	"viewer/web/store"
)

// Bounds of one build ID's source index: the files it lists, the length
// of each path (Linux's PATH_MAX: no compiler names a longer one), and the
// index's bytes as stored, which every source request reads whole. An
// archive of empty files with 1 MiB PAX names once made a 1 GB index, a
// 3.66 GB peak and a build ID whose every source request failed.
const (
	maxSourceFiles      = 100000
	maxSourcePath       = 4096
	maxSourceIndexBytes = 32 << 20
)

// sourceIndex maps the absolute source paths of a build ID (as its DWARF
// names them) to stored objects.
type sourceIndex struct {
	Files map[string]sourceFile `json:"files"`
}

type sourceFile struct {
	Object  string `json:"object"`
	Size    int64  `json:"size"`
	Archive string `json:"archive"` // the tarball it came from
	// SHA256 is the file's digest (hex); empty in an index written
	// before it was kept, when the stored object is read to compare.
	SHA256 string `json:"sha256,omitempty"`
}

func sourcesKey(bid string) string { return prefix + bid + "/sources.json" }

// Memory is what a source upload takes its memory from (the server's
// --ingest-memory, ingest.Budget): Take reserves n bytes for what, waiting
// a while for them, and fails when they are not to be had.
type Memory interface {
	Take(ctx context.Context, n int64, what string) (release func(), err error)
}

// What a source upload is charged in Memory, as it learns what it needs:
// sourceBaseMemory at once (tar's special headers, up to 1 MiB each, read
// and parsed; the decompressor's state and buffers), a zstd archive's
// window as its frame header declares it (the decoder keeps that much of
// what it unpacked: a 2 KB archive declaring 512 MiB took 512 MiB), and
// sourceIndexFactor bytes per byte of the build ID's source index, the
// stored one as it is read and each file's entry before it is added (the
// index read twice, its map, the new files' and the JSON written).
const (
	sourceBaseMemory  = 4 << 20
	sourceIndexFactor = 6
	// sourceChargeStep batches the index's charges.
	sourceChargeStep = 1 << 20
)

// sourceCharge is one upload's share of Memory, taken in steps.
type sourceCharge struct {
	mem      Memory
	ctx      context.Context
	held     int64
	releases []func()
}

// grow makes the share at least n bytes.
func (c *sourceCharge) grow(n int64) error {
	if c.mem == nil || n <= c.held {
		return nil
	}
	release, err := c.mem.Take(c.ctx, n-c.held, "source archive")
	if err != nil {
		return err
	}
	c.held = n
	c.releases = append(c.releases, release)
	return nil
}

// collectAbove is the share above which release collects garbage first.
const collectAbove = 64 << 20

// release gives the share back. A large one (a zstd window of hundreds of
// megabytes) is collected first: given back while the window is garbage
// not yet collected, it let the next upload allocate its own window beside
// it, three 512 MiB windows in a heap bounded to two (TestSourceArchiveWindowBomb,
// once in CI). The collection runs only for such archives; an ordinary
// one declares a window of 8 MiB or less.
func (c *sourceCharge) release() {
	if c.held > collectAbove {
		runtime.GC()
	}
	for _, r := range c.releases {
		r()
	}
	c.releases, c.held = nil, 0
}

// zstdWindowMemory is what the zstd decoder keeps for a frame of window
// w: the window and two blocks' room beyond it.
func zstdWindowMemory(w uint64) int64 {
	const block = 128<<10 + 64
	return int64(w) + 2*int64(min(w, block))
}

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
	b, err := store.ReadAll(ctx, s.st, sourcesKey(bid), 2*maxSourceIndexBytes)
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
// A path stored before keeps its file: other bytes for it are a
// *ConflictError, unless replace (a server with a token), as for debug
// files. It returns how many files were stored. An archive refused (over the
// limit, damaged) or not stored (the disk full, the client gone) leaves
// nothing: the files written for it are removed, and those a crash left
// are removed by Sweep. The memory the upload takes is taken from mem
// first (nil: none), as it learns what it needs; mem's errors are
// returned as they are.
func (s *Store) PutSources(ctx context.Context, bid string, r io.Reader, name string, mem Memory, replace bool) (int, error) {
	charge := &sourceCharge{mem: mem, ctx: ctx}
	n, err := s.putSources(ctx, bid, r, name, charge, replace)
	// putSources has returned, so its decompressor is unreachable now.
	charge.release()
	return n, err
}

// putSources is PutSources, its memory charged to charge, which the caller
// releases once the decompressor this holds is no longer reachable.
func (s *Store) putSources(ctx context.Context, bid string, r io.Reader, name string, charge *sourceCharge, replace bool) (n int, err error) {
	if err := ValidBuildID(bid); err != nil {
		return 0, refused("%v", err)
	}
	if _, err := s.entry(ctx, bid, "debuginfo"); err != nil {
		if _, err2 := s.entry(ctx, bid, "executable"); err2 != nil {
			return 0, refused("no debug file is uploaded for build ID %s: upload it first, then its sources", bid)
		}
	}
	// fixed is what the upload holds whatever its index (the base, the
	// zstd window); the index's share grows with indexBytes.
	fixed, indexBytes := int64(sourceBaseMemory), 0
	need := func() int64 { return fixed + sourceIndexFactor*int64(indexBytes) }
	if info, err := s.st.Stat(ctx, sourcesKey(bid)); err == nil {
		// Taken before the stored index is read (which fails past twice
		// the bound).
		indexBytes = int(min(info.Size, 2*maxSourceIndexBytes+1))
	}
	if err := charge.grow(need()); err != nil {
		return 0, err
	}
	ix, err := s.sources(ctx, bid)
	if err != nil {
		return 0, err
	}
	if indexBytes = max(indexBytes, ix.bytes()); need() > charge.held {
		if err := charge.grow(need()); err != nil {
			return 0, err
		}
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
	// body keeps the client's errors (a stall, a cut connection), told
	// apart from the archive's damage, which is refused.
	body := &errorReader{r: io.LimitReader(r, s.cfg.MaxFile+1)}
	br := bufio.NewReader(body)
	var in io.Reader = br
	if head, _ := br.Peek(4); len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return 0, refused("the sources are not a valid gzip file: %v", err)
		}
		in = gz
	} else if len(head) == 4 && string(head) == "\x28\xb5\x2f\xfd" {
		// The decoder allocates the window the first frame declares:
		// that is taken first, and no later frame may declare more.
		window := uint64(zstd.MinWindowSize)
		var h zstd.Header
		if fh, _ := br.Peek(zstd.HeaderMaxSize); h.Decode(fh) == nil && !h.Skippable {
			window = max(window, h.WindowSize)
			if h.SingleSegment {
				window = max(window, h.FrameContentSize)
			}
		}
		if window > zstd.MaxWindowSize {
			return 0, refused("the zstd archive declares a window of %d MiB, more than the %d MiB a zstd archive may have here: compress it without --long above 29", window>>20, zstd.MaxWindowSize>>20)
		}
		fixed += zstdWindowMemory(window)
		if err := charge.grow(need()); err != nil {
			return 0, err
		}
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(window))
		if err != nil {
			return 0, refused("the sources are not a valid zstd file: %v", err)
		}
		defer zr.Close()
		in = zr
	}
	archive := path.Base(strings.ReplaceAll(name, "\\", "/"))
	// The archive as decompressed, headers and names included, counts
	// against --max-debug-file, not only its files' contents.
	unpacked := &countingReader{r: in, limit: s.cfg.MaxFile}
	tr := tar.NewReader(unpacked)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if unpacked.n > s.cfg.MaxFile {
			return 0, unpackedTooLarge(s.cfg.MaxFile)
		}
		if err != nil {
			if body.err != nil {
				return 0, body.err
			}
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
		if len(h.Name) > maxSourcePath {
			return 0, refused("a file in the sources has a name of %d bytes, over the %d bytes a path may have (PATH_MAX): archive the files by the paths their DWARF names", len(h.Name), maxSourcePath)
		}
		if !utf8.ValidString(h.Name) {
			// The index is JSON, which would store U+FFFD for each bad
			// byte: a longer path, and not the one a request names.
			return 0, refused("a file in the sources has a name that is not UTF-8 (%q): archive the files by the paths their DWARF names", h.Name[:min(len(h.Name), 64)])
		}
		p := cleanSource(h.Name)
		if _, ok := ix.Files[p]; !ok {
			if len(ix.Files)+len(files) >= maxSourceFiles {
				return 0, refused("build ID %s would have more than %d source files (a fixed limit no flag changes): upload only the files its DWARF names", bid, maxSourceFiles)
			}
			if indexBytes += indexEntryBytes(p, archive); indexBytes > maxSourceIndexBytes {
				return 0, refused("build ID %s's source index would be over %d bytes (a fixed limit no flag changes; its paths are too many or too long): upload only the files its DWARF names", bid, maxSourceIndexBytes)
			}
			if need() > charge.held {
				if err := charge.grow(need() + sourceChargeStep); err != nil {
					return 0, err
				}
			}
		}
		key := sourceKey(bid, p, up)
		files[p] = sourceFile{Object: key, Size: h.Size, Archive: archive}
		content := &errorReader{r: tr}
		digest := sha256.New()
		if err := s.st.Put(ctx, key, io.TeeReader(content, digest)); err != nil {
			if unpacked.n > s.cfg.MaxFile {
				return 0, unpackedTooLarge(s.cfg.MaxFile)
			}
			if content.err != nil && body.err == nil {
				// A gzip or zstd stream or a tar entry damaged within a
				// file: the store saw a read error.
				return 0, refused("the archive is damaged within %s, after %d files (%v): none of it was stored", p, n, content.err)
			}
			return 0, err
		}
		f := files[p]
		f.SHA256 = hex.EncodeToString(digest.Sum(nil))
		files[p] = f
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
		old, ok := ix.Files[p]
		if !ok || old.Object == f.Object {
			ix.Files[p] = f
			continue
		}
		if old.SHA256 == "" {
			if old.SHA256, err = s.objectDigest(ctx, old.Object); err != nil {
				return 0, err
			}
		}
		switch {
		case old.SHA256 == f.SHA256:
			// The same bytes again: the stored file stays.
			s.remove(ctx, f.Object)
			delete(files, p)
			ix.Files[p] = old
		case !replace:
			return 0, &ConflictError{BuildID: bid, Kind: "source", Path: p, SHA256: old.SHA256}
		default:
			replaced = append(replaced, old.Object)
			ix.Files[p] = f
		}
	}
	b, _ := json.Marshal(ix)
	if err := s.st.Put(ctx, sourcesKey(bid), bytes.NewReader(b)); err != nil {
		return 0, err
	}
	for _, k := range replaced {
		s.remove(ctx, k)
	}
	return n, nil
}

// indexEntryBytes is about what one file adds to the stored index: its
// path and archive name, its object key and the JSON around them.
func indexEntryBytes(p, archive string) int {
	jp, _ := json.Marshal(p) // escapes may make it longer
	ja, _ := json.Marshal(archive)
	return len(jp) + len(ja) + len(prefix) + buildid.MaxLen + len("/src-") + 32 + 48
}

// bytes is about the stored size of the index.
func (ix *sourceIndex) bytes() int {
	n := 0
	for p, f := range ix.Files {
		n += indexEntryBytes(p, f.Archive)
	}
	return n
}

func unpackedTooLarge(max int64) error {
	return &RefusedError{TooLarge: true, Reason: fmt.Sprintf("the sources unpack to more than this server's --max-debug-file (%d bytes), tar headers and names included", max)}
}

// countingReader counts the bytes read through it, and fails once they
// are over limit.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
}

var errUnpackedTooLarge = errors.New("the archive unpacks to more than the limit")

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n > c.limit {
		return 0, errUnpackedTooLarge
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errorReader keeps the first error other than io.EOF its reader gave.
type errorReader struct {
	r   io.Reader
	err error
}

func (e *errorReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
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

// objectDigest is the SHA-256 (hex) of the stored object key.
func (s *Store) objectDigest(ctx context.Context, key string) (string, error) {
	r, err := s.st.Get(ctx, key)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return digestOf(r)
}
