package ondemand

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/web/profiles"
	"viewer/web/store"
)

// Outcome is the durable record of a profile's symbolization, ID/symbolize.json
// (profiles.KeyOutcome): the upload's privacy choice and, once a run
// finished, each binary's outcome, so the panel survives restarts and other
// replicas can tell the work is done. The live state of a running job that
// replicas share is the other record, the lease (lease.go, job.json).
type Outcome struct {
	NoDebuginfod bool      `json:"noDebuginfod,omitempty"`
	Done         bool      `json:"done"`
	Finished     time.Time `json:"finished,omitzero"`
	Asked        []string  `json:"asked,omitempty"`
	Binaries     []Binary  `json:"binaries,omitempty"`
}

// ReadOutcome returns the profile's record and its modification time; a
// profile without one gets the zero Outcome and time.
func ReadOutcome(ctx context.Context, st store.Store, id string) (Outcome, time.Time, error) {
	var r Outcome
	info, err := st.Stat(ctx, profiles.Key(id, profiles.KeyOutcome))
	if errors.Is(err, store.ErrNotFound) {
		return r, time.Time{}, nil
	}
	if err != nil {
		return r, time.Time{}, err
	}
	rc, err := st.Get(ctx, profiles.Key(id, profiles.KeyOutcome))
	if err != nil {
		return r, time.Time{}, err
	}
	defer rc.Close()
	if err := json.NewDecoder(rc).Decode(&r); err != nil {
		return Outcome{}, time.Time{}, fmt.Errorf("%s: %w", profiles.Key(id, profiles.KeyOutcome), err)
	}
	for i := range r.Binaries {
		// Records written before the kernel's rows were keyed by
		// symbolize.BinaryKey named it by its bare build ID.
		if b := &r.Binaries[i]; symbolize.IsKernel(b.File) && !strings.HasPrefix(b.Key, "kernel:") {
			b.Key = "kernel:" + b.BuildID
		}
	}
	return r, info.ModTime, nil
}

func writeOutcome(ctx context.Context, st store.Store, id string, r Outcome) (time.Time, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return time.Time{}, err
	}
	if err := st.Put(ctx, profiles.Key(id, profiles.KeyOutcome), bytes.NewReader(b)); err != nil {
		return time.Time{}, err
	}
	info, err := st.Stat(ctx, profiles.Key(id, profiles.KeyOutcome))
	return info.ModTime, err
}

// run symbolizes the profile, one engine call per binary so names are
// merged and served as each binary resolves, and stores the result.
func (j *Job) run(parent context.Context) {
	defer close(j.done)
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	// tctx bounds the binaries' work by --symbolize-profile-timeout; its end
	// is not a shutdown: the run still completes with what resolved.
	tctx, tcancel := ctx, context.CancelFunc(func() {})
	if d := j.m.cfg.ProfileTimeout; d > 0 {
		tctx, tcancel = context.WithTimeoutCause(ctx, d, errProfileTimeout)
	}
	defer tcancel()
	st := j.m.cfg.Store

	rec, stamp, err := ReadOutcome(ctx, st, j.id)
	if err != nil {
		j.finish(fmt.Errorf("reading the symbolization record: %w", err))
		return
	}
	j.mu.Lock()
	j.opts.NoDebuginfod = j.opts.NoDebuginfod || rec.NoDebuginfod
	if len(j.order) == 0 {
		// First run in this process: show the stored outcome's rows.
		for _, rb := range rec.Binaries {
			b := j.binaryLocked(rb.Key, rb.File, rb.BuildID)
			*b = rb
			j.publishBinaryLocked(b)
		}
	}
	j.state, j.stamp, j.cancelRun = RunRunning, stamp, cancel
	j.publishStatusLocked()
	j.mu.Unlock()
	if rec.Done && !j.retry {
		// Done by another replica since this one last looked.
		j.adoptStored(rec)
		return
	}

	// A retry, or a run interrupted by a restart, continues from the
	// stored copy, whose resolved mappings are left alone.
	var p *profile.Profile
	if _, serr := st.Stat(ctx, profiles.Key(j.id, profiles.KeySymbolized)); serr == nil {
		p, err = j.loadSymbolized(ctx)
	} else {
		p, err = j.m.cfg.Load(ctx, j.id)
	}
	if err != nil {
		j.finish(fmt.Errorf("loading the profile: %w", err))
		return
	}
	// Before the profile is cut into per-binary copies, where every
	// location is a leaf: a copy stored before the convention gets it here.
	symbolize.CallSites(p)
	groups, minis := j.initBinaries(p)
	if len(groups) == 0 {
		j.complete(ctx, p, false)
		return
	}
	j.recordProgress(ctx, true) // a kill -9 from here on leaves the rows
	mg := newMerger(p)
	j.mu.Lock()
	noDebuginfod := !j.debuginfodLocked()
	j.mu.Unlock()
	w := j.startWriter(mg)

	var wg sync.WaitGroup
	sem := make(chan struct{}, j.m.cfg.Parallel)
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-tctx.Done():
				return // never started: timed out below, or shutting down
			}
			defer func() { <-sem }()
			if tctx.Err() != nil {
				return
			}
			bctx, done, ok := j.startBinary(tctx, g.key)
			if !ok {
				return // skipped before it started
			}
			err := j.symbolizeOne(withJob(bctx, j), minis[i], Request{NoDebuginfod: noDebuginfod, Update: j.update})
			done()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				j.m.cfg.Logf("symbolize %s, %s: %v", j.id, g.key, err)
			}
			if mg.merge(minis[i]) {
				w.poke()
			}
			j.settle(g.key, minis[i], err)
			if tctx.Err() != nil {
				j.timedOut(g.key)
			}
			j.recordProgress(ctx, false)
		}()
	}
	wg.Wait()
	if ctx.Err() == nil && tctx.Err() != nil {
		for _, g := range groups {
			j.timedOut(g.key) // those that never started
		}
	}
	w.stop()
	if errors.Is(context.Cause(ctx), errSymbolizedElsewhere) {
		rec, _, err := ReadOutcome(context.WithoutCancel(ctx), st, j.id)
		if err != nil {
			j.finish(fmt.Errorf("reading the record written elsewhere: %w", err))
			return
		}
		j.adoptStored(rec)
		return
	}
	if ctx.Err() != nil {
		// Shutting down: what resolved may already be stored; the record
		// is not marked done, so opening the page continues the work.
		j.finish(fmt.Errorf("stopped: %w", context.Cause(ctx)))
		return
	}
	j.complete(ctx, p, mg.changed())
}

// recordEvery bounds how often a run rewrites its record in progress.
const recordEvery = time.Second

// recordProgress writes the record, not done, with the rows as they stand,
// so that after a crash or kill -9 the status shows each binary as it was
// and opening the page or Retry resumes the run from the stored copy. It
// writes at most once per recordEvery unless now, and never over a record
// another replica marked done meanwhile.
func (j *Job) recordProgress(ctx context.Context, now bool) {
	st := j.m.cfg.Store
	j.mu.Lock()
	if !now && time.Since(j.recorded) < recordEvery {
		j.mu.Unlock()
		return
	}
	j.recorded = time.Now()
	rec := Outcome{NoDebuginfod: j.opts.NoDebuginfod, Asked: append([]string(nil), j.asked...)}
	for _, k := range j.order {
		rec.Binaries = append(rec.Binaries, *j.bins[k])
	}
	stamp := j.stamp
	j.mu.Unlock()
	j.m.recMu.Lock()
	defer j.m.recMu.Unlock()
	cur, curStamp, err := ReadOutcome(ctx, st, j.id)
	if err != nil || cur.Done && !curStamp.Equal(stamp) && !j.retry {
		return
	}
	rec.NoDebuginfod = rec.NoDebuginfod || cur.NoDebuginfod
	if stamp, err = writeOutcome(ctx, st, j.id, rec); err != nil {
		j.m.cfg.Logf("symbolize %s: storing the record in progress: %v", j.id, err)
		return
	}
	j.mu.Lock()
	j.stamp = stamp
	j.mu.Unlock()
}

// complete stores the final copy (when anything changed since the last
// snapshot) and the record, then ends the job.
func (j *Job) complete(ctx context.Context, p *profile.Profile, dirty bool) {
	st := j.m.cfg.Store
	// Someone else may have finished while the last binary loaded.
	if rec, stamp, err := ReadOutcome(ctx, st, j.id); err == nil && rec.Done && !stamp.Equal(j.stampNow()) && !j.retry {
		j.adoptStored(rec)
		return
	}
	if dirty {
		if err := j.storeProfile(ctx, p); err != nil {
			j.finish(err)
			return
		}
	}
	j.mu.Lock()
	rec := Outcome{NoDebuginfod: j.opts.NoDebuginfod, Done: true, Finished: time.Now().UTC().Truncate(time.Second), Asked: append([]string(nil), j.asked...)}
	for _, k := range j.order {
		rec.Binaries = append(rec.Binaries, *j.bins[k])
	}
	j.mu.Unlock()
	j.m.recMu.Lock()
	if cur, _, err := ReadOutcome(ctx, st, j.id); err == nil && cur.NoDebuginfod {
		rec.NoDebuginfod = true // set by an upload while this ran
	}
	stamp, err := writeOutcome(ctx, st, j.id, rec)
	j.m.recMu.Unlock()
	if err != nil {
		j.finish(fmt.Errorf("storing the symbolization record: %w", err))
		return
	}
	j.mu.Lock()
	j.stamp = stamp
	j.mu.Unlock()
	j.finish(nil)
}

func (j *Job) stampNow() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stamp
}

// storeProfile writes p as the symbolized copy and tells the server to
// drop what it cached of the profile.
func (j *Job) storeProfile(ctx context.Context, p *profile.Profile) error {
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return fmt.Errorf("encoding the symbolized profile: %w", err)
	}
	if err := j.m.cfg.Store.Put(ctx, profiles.Key(j.id, profiles.KeySymbolized), &buf); err != nil {
		return fmt.Errorf("storing the symbolized profile: %w", err)
	}
	j.m.stored(j.id)
	return nil
}

// startBinary gives one binary's engine call a context Skip can cancel.
func (j *Job) startBinary(ctx context.Context, key string) (context.Context, func(), bool) {
	bctx, cancel := context.WithCancel(ctx)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.skipped[key] {
		cancel()
		return nil, nil, false
	}
	j.runs[key] = cancel
	return bctx, func() {
		j.mu.Lock()
		delete(j.runs, key)
		j.mu.Unlock()
		cancel()
	}, true
}

// afterFetch checks, once a download ended, whether the profile was
// symbolized meanwhile by another replica; if so the run stops and uses
// that instead of loading more debug info.
func (j *Job) afterFetch() {
	j.mu.Lock()
	stamp, cancel := j.stamp, j.cancelRun
	j.mu.Unlock()
	if cancel == nil {
		return
	}
	ctx := context.Background()
	info, err := j.m.cfg.Store.Stat(ctx, profiles.Key(j.id, profiles.KeyOutcome))
	if err != nil || info.ModTime.Equal(stamp) {
		return
	}
	if rec, _, err := ReadOutcome(ctx, j.m.cfg.Store, j.id); err == nil && rec.Done {
		cancel(errSymbolizedElsewhere)
	}
}

func (j *Job) loadSymbolized(ctx context.Context) (*profile.Profile, error) {
	rc, err := j.m.cfg.Store.Get(ctx, profiles.Key(j.id, profiles.KeySymbolized))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return profile.Parse(rc)
}

// adoptStored ends the run with the outcome another replica stored.
func (j *Job) adoptStored(rec Outcome) {
	j.m.stored(j.id)
	j.mu.Lock()
	for _, rb := range rec.Binaries {
		b := j.binaryLocked(rb.Key, rb.File, rb.BuildID)
		if b.State == symbolize.StateSymbolized {
			continue
		}
		*b = rb
		if rb.State == symbolize.StateSymbolized {
			b.Source = "symbolized elsewhere: " + rb.Source
		}
		events{j.topic}.endProgress(b.Key)
		j.publishBinaryLocked(b)
	}
	for _, s := range rec.Asked {
		if !contains(j.asked, s) {
			j.asked = append(j.asked, s)
		}
	}
	j.mu.Unlock()
	j.finish(nil)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// group is one binary: its key and its mappings in the profile.
type group struct {
	key      string
	mappings map[*profile.Mapping]bool
	first    *profile.Mapping
}

// initBinaries lists the binaries still to symbolize as queued, keeping
// resolved rows of a previous run, and returns them in profile order with
// the copy of each the engine will work on.
func (j *Job) initBinaries(p *profile.Profile) ([]group, []*profile.Profile) {
	gs, minis := j.m.groups(p)
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, g := range gs {
		m := g.first
		b := j.binaryLocked(g.key, m.File, m.BuildID)
		*b = Binary{Key: b.Key, Name: binaryName(m.File), File: m.File, BuildID: normBuildID(m.BuildID), State: symbolize.StateQueued}
		if j.skipped[g.key] {
			b.State, b.Reason = symbolize.StateSkipped, "skipped by the user"
		}
		j.publishBinaryLocked(b)
	}
	return gs, minis
}

// extract copies each binary's mappings and unnamed locations into a small
// profile of its own (one pass over the locations), so the engine can work
// on it while the names of other binaries are merged into the main copy and
// served.
func extract(p *profile.Profile, gs []group) []*profile.Profile {
	minis := make([]*profile.Profile, len(gs))
	copies := map[*profile.Mapping]*profile.Mapping{}
	owner := map[*profile.Mapping]int{}
	for i, g := range gs {
		mini := &profile.Profile{PeriodType: p.PeriodType, Period: p.Period}
		for _, st := range p.SampleType {
			c := *st
			mini.SampleType = append(mini.SampleType, &c)
		}
		for _, m := range p.Mapping {
			if g.mappings[m] {
				c := *m
				copies[m] = &c
				owner[m] = i
				mini.Mapping = append(mini.Mapping, &c)
			}
		}
		minis[i] = mini
	}
	for _, l := range p.Location {
		c := copies[l.Mapping]
		if c == nil || len(l.Line) > 0 {
			continue
		}
		mini := minis[owner[l.Mapping]]
		ml := &profile.Location{ID: l.ID, Mapping: c, Address: l.Address}
		mini.Location = append(mini.Location, ml)
		mini.Sample = append(mini.Sample, &profile.Sample{Location: []*profile.Location{ml}, Value: make([]int64, len(mini.SampleType))})
	}
	return minis
}

// groups returns the profile's binaries that hold unnamed addresses, in
// profile order, with the copy of each the engine would work on; binaries
// the engine would not touch (Config.Needs) are left out.
func (m *Manager) groups(p *profile.Profile) ([]group, []*profile.Profile) {
	need := map[string]bool{}
	for _, mp := range unsymbolized(p) {
		need[symbolize.BinaryKey(mp)] = true
	}
	var gs []group
	idx := map[string]int{}
	for _, mp := range p.Mapping {
		k := symbolize.BinaryKey(mp)
		if !need[k] {
			continue
		}
		i, ok := idx[k]
		if !ok {
			i = len(gs)
			idx[k] = i
			gs = append(gs, group{key: k, mappings: map[*profile.Mapping]bool{}, first: mp})
		}
		gs[i].mappings[mp] = true
	}
	all := extract(p, gs)
	var kept []group
	var minis []*profile.Profile
	for i, g := range gs {
		if m.cfg.Needs(all[i]) {
			kept = append(kept, g)
			minis = append(minis, all[i])
		}
	}
	return kept, minis
}

// settle gives the binary a final state once its engine call returned,
// from what its copy now holds, unless the engine already gave one.
func (j *Job) settle(key string, mini *profile.Profile, err error) {
	resolved := resolvedKeys(mini)[key]
	j.mu.Lock()
	defer j.mu.Unlock()
	b := j.bins[key]
	if b == nil {
		return
	}
	switch {
	case resolved && b.State != symbolize.StateSymbolized:
		b.State, b.Reason = symbolize.StateSymbolized, ""
	case !resolved && b.State == symbolize.StateSymbolized:
		b.State, b.Reason = symbolize.StateNotFound, "the debug info names none of the sampled addresses"
	case !resolved && !b.State.Final():
		b.State = symbolize.StateNotFound
		if err != nil {
			b.State, b.Reason = symbolize.StateError, err.Error()
		} else if b.Reason == "" {
			b.Reason = "no debug info found for this build ID"
		}
	default:
		return
	}
	b.Phase, b.Bytes, b.Total = "", 0, 0
	events{j.topic}.endProgress(key)
	j.publishBinaryLocked(b)
}

// symbolizeOne is one binary's engine call. A panic in it (the engine reads
// untrusted debug info) fails that binary only: the job runs outside any
// request, so nothing else would catch it before it ended the process.
func (j *Job) symbolizeOne(ctx context.Context, p *profile.Profile, req Request) (err error) {
	defer func() {
		if r := recover(); r != nil {
			j.m.cfg.Logf("symbolize %s: panic: %v\n%s", j.id, r, debug.Stack())
			err = fmt.Errorf("symbolization failed on this binary's debug info (%v); it stays unsymbolized", r)
		}
	}()
	return j.m.cfg.Symbolizer.Symbolize(ctx, p, req)
}

// errProfileTimeout ends the binaries' work of a run that took longer than
// Config.ProfileTimeout.
var errProfileTimeout = errors.New("profile symbolization time limit reached")

// timedOut reports a binary the profile's time limit stopped: one still
// looking, waiting, or whose engine call ended in an error (the cancelled
// work's). A binary that resolved, was not found or was skipped keeps that
// outcome.
func (j *Job) timedOut(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	b := j.bins[key]
	if b == nil || b.State == symbolize.StateSymbolized || b.State == symbolize.StateNotFound || b.State == symbolize.StateSkipped {
		return
	}
	b.State = symbolize.StateError
	b.Reason = fmt.Sprintf("timed out after %v (%s); retry to look again", j.m.cfg.ProfileTimeout, j.m.cfg.ProfileTimeoutName)
	b.Phase, b.Bytes, b.Total = "", 0, 0
	events{j.topic}.endProgress(key)
	j.publishBinaryLocked(b)
}

// finish ends the job with the final "symbolized" event.
func (j *Job) finish(err error) {
	j.mu.Lock()
	j.state = RunDone
	j.cancelRun = nil
	if err != nil {
		j.errMsg = err.Error()
		j.m.cfg.Logf("symbolize %s: %v", j.id, err)
	}
	s := j.statusLocked()
	for _, k := range j.order {
		s.Binaries = append(s.Binaries, *j.bins[k])
	}
	j.mu.Unlock()
	// Under the manager's lock: a Retry or page view prompted by the final
	// event waits for it and finds the job done, and a Submit never sees the
	// job done before its topic is finished (it would not reopen it).
	j.m.mu.Lock()
	events{j.topic}.final(s)
	j.mu.Lock()
	j.published = true
	j.mu.Unlock()
	j.m.mu.Unlock()
}

// resolvedKeys reports, per binary key, whether the engine named any of its
// sampled locations (or marked its mapping symbolized).
func resolvedKeys(p *profile.Profile) map[string]bool {
	res := map[string]bool{}
	for _, m := range p.Mapping {
		if m.HasFunctions {
			res[symbolize.BinaryKey(m)] = true
		}
	}
	for _, l := range p.Location {
		if l.Mapping != nil && len(l.Line) > 0 {
			res[symbolize.BinaryKey(l.Mapping)] = true
		}
	}
	return res
}
