package elfsym

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// dwarfSections are the sections a symbolizer needs. Location lists, frame
// info and type units are left out: they are large and names and lines do not
// need them.
var dwarfSections = []string{"abbrev", "info", "line", "str", "ranges", "addr", "line_str", "str_offsets", "rnglists"}

// loadDWARF reads and decompresses (zlib or zstd, SHF_COMPRESSED or the old
// .zdebug form) the DWARF sections in parallel and builds a dwarf.Data.
func loadDWARF(f *File) (*dwarf.Data, map[string][]byte, error) {
	data := make([][]byte, len(dwarfSections))
	errs := make([]error, len(dwarfSections))
	var wg sync.WaitGroup
	for i, name := range dwarfSections {
		s := f.elf.Section(".debug_" + name)
		old := false
		if s == nil {
			s = f.elf.Section(".zdebug_" + name)
			old = s != nil
		}
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer recoverInto(&errs[i], f.path)
			data[i], errs[i] = sectionData(f, s, old)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: section %s: %w", f.path, s.Name, errs[i])
			}
		}()
	}
	wg.Wait()
	var total int64
	for i, err := range errs {
		if err != nil {
			return nil, nil, err
		}
		total += int64(len(data[i]))
	}
	f.size.Add(total)
	sec := func(name string) []byte {
		for i, n := range dwarfSections {
			if n == name {
				return data[i]
			}
		}
		return nil
	}
	if sec("info") == nil {
		return nil, nil, errNoDWARF
	}
	d, err := dwarf.New(sec("abbrev"), nil, nil, sec("info"), sec("line"), nil, sec("ranges"), sec("str"))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.path, err)
	}
	for _, n := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := sec(n); b != nil {
			if err := d.AddSection(".debug_"+n, b); err != nil {
				return nil, nil, fmt.Errorf("%s: .debug_%s: %w", f.path, n, err)
			}
		}
	}
	raw := map[string][]byte{"line": sec("line"), "line_str": sec("line_str"), "str": sec("str")}
	return d, raw, nil
}

// sectionData returns a section's bytes, decompressed. debug/elf can do this
// too, but klauspost's decoders are about twice as fast and this is the
// largest part of opening a big object.
func sectionData(f *File, s *elf.Section, old bool) ([]byte, error) {
	ef := f.elf
	if s.FileSize > 4<<30 {
		return nil, fmt.Errorf("section of %d bytes is too large", s.FileSize)
	}
	if err := f.checkSection(s); err != nil {
		return nil, err
	}
	raw := make([]byte, s.FileSize)
	if _, err := f.r.ReadAt(raw, int64(s.Offset)); err != nil && err != io.EOF {
		return nil, err
	}
	if old {
		// "ZLIB" + 8-byte big-endian size + zlib stream.
		if len(raw) < 12 || string(raw[:4]) != "ZLIB" {
			return raw, nil
		}
		size := binary.BigEndian.Uint64(raw[4:12])
		if size > 200*s.FileSize+1<<20 {
			return nil, fmt.Errorf("claims %d bytes uncompressed from %d", size, s.FileSize)
		}
		return inflate(raw[12:], size)
	}
	if s.Flags&elf.SHF_COMPRESSED == 0 {
		return raw, nil
	}
	var typ uint32
	var size uint64
	var hdr int
	switch ef.Class {
	case elf.ELFCLASS64:
		if len(raw) < 24 {
			return nil, fmt.Errorf("truncated compression header")
		}
		typ = ef.ByteOrder.Uint32(raw)
		size = ef.ByteOrder.Uint64(raw[8:])
		hdr = 24
	default:
		if len(raw) < 12 {
			return nil, fmt.Errorf("truncated compression header")
		}
		typ = ef.ByteOrder.Uint32(raw)
		size = uint64(ef.ByteOrder.Uint32(raw[4:]))
		hdr = 12
	}
	// As in openSection: DWARF compresses 3 to 10 times, and the buffer is
	// allocated at the claimed size up front.
	if size > 4<<30 || size > 200*s.FileSize+1<<20 {
		return nil, fmt.Errorf("claims %d bytes uncompressed from %d", size, s.FileSize)
	}
	switch elf.CompressionType(typ) {
	case elf.COMPRESS_ZLIB:
		return inflate(raw[hdr:], size)
	case elf.COMPRESS_ZSTD:
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(size+1<<20))
		if err != nil {
			return nil, err
		}
		defer dec.Close()
		return dec.DecodeAll(raw[hdr:], make([]byte, 0, size))
	default:
		return nil, fmt.Errorf("unknown compression type %d", typ)
	}
}

func inflate(b []byte, size uint64) ([]byte, error) {
	if size > 4<<30 {
		return nil, fmt.Errorf("claims %d bytes uncompressed", size)
	}
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	return out, nil
}
