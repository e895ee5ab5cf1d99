// Package localfile opens the files the server reads on a profile's say-so
// (a mapping's binary, a source file, the debug files found for them). An
// uploaded profile can name any path, so each open refuses what is not a
// regular file (a FIFO would block open(2) forever, a device could do
// anything), anything under /proc, /sys or /dev once symlinks and ".." are
// resolved, and, for a path the profile itself names, a symbolic link as
// the last component. Opens and reads run under a deadline and a bound on
// how many are in flight (Reader), so a hung file system holds a few
// threads, not one per request, and frees the worker or request at the
// deadline.
package localfile

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Trust says who chose a path, and so how far it is followed.
type Trust int

const (
	// Named is a path an uploaded profile names: its directories' symlinks
	// are resolved, but a symlink as the last component is refused
	// (O_NOFOLLOW), so a profile cannot point a harmless name at a secret.
	Named Trust = iota
	// Configured is a path under a directory the operator gave (--debug-dir,
	// a build-ID cache, the debuginfod cache), whose trees are made of
	// symlinks: they are followed, and the target is checked.
	Configured
)

// DeniedRoots are never read, whatever the path's spelling: they hold the
// process's environment and memory, kernel state and devices.
var DeniedRoots = []string{"/proc", "/sys", "/dev"}

// OpenTimeout bounds an open when the caller's context has no deadline.
const OpenTimeout = 10 * time.Second

// inFlight bounds the opens under way: an open stuck in the kernel (a hung
// network mount) holds an OS thread until it returns, and the deadline
// frees the caller but not that thread.
var inFlight = make(chan struct{}, 16)

// Error says why a path was not opened.
type Error struct {
	Path   string
	Reason string
	Err    error // the underlying error, when there is one
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// ErrRefused is wrapped by the errors for paths refused by policy (not a
// regular file, a denied root, a final symlink), as opposed to missing.
var ErrRefused = errors.New("refused")

func refused(path, reason string) error {
	return &Error{Path: path, Reason: reason, Err: ErrRefused}
}

// Resolve returns the absolute path with "..", and the symlinks trust lets
// be followed, resolved, or an error when it is under a denied root. The
// file itself need not exist for Named (only its directory is resolved).
func Resolve(path string, trust Trust) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var real string
	if trust == Configured {
		real, err = filepath.EvalSymlinks(abs)
	} else {
		var dir string
		dir, err = filepath.EvalSymlinks(filepath.Dir(abs))
		real = filepath.Join(dir, filepath.Base(abs))
	}
	if err != nil {
		return "", err
	}
	if root := deniedRoot(abs); root != "" {
		return "", refused(path, "is under "+root+", which is never read")
	}
	if root := deniedRoot(real); root != "" {
		return "", refused(path, "resolves to "+real+", under "+root+", which is never read")
	}
	return real, nil
}

func deniedRoot(p string) string {
	for _, r := range DeniedRoots {
		if Under(p, r) {
			return r
		}
	}
	return ""
}

// Under reports whether the clean absolute path p is root or inside it.
func Under(p, root string) bool {
	root = filepath.Clean(root)
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// Open opens path for reading if it is a regular file outside the denied
// roots, as trust allows. It never blocks on a FIFO: the open is
// O_NONBLOCK|O_NOFOLLOW and the file is fstat-ed before anything reads it.
// It gives up when ctx ends (or after OpenTimeout without a deadline).
func Open(ctx context.Context, path string, trust Trust) (*os.File, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, OpenTimeout)
		defer cancel()
	}
	select {
	case inFlight <- struct{}{}:
	case <-ctx.Done():
		return nil, &Error{Path: path, Reason: "not opened: too many opens in flight until the deadline", Err: ctx.Err()}
	}
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	abandoned := make(chan struct{})
	go func() {
		defer func() { <-inFlight }()
		f, err := open(path, trust)
		select {
		case done <- result{f, err}:
		case <-abandoned:
			if f != nil {
				f.Close()
			}
		}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-ctx.Done():
		close(abandoned)
		select { // it may have finished meanwhile
		case r := <-done:
			return r.f, r.err
		default:
		}
		return nil, &Error{Path: path, Reason: "not opened before the deadline", Err: ctx.Err()}
	}
}

func open(path string, trust Trust) (*os.File, error) {
	real, err := Resolve(path, trust)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, refused(path, "is a symbolic link, which is not followed for a path a profile names")
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, refused(path, "is not a regular file ("+kind(st.Mode())+")")
	}
	return f, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}

// Stat is Open's checks without keeping the file: the size of a regular
// file path names.
func Stat(ctx context.Context, path string, trust Trust) (fs.FileInfo, error) {
	f, err := Open(ctx, path, trust)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// ReadFile reads the file Open opens, at most max bytes (an error beyond),
// checking ctx between chunks.
func ReadFile(ctx context.Context, path string, trust Trust, max int64) ([]byte, error) {
	f, err := Open(ctx, path, trust)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := NewReader(path, f, 0, nil)
	var out []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		if err := ctx.Err(); err != nil {
			return nil, &Error{Path: path, Reason: "not read before the deadline", Err: err}
		}
		n, err := r.ReadAt(buf, off)
		off += int64(n)
		out = append(out, buf[:n]...)
		if int64(len(out)) > max {
			return nil, &Error{Path: path, Reason: fmt.Sprintf("is larger than the %d-byte limit", max)}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ELF is an ELF object read from a file Open opened, which it owns. Every
// read of it, debug/elf's included, goes through R and its deadline.
type ELF struct {
	*elf.File
	OS *os.File
	R  *Reader
}

// Close closes the object and its file (elf.NewFile's Close leaves the
// file open).
func (f *ELF) Close() error {
	f.File.Close()
	return f.OS.Close()
}

// ErrNotELF says a file does not start with the ELF magic. Its message
// quotes none of the file's bytes: the file may be a secret a profile named.
var ErrNotELF = errors.New("not an ELF object (no ELF magic number at its start)")

// CheckMagic reports ErrNotELF unless r starts with the ELF magic number,
// or a Reader's error when the read timed out.
func CheckMagic(r io.ReaderAt) error {
	var b [4]byte
	n, err := r.ReadAt(b[:], 0)
	if errors.Is(err, ErrReadTimeout) || errors.Is(err, ErrTooManyStranded) {
		return err // names the file and the deadline
	}
	if n < 4 || string(b[:]) != elf.ELFMAG {
		return ErrNotELF
	}
	return nil
}

// OpenELF opens path as Open does and reads its ELF headers. An error
// never quotes the file's content, and a panic of debug/elf on a damaged
// file is an error.
func OpenELF(ctx context.Context, path string, trust Trust) (ef *ELF, err error) {
	f, err := Open(ctx, path, trust)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			ef, err = nil, fmt.Errorf("%s: damaged ELF file: %v", path, r)
		}
		if err != nil {
			f.Close()
		}
	}()
	r := NewReader(path, f, 0, nil)
	if err := CheckMagic(r); err != nil {
		if errors.Is(err, ErrNotELF) {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	e, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("%s: not an ELF object: %w", path, err)
	}
	return &ELF{File: e, OS: f, R: r}, nil
}
