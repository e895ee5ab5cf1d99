package debuginfo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"viewer/symbolize"
	"viewer/web/store"
)

// contents is what an ELF file holds, which decides the kinds it serves as.
type contents struct {
	bid                 string
	code, dwarf, symtab bool
}

// kinds are the kinds a file with these contents is stored as: code makes
// an executable, DWARF (or, without code, a symbol table) a debuginfo.
func (c contents) kinds() []symbolize.FetchKind {
	var k []symbolize.FetchKind
	if c.dwarf || (c.symtab && !c.code) {
		k = append(k, symbolize.KindDebuginfo)
	}
	if c.code {
		k = append(k, symbolize.KindExecutable)
	}
	return k
}

func (c contents) holds() []string {
	var h []string
	for _, x := range []struct {
		on   bool
		name string
	}{{c.code, "code"}, {c.dwarf, "dwarf"}, {c.symtab, "symtab"}} {
		if x.on {
			h = append(h, x.name)
		}
	}
	return h
}

// classify reads the build ID and what r, an ELF file, holds.
func classify(r io.ReaderAt) (c contents, err error) {
	defer func() {
		if p := recover(); p != nil { // debug/elf on hostile input
			err = refused("not a valid ELF file (%v)", p)
		}
	}()
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil || string(magic[:]) != elf.ELFMAG {
		return c, refused("not an ELF file: upload executables, shared libraries or their separate .debug files")
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return c, refused("not a valid ELF file: %v", err)
	}
	c.bid = symbolize.ELFBuildID(f)
	if c.bid == "" {
		return c, refused("the file has no GNU build ID note (.note.gnu.build-id): link it with -Wl,--build-id so debuggers can find its debug info")
	}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		switch {
		case s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS:
			c.code = true
		case s.Name == ".debug_info" || s.Name == ".zdebug_info":
			c.dwarf = true
		case s.Type == elf.SHT_SYMTAB:
			c.symtab = true
		}
	}
	return c, nil
}

// Put stores the ELF file read from r, named name (its base name is kept
// for the index and X-DEBUGINFOD-FILE), under its build ID as every kind its
// contents make it. wantBID and want, when set (a PUT to
// /buildid/BUILDID/KIND), must match the file. The body is spooled to a
// temporary file, never held in memory. A build ID and kind that has a file
// already, uploaded or found on this machine, keeps it: the first upload
// wins, since nothing here can tell a better file from a forged one. The
// same bytes again are no error; other bytes are a *ConflictError, unless
// replace is set (an upload carrying the server's token) and the file is an
// uploaded one. A kind that conflicts is skipped when the upload is wanted
// as another kind, or as any kind and another one is free.
func (s *Store) Put(ctx context.Context, r io.Reader, name, wantBID string, want symbolize.FetchKind, replace bool) ([]Entry, error) {
	if wantBID != "" {
		if err := ValidBuildID(wantBID); err != nil {
			return nil, refused("%v", err)
		}
	}
	// On a local directory store the upload is written once, in the
	// store's own file system, and moved into place (store.Spooler).
	spool, _ := s.st.(store.Spooler)
	var tmp *os.File
	var err error
	if spool != nil {
		tmp, err = spool.TempFile()
	} else {
		tmp, err = os.CreateTemp(s.cfg.TempDir, spoolPattern)
	}
	if err != nil {
		return nil, fmt.Errorf("debuginfo: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, s.cfg.MaxFile+1))
	if err != nil {
		return nil, fmt.Errorf("debuginfo: reading the upload: %w", err)
	}
	if n > s.cfg.MaxFile {
		return nil, &RefusedError{TooLarge: true, Reason: fmt.Sprintf(
			"the file is larger than this server's --max-debug-file (%d bytes); ask its operator to raise it", s.cfg.MaxFile)}
	}
	c, err := classify(tmp)
	if err != nil {
		return nil, err
	}
	if wantBID != "" && c.bid != wantBID {
		return nil, refused("the file's build ID is %s, not %s as the URL says: upload it to /buildid/%s/…", c.bid, wantBID, c.bid)
	}
	kinds := c.kinds()
	if len(kinds) == 0 {
		return nil, refused("the file has no code, no DWARF and no symbol table: nothing a debugger could use (was it stripped twice?)")
	}
	if want != "" && !hasKind(kinds, want) {
		if want == symbolize.KindDebuginfo {
			return nil, refused("the file has no DWARF (.debug_info): it is not debuginfo; upload it as executable, or upload its unstripped or .debug file")
		}
		return nil, refused("the file has no code: it is not an executable; upload it as debuginfo")
	}
	sum := hex.EncodeToString(h.Sum(nil))
	obj := prefix + c.bid + "/elf-" + sum[:32]
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "." || name == "/" || name == "" {
		name = c.bid
	}

	// Which kinds are free, the same, or taken by other bytes: decided
	// before the file is written (a refusal writes nothing), and again
	// with the metas written under the lock, so two uploads of one build
	// ID cannot both find it free (a bucket shared by replicas is guarded
	// by its conditional write, putMeta).
	type plan struct {
		out      []Entry
		write    []symbolize.FetchKind
		olds     map[symbolize.FetchKind]*Entry
		conflict *ConflictError
	}
	decide := func() (*plan, error) {
		p := &plan{olds: map[symbolize.FetchKind]*Entry{}}
		for _, k := range kinds {
			old, cf, err := s.holder(ctx, c.bid, k, sum, replace)
			if err != nil {
				return nil, err
			}
			switch {
			case cf != nil:
				if want == k || p.conflict == nil {
					p.conflict = cf
				}
			case old != nil && old.SHA256 == sum:
				p.out = append(p.out, *old) // the same bytes again
			default:
				p.write = append(p.write, k)
				p.olds[k] = old
			}
		}
		if cf := p.conflict; cf != nil && (want == symbolize.FetchKind(cf.Kind) || want == "" && len(p.write) == 0 && len(p.out) == 0) {
			return nil, cf
		}
		return p, nil
	}
	pl, err := decide()
	if err != nil {
		return nil, err
	}
	if len(pl.write) == 0 {
		return pl.out, nil
	}
	if spool != nil {
		committed = true
		if err := spool.Commit(ctx, obj, tmp); err != nil {
			return nil, err
		}
	} else {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		if err := s.st.Put(ctx, obj, tmp); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pl, err = decide(); err != nil || len(pl.write) == 0 {
		s.forget(ctx, c.bid, obj) // taken meanwhile
		if err != nil {
			return nil, err
		}
		return pl.out, nil
	}
	out, write, olds := pl.out, pl.write, pl.olds
	now := time.Now().UTC().Truncate(time.Second)
	var wrote []symbolize.FetchKind
	for _, k := range write {
		e := Entry{BuildID: c.bid, Kind: string(k), Name: name, Size: n, Uploaded: now,
			Holds: c.holds(), SHA256: sum, Object: obj}
		if old := olds[k]; old != nil {
			e.Replaced = old.SHA256
		}
		b, _ := json.Marshal(e)
		err := s.putMeta(ctx, metaKey(c.bid, k), b, olds[k] == nil)
		if errors.Is(err, errTaken) {
			// Another replica stored this kind meanwhile: it was first.
			if want == k || want == "" && len(wrote) == 0 && len(out) == 0 {
				s.forget(ctx, c.bid, obj)
				old, _ := s.entry(ctx, c.bid, k)
				cf := &ConflictError{BuildID: c.bid, Kind: string(k)}
				if old != nil {
					cf.SHA256 = old.SHA256
				}
				return nil, cf
			}
			continue
		}
		if err != nil {
			if len(wrote) == 0 {
				s.forget(ctx, c.bid, obj)
			}
			return out, err
		}
		wrote = append(wrote, k)
		out = append(out, e)
		if old := olds[k]; old != nil && old.Object != obj {
			s.forget(ctx, c.bid, old.Object)
		}
	}
	return out, nil
}

// ConflictError is an upload refused because its build ID and kind has
// another file already (HTTP 409): the first file stays.
type ConflictError struct {
	BuildID, Kind string
	// SHA256 is the digest of the file kept; Local its path when it is
	// found on this machine rather than uploaded; Path the source path
	// for a source file.
	SHA256, Local, Path string
}

func (e *ConflictError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("build ID %s already has the source file %s, with SHA-256 %s; an upload of other bytes does not replace it (the first file of a build ID wins), and none of this archive was stored. "+
			"Upload the same file, leave it out of the archive, or ask the server's operator, whose --auth-token may replace an uploaded file", e.BuildID, e.Path, e.SHA256)
	}
	where := "an uploaded file"
	if e.Local != "" {
		where = "a file on the server's machine (" + e.Local + ")"
	}
	return fmt.Sprintf("build ID %s already has a %s file, %s with SHA-256 %s; an upload of other bytes does not replace it (the first file of a build ID wins). "+
		"Upload that same file, or ask the server's operator, whose --auth-token may replace an uploaded file", e.BuildID, e.Kind, where, e.SHA256)
}

// holder returns the uploaded entry of bid's kind when there is one, and a
// conflict when the kind is held by a file other than sum that this upload
// may not replace: a local file, or an uploaded one without replace.
func (s *Store) holder(ctx context.Context, bid string, k symbolize.FetchKind, sum string, replace bool) (*Entry, *ConflictError, error) {
	if p := s.localPath(bid, k); p != "" {
		local, err := fileDigest(p)
		if err != nil {
			return nil, nil, err
		}
		if local != sum {
			return nil, &ConflictError{BuildID: bid, Kind: string(k), SHA256: local, Local: p}, nil
		}
	}
	old, err := s.entry(ctx, bid, k)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if old.SHA256 != sum && !replace {
		return nil, &ConflictError{BuildID: bid, Kind: string(k), SHA256: old.SHA256}, nil
	}
	return old, nil, nil
}

func fileDigest(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return digestOf(f)
}

// digestOf is the SHA-256 (hex) of what r reads.
func digestOf(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// errTaken: a conditional write found the key written.
var errTaken = errors.New("debuginfo: written meanwhile")

// absentPutter is a store with a conditional write (store.Blob).
type absentPutter interface {
	PutIfAbsent(ctx context.Context, key string, r io.Reader) (bool, error)
}

// putMeta writes a meta object; when fresh, only if it does not exist yet
// on a store that can make the write conditional (errTaken otherwise).
func (s *Store) putMeta(ctx context.Context, key string, b []byte, fresh bool) error {
	if ap, ok := s.st.(absentPutter); ok && fresh {
		won, err := ap.PutIfAbsent(ctx, key, bytes.NewReader(b))
		if err == nil && !won {
			return errTaken
		}
		return err
	}
	return s.st.Put(ctx, key, bytes.NewReader(b))
}

// forget removes bid's object obj unless a meta still names it: what an
// upload wrote and then did not keep, or a replaced file. It runs after the
// request's end too (a client that went away leaves nothing).
func (s *Store) forget(ctx context.Context, bid, obj string) {
	ctx = context.WithoutCancel(ctx)
	for _, k := range []symbolize.FetchKind{symbolize.KindDebuginfo, symbolize.KindExecutable} {
		if e, err := s.entry(ctx, bid, k); err == nil && e.Object == obj {
			return
		}
	}
	s.remove(ctx, obj)
}

// remove deletes key when the store can (store.Deleter).
func (s *Store) remove(ctx context.Context, key string) {
	if d, ok := s.st.(store.Deleter); ok {
		d.Delete(context.WithoutCancel(ctx), key)
	}
}

func hasKind(ks []symbolize.FetchKind, k symbolize.FetchKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// IsRefused reports whether err is an upload refused for its content.
func IsRefused(err error) (*RefusedError, bool) {
	var re *RefusedError
	ok := errors.As(err, &re)
	return re, ok
}
