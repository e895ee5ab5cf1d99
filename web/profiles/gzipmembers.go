package profiles

import (
	"bytes"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// gzipMember is how much of an encoding each gzip member of a stored copy
// holds (a variable for the tests).
var gzipMember = 1 << 20

// memberWriter gzips what is written to it as a series of gzip members of
// gzipMember bytes each, compressed on up to GOMAXPROCS goroutines (4 at
// most) while the encoder goes on, and written to w in order. gzip readers (Go's,
// klauspost's, web/ingest's, gzip -d, pprof) read the members as one
// stream, the encoding byte for byte. Compressing the 2M-sample profile's
// 46 MB encoding took as long as encoding it; so the upload's copy
// encodes on one core while the other compresses, and uses both once the
// first view, built beside it, is done. An encoding of one member or less
// is compressed on the caller's goroutine, as one gzip stream.
type memberWriter struct {
	w       io.Writer
	block   []byte          // the member being filled
	pending []*member       // compressing, in order
	ins     [][]byte        // written members' inputs, to fill again
	outs    []*bytes.Buffer // and their outputs
	written int             // members written
	workers int
	err     error // the first write or compression error
}

// member is one gzip member: its input and its compressed bytes.
type member struct {
	in   []byte
	out  *bytes.Buffer
	err  error
	done chan struct{}
}

func newMemberWriter(w io.Writer) *memberWriter {
	return &memberWriter{w: w, workers: min(max(1, runtime.GOMAXPROCS(0)), 4)}
}

func (mw *memberWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if mw.err != nil {
			return 0, mw.err
		}
		if mw.block == nil {
			mw.block = mw.buffer()
		}
		k := min(len(p), gzipMember-len(mw.block))
		mw.block = append(mw.block, p[:k]...)
		p = p[k:]
		if len(mw.block) == gzipMember {
			mw.start()
		}
	}
	return n, nil
}

// buffer is an empty block of gzipMember bytes' capacity, a written
// member's when there is one, else one of memberBlocks.
func (mw *memberWriter) buffer() []byte {
	if n := len(mw.ins); n > 0 {
		b := mw.ins[n-1]
		mw.ins = mw.ins[:n-1]
		return b[:0]
	}
	if bp, ok := memberBlocks.Get().(*[]byte); ok && cap(*bp) == gzipMember {
		return (*bp)[:0]
	}
	return make([]byte, 0, gzipMember)
}

// memberBlocks keeps the blocks of finished memberWriters: a new block
// is a megabyte to allocate and clear, and an OTLP intake's profile of
// 100 KB, one block each, spent an eighth of the server's CPU on that.
var memberBlocks sync.Pool

// release hands the writer's blocks back to memberBlocks once nothing
// reads them (every member written, the last block compressed).
func (mw *memberWriter) release() {
	for _, b := range append(mw.ins, mw.block) {
		if cap(b) == gzipMember {
			memberBlocks.Put(&b)
		}
	}
	mw.ins, mw.block = nil, nil
}

// start compresses the filled block on a goroutine of its own, once at
// most workers members are compressing.
func (mw *memberWriter) start() {
	m := &member{in: mw.block, out: new(bytes.Buffer), done: make(chan struct{})}
	if n := len(mw.outs); n > 0 {
		m.out = mw.outs[n-1]
		mw.outs = mw.outs[:n-1]
		m.out.Reset()
	}
	mw.block = nil
	for len(mw.pending) >= mw.workers {
		mw.writeOldest()
	}
	mw.pending = append(mw.pending, m)
	go func() {
		defer close(m.done)
		m.err = gzipMemberTo(m.out, m.in)
	}()
}

// writeOldest waits for the oldest member compressing and writes it.
func (mw *memberWriter) writeOldest() {
	m := mw.pending[0]
	mw.pending = mw.pending[1:]
	<-m.done
	if mw.err == nil {
		mw.err = m.err
	}
	if mw.err == nil {
		_, mw.err = mw.w.Write(m.out.Bytes())
	}
	mw.written++
	mw.ins = append(mw.ins, m.in)
	mw.outs = append(mw.outs, m.out)
}

// Close compresses and writes what is left, waits for every member and
// reports the first error. An encoding that never filled a member is
// compressed here, as one gzip stream (an empty one for no bytes).
func (mw *memberWriter) Close() error {
	defer mw.release()
	if len(mw.pending) == 0 && mw.written == 0 {
		if mw.err == nil {
			mw.err = gzipTo(mw.w, mw.block)
		}
		return mw.err
	}
	if len(mw.block) > 0 && mw.err == nil {
		mw.start()
	}
	for len(mw.pending) > 0 {
		mw.writeOldest()
	}
	return mw.err
}

// gzipTo writes b to w as one gzip stream, with a pooled gzip writer
// (klauspost/compress at its fastest level).
func gzipTo(w io.Writer, b []byte) error {
	return gzipWith(&gzipWriters, w, b)
}

// storeAbove is the share of its size a member's probe compresses to
// above which the member is stored, not compressed: the samples of the
// 2M-sample deep shape (location IDs of 100k locations) compress to 0.89
// at klauspost's fastest level, which took 260 ms of CPU for its 92 MB
// copy and 330 ms again to read it back, where storing takes 12 ms.
const storeAbove = 0.85

// probeBytes is how much of a member is compressed to judge it, from its
// middle: a sixteenth of a member.
const probeBytes = 64 << 10

// gzipMemberTo writes member b to w as one gzip stream: compressed as
// gzipTo does, or stored (deflate's blocks without compression, which
// every gzip reader reads) when a probe of it compresses to more than
// storeAbove of its size.
func gzipMemberTo(w io.Writer, b []byte) error {
	if len(b) < 4*probeBytes || compresses(b[len(b)/2-probeBytes/2:][:probeBytes]) {
		return gzipTo(w, b)
	}
	return gzipWith(&storedWriters, w, b)
}

// compresses says whether b compresses to storeAbove of its size or less
// at the fastest level.
func compresses(b []byte) bool {
	var n byteCount
	fw := probeWriters.Get().(*flate.Writer)
	defer probeWriters.Put(fw)
	fw.Reset(&n)
	fw.Write(b)
	fw.Close()
	return float64(n) <= storeAbove*float64(len(b))
}

// byteCount counts the bytes written to it.
type byteCount int

func (c *byteCount) Write(b []byte) (int, error) {
	*c += byteCount(len(b))
	return len(b), nil
}

var (
	storedWriters = sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(nil, gzip.NoCompression)
		return zw
	}}
	probeWriters = sync.Pool{New: func() any {
		fw, _ := flate.NewWriter(nil, flate.BestSpeed)
		return fw
	}}
)

// gzipWith writes b to w as one gzip stream with a writer of pool.
func gzipWith(pool *sync.Pool, w io.Writer, b []byte) error {
	zw := pool.Get().(*gzip.Writer)
	defer func() {
		zw.Reset(nil) // the pooled writer keeps no caller's buffer alive
		pool.Put(zw)
	}()
	zw.Reset(w)
	if _, err := zw.Write(b); err != nil {
		return err
	}
	return zw.Close()
}
