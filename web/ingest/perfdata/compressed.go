package perfdata

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// perf record -z writes its records through one zstd stream: each
// COMPRESSED (or, since perf 6.15, COMPRESSED2) record holds what the
// stream gave when flushed after a read of the kernel's buffers, the
// frame is never ended, and a record may be cut across two payloads.
// The payloads are therefore decoded in file order as the one stream,
// after the other records have been read, and the records inside are
// read from what came out: a Spool, outside the heap, or the heap.

// A Spool takes the records COMPRESSED records expand to as they are
// decompressed, then gives them back to read. Map ends the writing and
// returns the bytes written, readable until whoever made the Spool
// releases it (after Convert), and, when those bytes map a file, an
// evict like Options.Evict for them.
type Spool interface {
	io.Writer
	Map() (data []byte, evict func(lo, hi int), err error)
}

// heapSpool is the Spool of a reader given none: the heap.
type heapSpool struct{ bytes.Buffer }

func (h *heapSpool) Map() ([]byte, func(lo, hi int), error) { return h.Bytes(), nil, nil }

// payloads reads the COMPRESSED records' payloads back to back, telling
// progress (PhaseInflating) how many of their bytes were read.
type payloads struct {
	chunks      [][]byte
	done, total int64
	reported    int64
	progress    func(phase string, done, total int64)
}

func (p *payloads) Read(b []byte) (int, error) {
	for len(p.chunks) > 0 && len(p.chunks[0]) == 0 {
		p.chunks = p.chunks[1:]
	}
	if len(p.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.chunks[0])
	p.chunks[0] = p.chunks[0][n:]
	p.done += int64(n)
	if p.progress != nil && (p.done-p.reported >= progressBytes || p.done == p.total) {
		p.progress(PhaseInflating, p.done, p.total)
		p.reported = p.done
	}
	return n, nil
}

// compressedPayload is the zstd bytes of a COMPRESSED or COMPRESSED2
// record's body: COMPRESSED2 says how many there are before the padding
// that aligns the record to 8 bytes.
func (f *File) compressedPayload(typ uint32, body []byte) ([]byte, error) {
	if typ == recCompressed {
		return body, nil
	}
	d := dec{b: body, o: f.ByteOrder}
	n := d.u64()
	if d.bad || n > uint64(len(d.b)) {
		return nil, fmt.Errorf("its data size %d does not fit the %d-byte record", n, len(body))
	}
	return d.b[:n], nil
}

// readCompressed decodes the compressed records' payloads as the one zstd
// stream perf writes them as into a Spool (opt.Spool's, or the heap) and
// reads the records inside from it.
func (f *File) readCompressed(chunks [][]byte, opt Options) error {
	if f.Features.Compression != 0 && f.Features.Compression != 1 {
		return fmt.Errorf("perf.data uses compression type %d; this reader knows zstd (1)", f.Features.Compression)
	}
	in := &payloads{chunks: chunks, progress: f.progress}
	for _, c := range chunks {
		in.total += int64(len(c))
	}
	// Bound the decoder's memory by what the output may grow to.
	mem := uint64(1 << 30)
	if opt.MaxDecompressed > 0 {
		mem = min(mem, max(uint64(opt.MaxDecompressed)*2, 8<<20))
	}
	zr, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(mem), zstd.WithDecoderMaxWindow(mem))
	if err != nil {
		return fmt.Errorf("perf.data: starting zstd: %w", err)
	}
	defer zr.Close()
	var sp Spool = &heapSpool{}
	if opt.Spool != nil {
		if sp, err = opt.Spool(); err != nil {
			return fmt.Errorf("perf.data: spooling the decompressed records: %w", err)
		}
	}
	var r io.Reader = zr
	if opt.MaxDecompressed > 0 {
		r = io.LimitReader(zr, opt.MaxDecompressed+1)
	}
	n, err := io.Copy(spoolWriter{sp}, r)
	var we *writeError
	switch {
	case errors.As(err, &we):
		return fmt.Errorf("perf.data: spooling the decompressed records: %w", we.err)
	// perf flushes its one zstd frame per record but never ends it, so the
	// stream stops mid-frame after the last whole block.
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		if n == 0 {
			return fmt.Errorf("perf.data: the zstd-compressed records are damaged: %w", err)
		}
		f.plainCut = true
		f.Warnings = append(f.Warnings, fmt.Sprintf("the zstd-compressed records are damaged after %d bytes of records (%v): the records after are left out", n, err))
	case opt.MaxDecompressed > 0 && n > opt.MaxDecompressed:
		return fmt.Errorf("%w: perf.data's compressed records expand to more than %d bytes", ErrLimit, opt.MaxDecompressed)
	}
	plain, evict, err := sp.Map()
	if err != nil {
		return fmt.Errorf("perf.data: reading the decompressed records back: %w", err)
	}
	f.plain, f.plainEvict = plain, evict
	var nested [][]byte
	if err := f.readRecords(plain, 0, true, &nested); err != nil {
		return fmt.Errorf("in the decompressed records: %w", err)
	}
	if len(nested) > 0 {
		return errors.New("perf.data is corrupt: a compressed record holds another compressed record")
	}
	return nil
}

// spoolWriter marks the errors of a Spool's Write (writeError), which
// io.Copy returns as they are: the disk, not the recording, is at fault.
type spoolWriter struct{ w io.Writer }

func (s spoolWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}

type writeError struct{ err error }

func (w *writeError) Error() string { return w.err.Error() }

// spaceEvictor evicts, in the data section and in the decompressed
// records, the pages below the lowest position a conversion (or one chunk
// of it) will still read, once a window of them is behind it; floor and
// ceil bound what it may give up (a chunk's neighbours' records).
type spaceEvictor struct {
	done, ceil [2]uint64
	evict      [2]func(lo, hi int)
	base       [2]uint64
}

func (f *File) newEvictor(floor, ceil [2]uint64) *spaceEvictor {
	return &spaceEvictor{done: floor, ceil: ceil, evict: [2]func(lo, hi int){f.evict, f.plainEvict}, base: [2]uint64{f.streamBase, 0}}
}

// evicts reports whether f's records are in memory an evict gives back.
func (f *File) evicts() bool { return f.evict != nil || f.plainEvict != nil }

// upTo evicts what lies below low (lowPositions's) in each space.
func (e *spaceEvictor) upTo(low [2]uint64) {
	for s := range 2 {
		if e.evict[s] == nil {
			continue
		}
		if to := min(low[s], e.ceil[s]); to > e.done[s] && to-e.done[s] >= evictWindow {
			e.evict[s](int(e.base[s]+e.done[s]), int(e.base[s]+to))
			e.done[s] = to
		}
	}
}

// spaceOf is the space a position is in (0: data section, 1: the
// decompressed records) and its offset there.
func spaceOf(pos uint64) (int, uint64) {
	if pos&posPlain != 0 {
		return 1, pos &^ posPlain
	}
	return 0, pos
}

// spaceLens are the lengths of the two spaces.
func (f *File) spaceLens() [2]uint64 {
	return [2]uint64{uint64(len(f.stream)), uint64(len(f.plain))}
}
