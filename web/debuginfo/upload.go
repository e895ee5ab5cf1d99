package debuginfo

import (
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
func (c contents) kinds() []symbolize.FileKind {
	var k []symbolize.FileKind
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
// temporary file, never held in memory. A later upload of the same build ID
// and kind replaces the earlier one (better debug info later).
func (s *Store) Put(ctx context.Context, r io.Reader, name, wantBID string, want symbolize.FileKind) ([]Entry, error) {
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
		tmp, err = os.CreateTemp(s.cfg.TempDir, "viewer-debuginfo-upload-*")
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
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "." || name == "/" || name == "" {
		name = c.bid
	}
	now := time.Now().UTC().Truncate(time.Second)
	var out []Entry
	for _, k := range kinds {
		e := Entry{BuildID: c.bid, Kind: string(k), Name: name, Size: n, Uploaded: now,
			Holds: c.holds(), SHA256: sum, Object: obj}
		if old, err := s.entry(ctx, c.bid, k); err == nil && old.SHA256 != sum {
			e.Replaced = old.SHA256
		}
		b, _ := json.Marshal(e)
		if err := s.st.Put(ctx, metaKey(c.bid, k), strings.NewReader(string(b))); err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

func hasKind(ks []symbolize.FileKind, k symbolize.FileKind) bool {
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
