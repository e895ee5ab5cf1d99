package elfsym

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
)

// lazySection is a DWARF section whose bytes become available progressively:
// a goroutine reads (and for a compressed section inflates) it up to the
// furthest offset anyone has asked for, then stops until asked for more. So
// a lookup near the start of a large .debug_info reads only that much, and
// in a batch, decoding early units overlaps with inflating later ones. The
// buffer is allocated at its final size up front, so slices of ready bytes
// stay valid.
type lazySection struct {
	name   string
	data   []byte
	filled atomic.Int64

	mu      sync.Mutex
	cond    *sync.Cond
	want    int64 // furthest byte asked for
	running bool  // a goroutine is reading
	err     error
	src     io.Reader
	done    func()
}

// ready returns the section's first n bytes, waiting for them to be read.
func (s *lazySection) ready(n int64) ([]byte, error) {
	if s == nil {
		return nil, errors.New("missing section")
	}
	if n > int64(len(s.data)) {
		return nil, fmt.Errorf("%s: offset %#x beyond the section's %#x bytes", s.name, n, len(s.data))
	}
	if s.filled.Load() >= n {
		return s.data[:n], nil
	}
	s.mu.Lock()
	s.askLocked(n)
	for s.filled.Load() < n && s.err == nil {
		s.cond.Wait()
	}
	err := s.err
	s.mu.Unlock()
	if s.filled.Load() >= n {
		return s.data[:n], nil
	}
	return nil, err
}

// all returns the whole section.
func (s *lazySection) all() ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	return s.ready(int64(len(s.data)))
}

// readAhead starts reading the whole section in the background, for a batch
// that will need most of it.
func (s *lazySection) readAhead() {
	if s == nil || s.filled.Load() >= int64(len(s.data)) {
		return
	}
	s.mu.Lock()
	s.askLocked(int64(len(s.data)))
	s.mu.Unlock()
}

func (s *lazySection) askLocked(n int64) {
	if n > s.want {
		s.want = n
	}
	if !s.running && s.src != nil && s.err == nil {
		s.running = true
		go s.read()
	}
}

func (s *lazySection) read() {
	const chunk = 128 << 10
	for {
		s.mu.Lock()
		n := s.filled.Load()
		if n >= s.want || s.err != nil {
			s.running = false
			if n >= int64(len(s.data)) {
				s.finishLocked()
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		k, err := s.src.Read(s.data[n:min(n+chunk, int64(len(s.data)))])
		n += int64(k)
		s.mu.Lock()
		s.filled.Store(n)
		if err != nil && n < int64(len(s.data)) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			s.err = fmt.Errorf("%s: reading: %w", s.name, err)
			s.finishLocked()
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

func (s *lazySection) finishLocked() {
	s.src = nil
	if s.done != nil {
		s.done()
		s.done = nil
	}
}

// openSection prepares a section for lazy reading: its bytes are read from
// the file (and inflated, for SHF_COMPRESSED zlib or zstd and .zdebug
// sections) in the background as far as lookups need them, so a lookup near
// the start of a large section reads only that much.
func openSection(f *File, s *elf.Section, old bool) (*lazySection, error) {
	if s.FileSize > 4<<30 {
		return nil, fmt.Errorf("%s: section of %d bytes is too large", s.Name, s.FileSize)
	}
	if err := f.checkSection(s); err != nil {
		return nil, err
	}
	ls := &lazySection{name: s.Name}
	ls.cond = sync.NewCond(&ls.mu)
	head := make([]byte, min(s.FileSize, 24))
	if _, err := f.r.ReadAt(head, int64(s.Offset)); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	body := func(skip int) io.Reader {
		return bufio.NewReaderSize(io.NewSectionReader(f.r, int64(s.Offset)+int64(skip), int64(s.FileSize)-int64(skip)), 128<<10)
	}
	var typ elf.CompressionType
	var size uint64
	var hdr int
	switch {
	case old && len(head) >= 12 && string(head[:4]) == "ZLIB":
		typ, size, hdr = elf.COMPRESS_ZLIB, binary.BigEndian.Uint64(head[4:12]), 12
	case old || s.Flags&elf.SHF_COMPRESSED == 0:
		ls.src = io.NewSectionReader(f.r, int64(s.Offset), int64(s.FileSize))
		ls.data = make([]byte, s.FileSize)
		return ls, nil
	case f.elf.Class == elf.ELFCLASS64:
		if len(head) < 24 {
			return nil, fmt.Errorf("%s: truncated compression header", s.Name)
		}
		typ, size, hdr = elf.CompressionType(f.elf.ByteOrder.Uint32(head)), f.elf.ByteOrder.Uint64(head[8:]), 24
	default:
		if len(head) < 12 {
			return nil, fmt.Errorf("%s: truncated compression header", s.Name)
		}
		typ, size, hdr = elf.CompressionType(f.elf.ByteOrder.Uint32(head)), uint64(f.elf.ByteOrder.Uint32(head[4:])), 12
	}
	// DWARF compresses 3 to 10 times; a claim far beyond that is corrupt or
	// hostile, and the buffer is allocated up front.
	if size > 4<<30 || size > 200*s.FileSize+1<<20 {
		return nil, fmt.Errorf("%s: claims %d bytes uncompressed from %d", s.Name, size, s.FileSize)
	}
	switch typ {
	case elf.COMPRESS_ZLIB:
		// The raw deflate stream after the 2-byte zlib header: the Adler-32
		// check costs a tenth of the time and the decoder checks bounds anyway.
		zh := make([]byte, 2)
		if _, err := f.r.ReadAt(zh, int64(s.Offset)+int64(hdr)); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		if zh[0]&0x0f != 8 || (uint16(zh[0])<<8|uint16(zh[1]))%31 != 0 || zh[1]&0x20 != 0 {
			return nil, fmt.Errorf("%s: not a zlib stream", s.Name)
		}
		fr := flate.NewReader(body(hdr + 2))
		ls.src, ls.done = fr, func() { fr.Close() }
	case elf.COMPRESS_ZSTD:
		dec, err := zstd.NewReader(body(hdr), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(size+1<<20))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		ls.src, ls.done = dec, dec.Close
	default:
		return nil, fmt.Errorf("%s: unknown compression type %d", s.Name, typ)
	}
	ls.data = make([]byte, size)
	return ls, nil
}
