package ondemand

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"viewer/web/profiles"
)

// partial is the job's copy of the profile while the engine names it in
// place, binary by binary: mu is the engine's Options.Names lock, held
// while it writes a binary's names, so the writer can encode the copy
// between two binaries.
type partial struct {
	mu    sync.Mutex
	p     *profile.Profile
	dirty bool   // names arrived since the last stored copy
	last  []byte // the last copy stored, encoded
}

// named marks that a binary's names arrived.
func (pc *partial) named() {
	pc.mu.Lock()
	pc.dirty = true
	pc.mu.Unlock()
}

// changed reports whether names arrived since the last stored copy.
func (pc *partial) changed() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.dirty
}

// stored notes the bytes of a copy once stored.
func (pc *partial) stored(data []byte) {
	pc.mu.Lock()
	pc.last = data
	pc.mu.Unlock()
}

// lastStored is the last copy stored, encoded; nil when none was.
func (pc *partial) lastStored() []byte {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.last
}

// encode serializes the profile and clears the dirty mark.
func (pc *partial) encode() ([]byte, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if !pc.dirty {
		return nil, false
	}
	var b writerBuffer
	if err := profiles.WriteGzipped(&b, pc.p); err != nil {
		return nil, false
	}
	pc.dirty = false
	return b.b, true
}

type writerBuffer struct{ b []byte }

func (w *writerBuffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// writer stores copies of the profile while binaries resolve, at most one
// per Config.SnapshotEvery, and has each announced with a "names" event so
// pages redraw with the names found so far.
type writer struct {
	ctx   context.Context // the run's: once it ends, nothing more is stored
	j     *Job
	pc    *partial
	wake  chan struct{}
	quit  chan struct{}
	ended chan struct{}
}

func (j *Job) startWriter(ctx context.Context, pc *partial) *writer {
	w := &writer{ctx: ctx, j: j, pc: pc, wake: make(chan struct{}, 1), quit: make(chan struct{}), ended: make(chan struct{})}
	go w.loop()
	return w
}

func (w *writer) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// stop ends the loop; the caller stores the final copy itself.
func (w *writer) stop() {
	close(w.quit)
	<-w.ended
}

func (w *writer) loop() {
	defer close(w.ended)
	every := w.j.m.cfg.SnapshotEvery
	for {
		select {
		case <-w.wake:
		case <-w.quit:
			return
		}
		w.write()
		select {
		case <-time.After(every):
		case <-w.quit:
			return
		}
	}
}

func (w *writer) write() {
	if w.ctx.Err() != nil {
		return
	}
	data, ok := w.pc.encode()
	if !ok {
		return
	}
	j := w.j
	ctx := context.Background()
	if err := j.m.cfg.Store.Put(ctx, profiles.Key(j.id, profiles.KeySymbolized), bytes.NewReader(data)); err != nil {
		j.m.cfg.Logf("symbolize %s: storing a snapshot: %v", j.id, err)
		w.pc.named() // try again with the next one
		return
	}
	w.pc.stored(data)
	j.m.stored(j.id)
	j.storedNames()
}
