package ondemand

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
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

// run symbolizes the profile with one engine call, which works binary by
// binary: each binary's events update its row, and each binary that
// resolves makes the writer store and announce a copy with its names, so
// pages redraw as binaries resolve. Then it stores the result.
func (j *Job) run(parent context.Context) {
	defer close(j.done)
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	// tctx bounds the binaries' work by --symbolize-profile-timeout; its end
	// is not a shutdown: the run still completes with what resolved.
	tctx, tcancel := ctx, context.CancelFunc(func() {})
	if d := j.m.cfg.ProfileTimeout; d > 0 {
		tctx, tcancel = context.WithTimeoutCause(ctx, d, &timeLimit{d, j.m.cfg.ProfileTimeoutName})
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
		}
	}
	j.state, j.stamp, j.cancelRun = RunRunning, stamp, cancel
	j.publishLocked()
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
	keys := j.initBinaries(p)
	if len(keys) == 0 {
		j.complete(ctx, p, false, nil)
		return
	}
	j.recordProgress(ctx, true) // a kill -9 from here on leaves the rows
	pc := &partial{p: p}
	j.mu.Lock()
	noDebuginfod := !j.debuginfodLocked()
	j.mu.Unlock()
	w := j.startWriter(ctx, pc)
	rep, err := j.symbolize(tctx, p, symbolize.Options{
		NoDebuginfod: noDebuginfod,
		Fetcher:      j.m.cfg.Gate.For(j),
		Profile:      j.id,
		Parallel:     j.m.cfg.Parallel,
		Names:        &pc.mu,
		Binary:       j.binaryContext,
		Progress: func(ev symbolize.Event) {
			j.update(ev)
			if !ev.State.Final() {
				return
			}
			if ctx.Err() != nil {
				return // shutting down, or symbolized elsewhere: nothing more is stored
			}
			if ev.State == symbolize.StateSymbolized {
				pc.named()
				w.poke()
			}
			j.recordProgress(ctx, false)
		},
	})
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
	j.settle(keys, rep, context.Cause(tctx), err)
	j.complete(ctx, p, pc.changed(), pc.lastStored())
}

// symbolize is the job's one engine call. The engine recovers a panic on
// one binary's debug info as that binary's error; a panic outside any
// binary's work becomes the call's error, so it ends this job's binaries
// that had no outcome yet, never the process (the job runs outside any
// request, so nothing else would catch it).
func (j *Job) symbolize(ctx context.Context, p *profile.Profile, opt symbolize.Options) (rep *symbolize.Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			j.m.cfg.Logf("symbolize %s: panic: %v\n%s", j.id, r, debug.Stack())
			err = fmt.Errorf("symbolization failed (%v); the binaries not done stay unsymbolized", r)
		}
	}()
	return j.m.cfg.Symbolizer.Symbolize(ctx, p, opt)
}

// binaryContext is the engine's Options.Binary: the context one binary is
// worked on under, which Skip cancels (a binary skipped before it started
// gets one that ended already) and Config.BinaryTimeout bounds.
func (j *Job) binaryContext(ctx context.Context, key string, _ *profile.Mapping) (context.Context, context.CancelFunc) {
	bctx, cancel := context.WithCancelCause(ctx)
	wctx, tcancel := bctx, context.CancelFunc(func() {})
	if d := j.m.cfg.BinaryTimeout; d > 0 {
		wctx, tcancel = context.WithTimeoutCause(bctx, d, &timeLimit{d, j.m.cfg.BinaryTimeoutName})
	}
	skip := func() { cancel(errSkippedByUser) }
	j.mu.Lock()
	if j.skipped[key] {
		skip()
	}
	j.runs[key] = skip
	j.mu.Unlock()
	return wctx, func() {
		j.mu.Lock()
		delete(j.runs, key)
		j.mu.Unlock()
		tcancel()
		cancel(nil)
	}
}

// errSkippedByUser ends the work on a binary the user skipped.
var errSkippedByUser = errors.New("skipped by the user")

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
// snapshot, last) and the record, hands the final profile over
// (Config.Replace) when a copy of it is stored, then ends the job.
func (j *Job) complete(ctx context.Context, p *profile.Profile, dirty bool, last []byte) {
	st := j.m.cfg.Store
	// Someone else may have finished while the last binary loaded.
	if rec, stamp, err := ReadOutcome(ctx, st, j.id); err == nil && rec.Done && !stamp.Equal(j.stampNow()) && !j.retry {
		j.adoptStored(rec)
		return
	}
	if dirty {
		encoded, err := j.storeProfile(ctx, p)
		if err != nil {
			j.finish(err)
			return
		}
		last = encoded
	}
	if last != nil && j.m.cfg.Replace != nil {
		j.m.cfg.Replace(ctx, j.id, p, last) // the stored copy is p as it is now
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
// drop what it cached of the profile. It returns the bytes stored.
func (j *Job) storeProfile(ctx context.Context, p *profile.Profile) ([]byte, error) {
	var buf bytes.Buffer
	if err := profiles.WriteGzipped(&buf, p); err != nil {
		return nil, fmt.Errorf("encoding the symbolized profile: %w", err)
	}
	encoded := buf.Bytes()
	if err := j.m.cfg.Store.Put(ctx, profiles.Key(j.id, profiles.KeySymbolized), bytes.NewReader(encoded)); err != nil {
		return nil, fmt.Errorf("storing the symbolized profile: %w", err)
	}
	j.m.stored(j.id)
	return encoded, nil
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

// initBinaries lists the binaries still to symbolize (those the engine
// will work on: symbolize.NeedsName, one row per symbolize.BinaryKey) as
// queued, keeping resolved rows of a previous run, and returns their keys
// in profile order.
func (j *Job) initBinaries(p *profile.Profile) []string {
	ms := unsymbolized(p)
	j.mu.Lock()
	defer j.mu.Unlock()
	keys := make([]string, 0, len(ms))
	for _, m := range ms {
		k := symbolize.BinaryKey(m)
		b := j.binaryLocked(k, m.File, m.BuildID)
		*b = Binary{Key: b.Key, Name: binaryName(m.File), File: m.File, BuildID: normBuildID(m.BuildID), State: symbolize.StateQueued}
		if j.skipped[k] {
			b.State, b.Reason = symbolize.StateSkipped, "skipped by the user"
		}
		keys = append(keys, k)
	}
	j.publishLocked()
	return keys
}

// settle gives each binary of the run that the engine's events left
// without an outcome its final state, once the engine returned: timed out
// when the profile's time limit ended the run (cause), else the engine's
// report, else the engine call's error (a panic outside any binary).
func (j *Job) settle(keys []string, rep *symbolize.Report, cause, err error) {
	reports := map[string]symbolize.MappingReport{}
	if rep != nil {
		for _, r := range rep.Mappings {
			reports[r.Key] = r
		}
	}
	var limit *timeLimit
	timedOut := errors.As(cause, &limit)
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, k := range keys {
		b := j.bins[k]
		if b == nil || b.State.Final() {
			continue
		}
		r, ok := reports[k]
		switch {
		case timedOut:
			b.State, b.Reason = symbolize.StateError, limit.Error()
		case ok && r.State.Final():
			b.State, b.Reason = r.State, r.Reason
			if r.Source != "" {
				b.Source = r.Source
			}
		case err != nil:
			b.State, b.Reason = symbolize.StateError, err.Error()
		default:
			b.State, b.Reason = symbolize.StateNotFound, "no debug info found for this build ID"
		}
		b.Phase, b.Bytes, b.Total = "", 0, 0
	}
	j.publishLocked()
}

// timeLimit is the cause of a context ended by a time limit: the
// profile's (Config.ProfileTimeout) or one binary's (Config.BinaryTimeout).
// A binary it stopped is reported with it as its reason.
type timeLimit struct {
	d    time.Duration
	name string
}

func (e *timeLimit) Error() string {
	return fmt.Sprintf("timed out after %v (%s); retry to look again", e.d, e.name)
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
	j.mu.Unlock()
	// Under the manager's lock: a Retry or page view prompted by the final
	// event waits for it and finds the job done, and a Submit never sees the
	// job done before its topic is finished (it would not reopen it).
	j.m.mu.Lock()
	j.mu.Lock()
	j.publishLocked()
	j.published = true
	j.mu.Unlock()
	j.m.mu.Unlock()
}
