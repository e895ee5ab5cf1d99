package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/debuginfod"
	"viewer/web/sse"
	"viewer/web/store"
)

// Event types and keys on a profile's topic.
const (
	EventJob        = "job"        // Status, while queued and running
	EventBinary     = "binary"     // Binary, on each state change
	EventProgress   = "progress"   // Progress, at most ten a second per fetch
	EventSymbolized = "symbolized" // Status with Binaries, once at the end
)

// errSymbolizedElsewhere cancels a job whose profile was symbolized by
// another upload of the same bytes or another replica while it ran.
var errSymbolizedElsewhere = errors.New("symbolized elsewhere")

// Job is one run of symbolization over one profile.
type Job struct {
	m     *Manager
	id    string
	opts  Options
	topic *sse.Topic
	done  chan struct{}

	mu        sync.Mutex
	state     string // queued, running, done
	bins      map[string]*Binary
	order     []string
	fetches   map[string]map[*context.CancelFunc]struct{} // key → cancels of running fetches
	skipped   map[string]bool
	disabled  bool
	asked     []string
	cancelRun context.CancelCauseFunc
	stamp     time.Time // ModTime of symbolized.pb.gz when the run started; zero if absent
	errMsg    string
}

func newJob(m *Manager, id string, opt Options, topic *sse.Topic, prev *Job) *Job {
	j := &Job{
		m: m, id: id, opts: opt, topic: topic,
		done:    make(chan struct{}),
		state:   "queued",
		bins:    map[string]*Binary{},
		fetches: map[string]map[*context.CancelFunc]struct{}{},
		skipped: map[string]bool{},
	}
	if opt.Profile != nil {
		for _, m := range unsymbolized(opt.Profile) {
			b := j.binaryLocked(BinaryKey(m), m.File, m.BuildID)
			b.State = StateQueued
		}
		j.opts.Profile = nil // not kept: only the rows were wanted
	} else if prev != nil {
		// A retry shows the previous run's rows until the run starts.
		for _, b := range prev.Binaries() {
			j.order = append(j.order, b.Key)
			j.bins[b.Key] = &b
		}
	}
	return j
}

// ID is the profile's ID.
func (j *Job) ID() string { return j.id }

// Done reports whether the job finished.
func (j *Job) Done() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// Wait blocks until the job finishes or ctx ends.
func (j *Job) Wait(ctx context.Context) error {
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Binaries returns a copy of the job's rows in profile order.
func (j *Job) Binaries() []Binary {
	j.mu.Lock()
	defer j.mu.Unlock()
	bs := make([]Binary, 0, len(j.order))
	for _, k := range j.order {
		bs = append(bs, *j.bins[k])
	}
	return bs
}

// Status returns the job's summary as the "job" event carries it.
func (j *Job) Status() Status {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.statusLocked()
}

func (j *Job) statusLocked() Status {
	s := Status{
		State:      j.state,
		Debuginfod: j.debuginfodLocked(),
		Servers:    j.m.Servers(),
		Asked:      slices.Clone(j.asked),
		Disabled:   j.disabled,
		Error:      j.errMsg,
	}
	if s.Servers == nil {
		s.Servers = []string{}
	}
	if s.Asked == nil {
		s.Asked = []string{}
	}
	for _, k := range j.order {
		switch j.bins[k].State {
		case StateSymbolized:
			s.Resolved++
		case StateNotFound, StateSkipped, StateError:
			s.Missed++
		}
	}
	return s
}

func (j *Job) debuginfodLocked() bool {
	return j.m.DebuginfodEnabled() && !j.opts.NoDebuginfod && !j.disabled
}

// Skip stops looking for one binary (by key) and cancels its fetch.
func (j *Job) Skip(key string) error {
	j.mu.Lock()
	b := j.bins[key]
	if b == nil {
		j.mu.Unlock()
		return fmt.Errorf("no binary %q in this profile", key)
	}
	j.skipped[key] = true
	cancels := j.cancelsLocked(key)
	if !b.State.Final() && j.state != "done" {
		b.State, b.Reason = StateSkipped, "skipped by the user"
		b.Phase, b.Bytes, b.Total = "", 0, 0
		j.publishBinaryLocked(b)
	}
	j.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	return nil
}

// Disable stops asking debuginfod for the rest of this run and cancels its
// fetches; local sources are still used.
func (j *Job) Disable() {
	j.mu.Lock()
	j.disabled = true
	var cancels []context.CancelFunc
	for k := range j.fetches {
		cancels = append(cancels, j.cancelsLocked(k)...)
	}
	for _, k := range j.order {
		if b := j.bins[k]; b.State == StateFetching {
			b.State, b.Reason = StateSkipped, "debuginfod disabled for this profile"
			b.Phase, b.Bytes, b.Total = "", 0, 0
			j.publishBinaryLocked(b)
		}
	}
	j.publishStatusLocked()
	j.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

func (j *Job) cancelsLocked(key string) []context.CancelFunc {
	var cs []context.CancelFunc
	for c := range j.fetches[key] {
		cs = append(cs, *c)
	}
	return cs
}

// refusal is the error a fetch for buildID gets because of the user or the
// upload's choices, or nil.
func (j *Job) refusal(buildID string) error {
	key := normBuildID(buildID)
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.opts.NoDebuginfod:
		return fmt.Errorf("the upload asked not to use debuginfod: %w", ErrSkipped)
	case j.disabled:
		return fmt.Errorf("debuginfod disabled for this profile: %w", ErrSkipped)
	case j.skipped[key]:
		return fmt.Errorf("skipped by the user: %w", ErrSkipped)
	}
	return nil
}

// startFetch registers a fetch so Skip and Disable can cancel it. The
// returned func unregisters it.
func (j *Job) startFetch(ctx context.Context, buildID string) (context.Context, func(), error) {
	if err := j.refusal(buildID); err != nil {
		return nil, nil, err
	}
	key := normBuildID(buildID)
	fctx, cancel := context.WithCancel(ctx)
	j.mu.Lock()
	if j.fetches[key] == nil {
		j.fetches[key] = map[*context.CancelFunc]struct{}{}
	}
	j.fetches[key][&cancel] = struct{}{}
	j.mu.Unlock()
	return fctx, func() {
		j.mu.Lock()
		delete(j.fetches[key], &cancel)
		if len(j.fetches[key]) == 0 {
			delete(j.fetches, key)
		}
		j.mu.Unlock()
		cancel()
	}, nil
}

// fetchProgress records one step of a fetch: a phase change is a binary
// event, bytes are throttled progress events.
func (j *Job) fetchProgress(buildID string, p debuginfod.Progress) {
	key := normBuildID(buildID)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.skipped[key] || j.disabled || j.state == "done" {
		return
	}
	b := j.binaryLocked(key, "", key)
	if p.Server != "" && !slices.Contains(j.asked, p.Server) {
		j.asked = append(j.asked, p.Server)
		j.publishStatusLocked()
	}
	phase := string(p.Phase)
	switch p.Phase {
	case debuginfod.PhaseConnecting, debuginfod.PhaseDownloading, debuginfod.PhaseVerifying:
		changed := b.State != StateFetching || b.Phase != phase || (p.Server != "" && b.Server != p.Server)
		b.State, b.Phase = StateFetching, phase
		if p.Server != "" {
			b.Server, b.Source = p.Server, p.Server
		}
		b.Bytes, b.Total = p.Bytes, p.Total
		if changed {
			j.publishBinaryLocked(b)
		}
		data, _ := json.Marshal(Progress{Key: key, BuildID: b.BuildID, File: b.File, Server: b.Server,
			Phase: phase, Bytes: p.Bytes, Total: p.Total})
		j.topic.PublishThrottled("progress:"+key, EventProgress, data, j.m.cfg.ProgressEvery)
	case debuginfod.PhaseDone, debuginfod.PhaseCacheHit:
		// The engine loads the file next and reports "loading".
		b.Phase, b.Bytes, b.Total = phase, p.Bytes, p.Total
		if p.Server != "" {
			b.Source = p.Server
		} else if p.Path != "" {
			b.Source = p.Path
		}
		j.topic.Forget("progress:" + key)
		j.publishBinaryLocked(b)
	case debuginfod.PhaseNotFound, debuginfod.PhaseError:
		b.Phase = phase
		if p.Err != nil {
			b.Reason = p.Err.Error()
		}
		j.topic.Forget("progress:" + key)
	}
}

// update applies one of the engine's state changes.
func (j *Job) update(u Update) {
	key := normBuildID(u.BuildID)
	if key == "" {
		key = "file:" + u.File
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state == "done" {
		return
	}
	b := j.binaryLocked(key, u.File, u.BuildID)
	if b.State == StateSkipped && (j.skipped[key] || j.disabled) && u.State != StateSymbolized {
		return // the user's choice stands over the cancelled fetch's error
	}
	b.State = u.State
	if u.Source != "" {
		b.Source = u.Source
	}
	switch {
	case u.Err != nil && errors.Is(u.Err, ErrSkipped):
		b.State, b.Reason = StateSkipped, u.Err.Error()
	case u.Err != nil:
		b.Reason = u.Err.Error()
	case u.State == StateSymbolized:
		b.Reason = ""
	}
	if b.State != StateFetching {
		b.Phase, b.Bytes, b.Total = "", 0, 0
		j.topic.Forget("progress:" + key)
	}
	j.publishBinaryLocked(b)
}

// binaryLocked returns key's row, adding one (e.g. for a vmlinux the engine
// fetched for the kernel mapping) when the profile's list lacks it.
func (j *Job) binaryLocked(key, file, buildID string) *Binary {
	if b := j.bins[key]; b != nil {
		if b.File == "" && file != "" {
			b.File, b.Name = file, binaryName(file)
		}
		return b
	}
	b := &Binary{Key: key, File: file, Name: binaryName(file), BuildID: normBuildID(buildID), State: StateQueued}
	j.bins[key] = b
	j.order = append(j.order, key)
	return b
}

// afterFetch checks, once a download ended, whether the profile was
// symbolized meanwhile by another upload or replica; if so the run stops and
// uses that instead of loading more debug info.
func (j *Job) afterFetch() {
	j.mu.Lock()
	stamp, cancel := j.stamp, j.cancelRun
	j.mu.Unlock()
	if cancel == nil {
		return
	}
	if info, err := j.m.cfg.Store.Stat(context.Background(), SymbolizedKey(j.id)); err == nil && info.ModTime != stamp {
		cancel(errSymbolizedElsewhere)
	}
}

func (j *Job) publishBinaryLocked(b *Binary) {
	data, _ := json.Marshal(b)
	j.topic.Publish("binary:"+b.Key, EventBinary, data)
}

func (j *Job) publishStatusLocked() {
	data, _ := json.Marshal(j.statusLocked())
	j.topic.Publish("job", EventJob, data)
}

// publishAll sends the job's state to its topic (on submit).
func (j *Job) publishAll() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.publishStatusLocked()
	for _, k := range j.order {
		j.publishBinaryLocked(j.bins[k])
	}
}

// abandon ends a job that never ran because the server is shutting down.
func (j *Job) abandon() {
	j.mu.Lock()
	j.state, j.errMsg = "done", "the server shut down before symbolization started; reload the page to queue it again"
	j.mu.Unlock()
	close(j.done)
}

// run symbolizes the profile and stores the result.
func (j *Job) run(parent context.Context) {
	defer close(j.done)
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	st := j.m.cfg.Store

	var stamp time.Time
	info, err := st.Stat(ctx, SymbolizedKey(j.id))
	if err == nil {
		stamp = info.ModTime
	} else if !errors.Is(err, store.ErrNotFound) {
		j.finish(nil, fmt.Errorf("checking for a symbolized copy: %w", err))
		return
	}
	j.mu.Lock()
	j.state, j.stamp, j.cancelRun = "running", stamp, cancel
	j.publishStatusLocked()
	j.mu.Unlock()

	// A retry starts from the symbolized copy, whose resolved mappings the
	// engine leaves alone.
	var p *profile.Profile
	if !stamp.IsZero() {
		p, err = j.loadSymbolized(ctx)
	} else {
		p, err = j.m.cfg.Load(ctx, j.id)
	}
	if err != nil {
		j.finish(nil, fmt.Errorf("loading the profile: %w", err))
		return
	}
	j.initBinaries(p)
	if !NeedsSymbolization(p) {
		j.finish(nil, nil)
		return
	}
	j.mu.Lock()
	noDebuginfod := !j.debuginfodLocked()
	j.mu.Unlock()
	err = j.m.cfg.Symbolizer.Symbolize(withJob(ctx, j), p, Request{NoDebuginfod: noDebuginfod, Update: j.update})
	if errors.Is(context.Cause(ctx), errSymbolizedElsewhere) {
		j.adoptStored()
		return
	}
	if ctx.Err() != nil {
		// Shutting down: store nothing half done; the page queues it again.
		j.finish(nil, fmt.Errorf("stopped: %w", context.Cause(ctx)))
		return
	}
	if err != nil {
		// The engine reports per-binary failures itself; an error here is
		// about the whole run, but what resolved is still worth keeping.
		j.m.cfg.Logf("symbolize %s: %v", j.id, err)
	}
	j.settle(p)
	// Someone else may have stored a copy while the last binary loaded.
	if info, serr := st.Stat(ctx, SymbolizedKey(j.id)); serr == nil && info.ModTime != stamp {
		j.adoptStored()
		return
	}
	var buf bytes.Buffer
	if werr := p.Write(&buf); werr != nil {
		j.finish(nil, fmt.Errorf("encoding the symbolized profile: %w", werr))
		return
	}
	if perr := st.Put(ctx, SymbolizedKey(j.id), &buf); perr != nil {
		j.finish(nil, fmt.Errorf("storing the symbolized profile: %w", perr))
		return
	}
	j.finish(nil, err)
}

func (j *Job) loadSymbolized(ctx context.Context) (*profile.Profile, error) {
	rc, err := j.m.cfg.Store.Get(ctx, SymbolizedKey(j.id))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return profile.Parse(rc)
}

// adoptStored ends the run with the copy another worker stored.
func (j *Job) adoptStored() {
	p, err := j.loadSymbolized(context.Background())
	if err != nil {
		j.finish(nil, fmt.Errorf("loading the copy symbolized elsewhere: %w", err))
		return
	}
	resolved := resolvedKeys(p)
	j.mu.Lock()
	for _, m := range p.Mapping {
		if b := j.bins[BinaryKey(m)]; b != nil && b.State != StateSymbolized {
			if !b.State.Final() {
				b.State = StateNotFound
			}
			if resolved[b.Key] {
				b.State, b.Source, b.Reason = StateSymbolized, "symbolized by another upload of this profile", ""
			}
			b.Phase, b.Bytes, b.Total = "", 0, 0
			j.topic.Forget("progress:" + b.Key)
			j.publishBinaryLocked(b)
		}
	}
	j.mu.Unlock()
	j.finish(p, nil)
}

// initBinaries lists the binaries still to symbolize as queued, keeping
// resolved rows of a previous run.
func (j *Job) initBinaries(p *profile.Profile) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range unsymbolized(p) {
		b := j.binaryLocked(BinaryKey(m), m.File, m.BuildID)
		*b = Binary{Key: b.Key, Name: binaryName(m.File), File: m.File, BuildID: normBuildID(m.BuildID), State: StateQueued}
		j.publishBinaryLocked(b)
	}
}

// settle gives every binary the engine left without a final state one,
// from what the profile now holds.
func (j *Job) settle(p *profile.Profile) {
	resolved := resolvedKeys(p)
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range p.Mapping {
		b := j.bins[BinaryKey(m)]
		if b == nil || b.State.Final() {
			continue
		}
		if resolved[b.Key] {
			b.State, b.Reason = StateSymbolized, ""
		} else {
			b.State = StateNotFound
			if b.Reason == "" {
				b.Reason = "no debug info found for this build ID"
			}
		}
		b.Phase, b.Bytes, b.Total = "", 0, 0
		j.topic.Forget("progress:" + b.Key)
		j.publishBinaryLocked(b)
	}
}

// finish ends the job with the final "symbolized" event.
func (j *Job) finish(_ *profile.Profile, err error) {
	j.mu.Lock()
	j.state = "done"
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
	data, _ := json.Marshal(s)
	j.topic.Finish("symbolized", EventSymbolized, data)
}

// resolvedKeys reports, per binary key, whether all of its sampled
// locations have names (and there is at least one, or the mapping says so).
func resolvedKeys(p *profile.Profile) map[string]bool {
	res := map[string]bool{}
	for _, m := range p.Mapping {
		if m.HasFunctions {
			res[BinaryKey(m)] = true
		}
	}
	missing := map[string]bool{}
	for _, l := range p.Location {
		if l.Mapping == nil || l.Address == 0 || l.Mapping.HasFunctions {
			continue
		}
		k := BinaryKey(l.Mapping)
		if len(l.Line) == 0 {
			missing[k] = true
		} else {
			res[k] = true
		}
	}
	for k := range missing {
		delete(res, k)
	}
	return res
}

// normBuildID is the form build IDs take as keys and in events.
func normBuildID(id string) string { return strings.ToLower(strings.TrimSpace(id)) }
