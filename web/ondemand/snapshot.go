package ondemand

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/web/profiles"
)

// merger folds the names found for one binary (in its extracted copy) into
// the job's main copy of the profile, which it guards.
type merger struct {
	mu    sync.Mutex
	p     *profile.Profile
	locs  map[uint64]*profile.Location
	maps  map[uint64]*profile.Mapping
	funcs map[funcKey]*profile.Function
	next  uint64 // next Function ID
	dirty bool   // merged since the last snapshot
}

type funcKey struct {
	name, system, file string
	start              int64
}

func newMerger(p *profile.Profile) *merger {
	mg := &merger{p: p, locs: map[uint64]*profile.Location{}, maps: map[uint64]*profile.Mapping{}, funcs: map[funcKey]*profile.Function{}}
	for _, l := range p.Location {
		mg.locs[l.ID] = l
	}
	for _, m := range p.Mapping {
		mg.maps[m.ID] = m
	}
	for _, f := range p.Function {
		mg.funcs[funcKey{f.Name, f.SystemName, f.Filename, f.StartLine}] = f
		mg.next = max(mg.next, f.ID)
	}
	mg.next++
	return mg
}

// merge copies mini's names into the main profile; it reports whether
// anything was named.
func (mg *merger) merge(mini *profile.Profile) bool {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	named := false
	for _, ml := range mini.Location {
		pl := mg.locs[ml.ID]
		if pl == nil || len(ml.Line) == 0 || len(pl.Line) > 0 {
			continue
		}
		lines := make([]profile.Line, len(ml.Line))
		for i, ln := range ml.Line {
			lines[i] = profile.Line{Line: ln.Line, Column: ln.Column, Function: mg.function(ln.Function)}
		}
		pl.Line = lines
		pl.IsFolded = ml.IsFolded
		named = true
	}
	for _, mm := range mini.Mapping {
		if pm := mg.maps[mm.ID]; pm != nil {
			pm.HasFunctions = pm.HasFunctions || mm.HasFunctions
			pm.HasFilenames = pm.HasFilenames || mm.HasFilenames
			pm.HasLineNumbers = pm.HasLineNumbers || mm.HasLineNumbers
			pm.HasInlineFrames = pm.HasInlineFrames || mm.HasInlineFrames
		}
	}
	mg.dirty = mg.dirty || named
	return named
}

func (mg *merger) function(f *profile.Function) *profile.Function {
	if f == nil {
		return nil
	}
	k := funcKey{f.Name, f.SystemName, f.Filename, f.StartLine}
	if pf := mg.funcs[k]; pf != nil {
		return pf
	}
	pf := &profile.Function{ID: mg.next, Name: f.Name, SystemName: f.SystemName, Filename: f.Filename, StartLine: f.StartLine}
	mg.next++
	mg.p.Function = append(mg.p.Function, pf)
	mg.funcs[k] = pf
	return pf
}

// changed reports whether names were merged since the last snapshot.
func (mg *merger) changed() bool {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	return mg.dirty
}

// encode serializes the main profile and clears the dirty mark.
func (mg *merger) encode() ([]byte, bool) {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	if !mg.dirty {
		return nil, false
	}
	var b writerBuffer
	if err := mg.p.Write(&b); err != nil {
		return nil, false
	}
	mg.dirty = false
	return b.b, true
}

type writerBuffer struct{ b []byte }

func (w *writerBuffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// writer stores snapshots of the main profile while binaries resolve, at
// most one per Config.SnapshotEvery, and announces each with a "names"
// event so pages redraw with the names found so far.
type writer struct {
	j     *Job
	mg    *merger
	wake  chan struct{}
	quit  chan struct{}
	ended chan struct{}
}

// Names is the payload of "names" events: a copy with more names is stored
// and flame.json serves it.
type Names struct {
	Resolved int `json:"resolved"`
}

func (j *Job) startWriter(mg *merger) *writer {
	w := &writer{j: j, mg: mg, wake: make(chan struct{}, 1), quit: make(chan struct{}), ended: make(chan struct{})}
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
	data, ok := w.mg.encode()
	if !ok {
		return
	}
	j := w.j
	ctx := context.Background()
	if err := j.m.cfg.Store.Put(ctx, profiles.Key(j.id, profiles.KeySymbolized), bytes.NewReader(data)); err != nil {
		j.m.cfg.Logf("symbolize %s: storing a snapshot: %v", j.id, err)
		w.mg.mu.Lock()
		w.mg.dirty = true
		w.mg.mu.Unlock()
		return
	}
	j.m.stored(j.id)
	j.publishNames()
}

func (j *Job) publishNames() {
	j.mu.Lock()
	n := 0
	for _, k := range j.order {
		if j.bins[k].State == symbolize.StateSymbolized {
			n++
		}
	}
	j.mu.Unlock()
	events{j.topic}.names(n)
}
