package profiles

import (
	"io"
	"slices"
	"sync"
)

// aheadBuffer is a pipe that holds up to max bytes its reader has not
// read yet: its writer goes on until then instead of waiting for each
// read, as with io.Pipe. The converted copy's encoder writes into one
// while the store is still writing the original and meta.json, which
// must be stored before the copy (Service.put): the encode then runs
// beside those writes (an 83 MB original's write and sync took 0.3–0.4 s
// here, while a core waited) instead of after them. Only what is written
// is held, in copies of the writer's slices, never more than max bytes
// at once plus one write. The copies' arrays, once read, are kept (up to
// max bytes of them) for the next writes: a 2M-sample profile's copy is
// up to about 90 MB, written a member at a time, and an array per write
// was fresh memory, faulted in a page at a time.
type aheadBuffer struct {
	mu      sync.Mutex
	changed sync.Cond
	bufs    [][]byte // written, not read yet; bufs[0] partly read
	arrays  [][]byte // bufs' arrays, whole
	free    [][]byte // arrays read, for the next writes
	freed   int      // bytes in free
	held    int      // bytes in bufs
	max     int
	werr    error // the writer closed: io.EOF, or its error
	rerr    error // the reader closed
}

func newAheadBuffer(max int) *aheadBuffer {
	b := &aheadBuffer{max: max}
	b.changed.L = &b.mu
	return b
}

// Write copies p, waiting while the buffer holds max bytes or more
// (nothing is held: p is copied whatever its size).
func (b *aheadBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.held > 0 && b.held+len(p) > b.max && b.rerr == nil {
		b.changed.Wait()
	}
	if b.rerr != nil {
		return 0, b.rerr
	}
	if b.werr != nil {
		return 0, io.ErrClosedPipe
	}
	if len(p) == 0 {
		return 0, nil
	}
	var c []byte
	for k, a := range b.free {
		if cap(a) >= len(p) {
			c = a[:len(p)]
			b.free = slices.Delete(b.free, k, k+1)
			b.freed -= cap(c)
			copy(c, p)
			break
		}
	}
	if c == nil {
		// An eighth more than this write, for the next ones to fit in:
		// a stored copy's writes are gzip members, each a little longer
		// or shorter than the last, and an array that fitted none was
		// fresh memory for every one.
		c = append(make([]byte, 0, len(p)+len(p)/8), p...)
	}
	b.bufs = append(b.bufs, c)
	b.arrays = append(b.arrays, c)
	b.held += len(p)
	b.changed.Broadcast()
	return len(p), nil
}

// CloseWithError ends what the reader will read: err, or io.EOF when nil,
// after what was written.
func (b *aheadBuffer) CloseWithError(err error) {
	if err == nil {
		err = io.EOF
	}
	b.mu.Lock()
	if b.werr == nil {
		b.werr = err
	}
	b.changed.Broadcast()
	b.mu.Unlock()
}

func (b *aheadBuffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.bufs) == 0 && b.werr == nil && b.rerr == nil {
		b.changed.Wait()
	}
	if b.rerr != nil {
		return 0, io.ErrClosedPipe
	}
	if len(b.bufs) == 0 {
		return 0, b.werr
	}
	n := 0
	for n < len(p) && len(b.bufs) > 0 {
		k := copy(p[n:], b.bufs[0])
		n += k
		if b.bufs[0] = b.bufs[0][k:]; len(b.bufs[0]) == 0 {
			if a := b.arrays[0]; b.freed+cap(a) <= b.max {
				b.free = append(b.free, a)
				b.freed += cap(a)
			}
			b.bufs[0], b.arrays[0] = nil, nil
			b.bufs, b.arrays = b.bufs[1:], b.arrays[1:]
		}
	}
	b.held -= n
	b.changed.Broadcast()
	return n, nil
}

// CloseRead stops the reader's side: the writer's next writes fail with
// err, and what was held is let go.
func (b *aheadBuffer) CloseRead(err error) {
	b.mu.Lock()
	if b.rerr == nil {
		b.rerr = err
	}
	b.bufs, b.arrays, b.held = nil, nil, 0
	b.free, b.freed = nil, 0
	b.changed.Broadcast()
	b.mu.Unlock()
}
