package debuginfo

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"sync"

	"viewer/symbolize"
)

// Section returns section name of bid's debuginfo, else of its executable,
// as the elfutils server does: ErrNotFound when neither has it with
// contents (a .bss-like SHT_NOBITS section has none). A compressed section
// is sent as stored, compressed, as elfutils sends it (elf_rawdata): never
// decompressed, so a small file claiming a 1 GiB section costs its bytes.
func (s *Store) Section(ctx context.Context, bid, name string, federate bool) (*File, error) {
	if err := ValidBuildID(bid); err != nil {
		return nil, err
	}
	var last error = ErrNotFound
	for _, k := range []symbolize.FetchKind{symbolize.KindDebuginfo, symbolize.KindExecutable} {
		f, err := s.Open(ctx, bid, k, federate)
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				last = err
			}
			continue
		}
		sec, err := section(f, name)
		if err == nil {
			return sec, nil
		}
		f.Close()
		if !errors.Is(err, ErrNotFound) {
			last = err
		}
	}
	return nil, last
}

// section opens section name of the ELF file f; closing the result closes f.
func section(f *File, name string) (out *File, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("debuginfo: malformed ELF file: %v", p)
		}
	}()
	ra := &readerAt{rs: f.ReadSeeker}
	ef, err := elf.NewFile(ra)
	if err != nil {
		return nil, fmt.Errorf("debuginfo: %w", err)
	}
	sec := ef.Section(name)
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil, ErrNotFound
	}
	// The section's bytes as stored (FileSize; Size is the uncompressed
	// size of a compressed one), never decompressed.
	size := int64(sec.FileSize)
	if end := int64(sec.Offset) + size; int64(sec.Offset) < 0 || size < 0 || end < size || end > f.Size {
		return nil, fmt.Errorf("debuginfo: malformed ELF file: section %s runs past the file's end", name)
	}
	rs := io.NewSectionReader(ra, int64(sec.Offset), size)
	return &File{ReadSeeker: rs, closer: f, Size: size, ModTime: f.ModTime, Name: f.Name, Origin: f.Origin}, nil
}

// readerAt reads at offsets from a ReadSeeker (a stored object) for
// debug/elf. It is used by one request at a time.
type readerAt struct {
	mu sync.Mutex
	rs io.ReadSeeker
}

func (r *readerAt) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.rs.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.ReadFull(r.rs, p)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}
