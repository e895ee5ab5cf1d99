// Package debuginfo keeps debug files and executables by ELF build ID in the
// profile store, so viewer can serve them over the debuginfod protocol (to
// gdb, perf, debuginfod-find and its own symbolizer) and any replica sharing
// the store serves what any replica received. A build ID not stored is
// looked for in the operator's local debug directories when asked, then
// fetched from the upstream debuginfod servers (federation).
package debuginfo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"viewer/symbolize"
	"viewer/symbolize/buildid"
	"viewer/web/store"
)

// DefaultMaxFile bounds an uploaded file when Config.MaxFile is zero.
const DefaultMaxFile = 4 << 30

// prefix is where debug files live in the store, beside the profiles (whose
// keys are hex digests and never "debuginfo").
const prefix = "debuginfo/"

// Config configures a Store.
type Config struct {
	// Store holds the files (the profile store).
	Store store.Store
	// MaxFile bounds an uploaded file (--max-debug-file); 0: DefaultMaxFile.
	MaxFile int64
	// Upstream fetches build IDs that are not stored (federation); nil: none.
	Upstream symbolize.Fetcher
	// LocalDirs are build-ID trees served too (--serve-local-debug): each
	// DIR/.build-id/ab/cdef….debug or DIR/ab/cdef… layout, perf's
	// DIR/.build-id/ab/cdef…/{debug,elf}, or DIR/BUILDID/{debuginfo,executable}.
	LocalDirs []string
	// TempDir holds uploads while they are checked, and copies of stored
	// files the symbolizer opens when the store is not a local directory;
	// "" means os.TempDir().
	TempDir string
}

// Store is the set of debug files by build ID.
type Store struct {
	cfg Config
	st  store.Store
	// mu makes deciding whether a build ID's kind is free and taking it
	// one step (Put), and a source index's read and write (PutSources).
	mu sync.Mutex
}

// New returns a Store for cfg.
func New(cfg Config) *Store {
	if cfg.MaxFile <= 0 {
		cfg.MaxFile = DefaultMaxFile
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	return &Store{cfg: cfg, st: cfg.Store}
}

// MaxFile is the largest file an upload may be.
func (s *Store) MaxFile() int64 { return s.cfg.MaxFile }

// Entry is one stored file of one kind: what the index page lists and the
// meta object beside the file says.
type Entry struct {
	BuildID string `json:"build_id"`
	// Kind is "debuginfo" or "executable".
	Kind string `json:"kind"`
	// Name is the uploaded file's base name.
	Name     string    `json:"name"`
	Size     int64     `json:"size"`
	Uploaded time.Time `json:"uploaded"`
	// Holds is what the file holds: "code", "dwarf", "symtab".
	Holds []string `json:"holds"`
	// SHA256 of the file's bytes; Object is its store key.
	SHA256 string `json:"sha256"`
	Object string `json:"object"`
	// Replaced is the SHA256 of the file this upload replaced, if any.
	Replaced string `json:"replaced,omitempty"`
}

// Errors the Store returns; the HTTP side maps them to statuses.
var (
	// ErrNotFound: no file of that kind for the build ID here or upstream.
	ErrNotFound = errors.New("not found")
)

// RefusedError is an upload that was not stored, and why.
type RefusedError struct {
	// TooLarge is set when the file is over the limit (HTTP 413).
	TooLarge bool
	Reason   string
}

func (e *RefusedError) Error() string { return e.Reason }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// ValidBuildID reports whether id is a build ID as the protocol writes it:
// lowercase hex of even length, at most buildid.MaxLen digits
// (buildid.Normalize, the one check, and lower case).
func ValidBuildID(id string) error {
	n, err := buildid.Normalize(id)
	if err != nil {
		var ie *buildid.InvalidError
		if errors.As(err, &ie) {
			return fmt.Errorf("build ID %q is not valid: %s", id, ie.Reason)
		}
		return err
	}
	if n != id {
		return fmt.Errorf("build ID %q has uppercase digits: debuginfod build IDs are lowercase hex", id)
	}
	return nil
}

func metaKey(bid string, kind symbolize.FetchKind) string {
	return prefix + bid + "/" + string(kind) + ".json"
}

// entry reads the meta of bid's stored file of kind.
func (s *Store) entry(ctx context.Context, bid string, kind symbolize.FetchKind) (*Entry, error) {
	b, err := store.ReadAll(ctx, s.st, metaKey(bid, kind), 1<<20)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("debuginfo: %s: %w", metaKey(bid, kind), err)
	}
	return &e, nil
}

// Entries lists the stored files, newest first, those whose build ID or
// name contain q (all when q is empty), at most limit of them (0: all).
func (s *Store) Entries(ctx context.Context, q string, limit int) ([]Entry, error) {
	l, ok := s.st.(store.Lister)
	if !ok {
		return nil, errors.New("debuginfo: this store cannot list its keys")
	}
	keys, err := l.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	q = strings.ToLower(strings.TrimSpace(q))
	var out []Entry
	for _, k := range keys {
		base := k[strings.LastIndexByte(k, '/')+1:]
		if base != "debuginfo.json" && base != "executable.json" {
			continue
		}
		b, err := store.ReadAll(ctx, s.st, k, 1<<20)
		if err != nil {
			continue // removed meanwhile, or unreadable: not listed
		}
		var e Entry
		if json.Unmarshal(b, &e) != nil {
			continue
		}
		if q != "" && !strings.Contains(e.BuildID, q) && !strings.Contains(strings.ToLower(e.Name), q) {
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Uploaded.Equal(out[j].Uploaded) {
			return out[i].Uploaded.After(out[j].Uploaded)
		}
		return out[i].BuildID+out[i].Kind < out[j].BuildID+out[j].Kind
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// File is an open file to serve.
type File struct {
	io.ReadSeeker
	closer  io.Closer
	Size    int64
	ModTime time.Time
	// Name is sent as X-DEBUGINFOD-FILE: the file's name on this server
	// (the uploaded name, the local path, or the cached copy's path).
	Name string
	// Archive is sent as X-DEBUGINFOD-ARCHIVE when the file came out of
	// an archive (an uploaded source tarball).
	Archive string
	// Origin says where it came from: "upload", "local" or "upstream".
	Origin string
}

// Close releases the file.
func (f *File) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// openObject opens a stored object as a File.
func (s *Store) openObject(ctx context.Context, key string) (*File, error) {
	info, err := s.st.Stat(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	rc, err := s.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	rs, ok := rc.(io.ReadSeeker)
	if !ok {
		rc.Close()
		return nil, fmt.Errorf("debuginfo: the store's reader for %s cannot seek", key)
	}
	return &File{ReadSeeker: rs, closer: rc, Size: info.Size, ModTime: info.ModTime, Origin: "upload"}, nil
}

// openPath opens a local file as a File.
func openPath(path, origin string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("debuginfo: %s is not a regular file", path)
	}
	return &File{ReadSeeker: f, closer: f, Size: fi.Size(), ModTime: fi.ModTime(), Name: path, Origin: origin}, nil
}

// Open returns bid's file of kind (debuginfo, executable or source/PATH):
// one in the local debug directories, else an uploaded one (a file found
// on this machine always wins over an upload, which anyone may have
// sent), else, when federate is set, one fetched from upstream. It returns
// ErrNotFound when none has it.
func (s *Store) Open(ctx context.Context, bid string, kind symbolize.FetchKind, federate bool) (*File, error) {
	if err := ValidBuildID(bid); err != nil {
		return nil, err
	}
	if kind == symbolize.KindDebuginfo || kind == symbolize.KindExecutable {
		if p := s.localPath(bid, kind); p != "" {
			return openPath(p, "local")
		}
	}
	f, err := s.openStored(ctx, bid, kind)
	if !errors.Is(err, ErrNotFound) {
		return f, err
	}
	if !federate || s.cfg.Upstream == nil {
		return nil, ErrNotFound
	}
	p, err := s.cfg.Upstream.Fetch(ctx, bid, kind, nil)
	if err != nil {
		if errors.Is(err, symbolize.ErrFetchNotFound) || errors.Is(err, symbolize.ErrNoServers) {
			return nil, ErrNotFound
		}
		return nil, &UpstreamError{Err: err}
	}
	return openPath(p, "upstream")
}

// UpstreamError is a federated fetch that failed for a reason other than
// "not found" (servers down, timeouts): the client may retry later.
type UpstreamError struct{ Err error }

func (e *UpstreamError) Error() string { return "upstream debuginfod: " + e.Err.Error() }
func (e *UpstreamError) Unwrap() error { return e.Err }

func (s *Store) openStored(ctx context.Context, bid string, kind symbolize.FetchKind) (*File, error) {
	if p, ok := sourceOf(kind); ok {
		return s.openSource(ctx, bid, p)
	}
	e, err := s.entry(ctx, bid, kind)
	if err != nil {
		return nil, err
	}
	f, err := s.openObject(ctx, e.Object)
	if err != nil {
		return nil, err
	}
	f.Name, f.ModTime = "/"+e.Name, e.Uploaded
	return f, nil
}

// sourceOf returns PATH of a source/PATH kind.
func sourceOf(kind symbolize.FetchKind) (string, bool) {
	p, ok := strings.CutPrefix(string(kind), "source")
	return p, ok
}

// LocalPath returns a path on this machine of bid's uploaded file of kind
// (debuginfo or executable), for viewer's own symbolizer: the store's own
// file when the store is a local directory, else a copy under TempDir made
// once per uploaded version.
func (s *Store) LocalPath(ctx context.Context, bid string, kind symbolize.FetchKind) (string, error) {
	if err := ValidBuildID(bid); err != nil {
		return "", err
	}
	e, err := s.entry(ctx, bid, kind)
	if err != nil {
		return "", err
	}
	if d, ok := s.st.(interface{ Root() string }); ok {
		return filepath.Join(d.Root(), filepath.FromSlash(e.Object)), nil
	}
	dst := filepath.Join(s.cfg.TempDir, "viewer-debuginfo", e.SHA256)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	rc, err := s.st.Get(ctx, e.Object)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(tmp, rc); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return dst, os.Rename(tmp.Name(), dst)
}

// UploadedFiles returns local paths of bid's uploaded debuginfo and
// executable, for viewer's own symbolizer (symbolize.Uploaded), so a
// private binary's profile gets names once its debug file is uploaded (a
// Retry finds a file uploaded after the first run). It notes the profile
// being symbolized (profile; "" for none) as a user of the files, for the
// index page.
func (s *Store) UploadedFiles(ctx context.Context, bid, profile string) []string {
	var out []string
	for _, k := range []symbolize.FetchKind{symbolize.KindDebuginfo, symbolize.KindExecutable} {
		if p, err := s.LocalPath(ctx, bid, k); err == nil {
			out = append(out, p)
		}
	}
	if len(out) > 0 {
		s.noteUse(ctx, bid, profile)
	}
	return out
}
