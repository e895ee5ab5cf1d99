package localfile

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// ReadTimeout bounds one read of a file the server opened on a profile's
// say-so: a read stuck on a hung network or FUSE mount gives up then.
const ReadTimeout = 10 * time.Second

// MaxStranded bounds the reads under way at once, and so the reads that
// outlived their deadline and still hold an OS thread in the kernel. Once
// all of them are stranded, further reads fail at once.
const MaxStranded = 16

// readChunk is the most one read hands the kernel at a time, so a large
// section read is several reads, each under the deadline.
const readChunk = 1 << 20

// smallRead is the largest read given a fresh buffer rather than a pooled
// chunk (debug/elf reads headers a few bytes at a time).
const smallRead = 32 << 10

// ErrReadTimeout is wrapped by the error of a read that did not return
// before its deadline, and of later reads of the same file while it is stuck.
var ErrReadTimeout = errors.New("read timed out")

// ErrTooManyStranded is wrapped by the error of a read refused because
// MaxStranded reads are stuck past their deadline.
var ErrTooManyStranded = errors.New("too many stuck reads")

// ReadSlots bounds the reads in flight through the Readers that share it:
// each read holds a slot until the kernel returns, even after its caller
// gave up on it. A process has one (DefaultReadSlots); tests make their own.
type ReadSlots struct {
	slots    chan struct{}
	stranded atomic.Int64
}

// NewReadSlots returns a bound of n reads in flight.
func NewReadSlots(n int) *ReadSlots { return &ReadSlots{slots: make(chan struct{}, n)} }

// Stranded is how many reads outlived their deadline and have not returned.
func (s *ReadSlots) Stranded() int { return int(s.stranded.Load()) }

// DefaultReadSlots is the bound of the files Open opens.
var DefaultReadSlots = NewReadSlots(MaxStranded)

// Reader is an io.ReaderAt whose reads give up after a deadline. A read
// runs on its own goroutine into a buffer of its own, so the caller (a
// symbolization worker, a request) returns at the deadline with an error
// naming the file, while the stuck read, abandoned, keeps only its buffer
// and its slot until the kernel returns. After a read of a file timed out,
// its later reads fail at once until that read returns.
type Reader struct {
	path    string
	r       io.ReaderAt
	timeout time.Duration
	slots   *ReadSlots
	stuck   atomic.Int64 // this file's abandoned reads still in the kernel
}

// NewReader returns r, the file at path, with reads bounded by timeout
// (ReadTimeout if 0) and slots (DefaultReadSlots if nil).
func NewReader(path string, r io.ReaderAt, timeout time.Duration, slots *ReadSlots) *Reader {
	if timeout <= 0 {
		timeout = ReadTimeout
	}
	if slots == nil {
		slots = DefaultReadSlots
	}
	return &Reader{path: path, r: r, timeout: timeout, slots: slots}
}

var chunks = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

type readResult struct {
	n   int
	err error
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt does, each chunk of at
// most readChunk bytes under the deadline.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := r.readChunk(p[n:min(len(p), n+readChunk)], off+int64(n))
		n += k
		if err != nil {
			return n, err
		}
		if k == 0 {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}

func (r *Reader) readChunk(p []byte, off int64) (int, error) {
	if r.stuck.Load() > 0 {
		return 0, &Error{Path: r.path, Reason: fmt.Sprintf("not read: an earlier read of it has not returned after the %v deadline (a hung file system?)", r.timeout), Err: ErrReadTimeout}
	}
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case r.slots.slots <- struct{}{}:
	default:
		if n := r.slots.stranded.Load(); n >= int64(cap(r.slots.slots)) {
			return 0, &Error{Path: r.path, Reason: fmt.Sprintf("not read: %d reads of files are stuck past their %v deadline (a hung file system?), the most this server lets hold a thread", n, r.timeout), Err: ErrTooManyStranded}
		}
		select {
		case r.slots.slots <- struct{}{}:
		case <-timer.C:
			return 0, &Error{Path: r.path, Reason: fmt.Sprintf("not read: no read slot free within the %v deadline", r.timeout), Err: ErrReadTimeout}
		}
	}
	// A small read gets a buffer of its own; a large one a pooled chunk
	// (released to the pool by whoever holds it last).
	var bp *[]byte
	var buf []byte
	if len(p) <= smallRead {
		buf = make([]byte, len(p))
	} else {
		bp = chunks.Get().(*[]byte)
		buf = (*bp)[:len(p)]
	}
	put := func() {
		if bp != nil {
			chunks.Put(bp)
		}
	}
	done := make(chan readResult, 1)
	var state atomic.Int32 // running, then finished or abandoned
	const running, finished, abandoned = 0, 1, 2
	go func() {
		n, err := r.r.ReadAt(buf, off)
		<-r.slots.slots
		if state.CompareAndSwap(running, finished) {
			done <- readResult{n, err}
			return
		}
		// The caller is gone and took no bytes: the buffer is ours.
		r.stuck.Add(-1)
		r.slots.stranded.Add(-1)
		put()
	}()
	var res readResult
	select {
	case res = <-done:
	case <-timer.C:
		r.stuck.Add(1)
		r.slots.stranded.Add(1)
		if state.CompareAndSwap(running, abandoned) {
			return 0, &Error{Path: r.path, Reason: fmt.Sprintf("read did not return within the %v deadline (a hung file system?); it was abandoned", r.timeout), Err: ErrReadTimeout}
		}
		r.stuck.Add(-1) // it finished meanwhile
		r.slots.stranded.Add(-1)
		res = <-done
	}
	copy(p, buf[:res.n])
	put()
	return res.n, res.err
}
