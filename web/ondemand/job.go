package ondemand

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"viewer/symbolize"
	"viewer/web/sse"
)

// errSymbolizedElsewhere cancels a job whose profile was symbolized by
// another upload of the same bytes or another replica while it ran.
var errSymbolizedElsewhere = errors.New("symbolized elsewhere")

// Job is one run of symbolization over one profile, and the single source
// of truth about it: its rows and status change only under its lock, and
// every change is published as an immutable Snapshot (events.go turns
// snapshots into events; the lease mirrors them to other replicas).
type Job struct {
	m     *Manager
	id    string
	opts  Options
	topic *sse.Topic
	pub   *publisher // guarded by mu
	done  chan struct{}

	mu        sync.Mutex
	state     RunState
	bins      map[string]*Binary
	order     []string
	fetches   map[string]map[*context.CancelFunc]struct{} // key → cancels of running fetches
	skipped   map[string]bool
	disabled  bool
	asked     []string
	runs      map[string]func() // key → cancel of its binary's work in the engine
	names     int               // copies with more names stored by this run
	cancelRun context.CancelCauseFunc
	stamp     time.Time // ModTime of the record when the run started; zero if absent
	errMsg    string
	retry     bool
	published bool        // the final event is out (finish)
	recorded  time.Time   // when recordProgress last wrote the record
	recordAt  *time.Timer // a pending recordProgress after a state change
}

func newJob(m *Manager, id string, opt Options, topic *sse.Topic, prev *Job, retry bool) *Job {
	j := &Job{
		m: m, id: id, opts: opt, topic: topic, retry: retry, pub: newPublisher(topic),
		runs:    map[string]func(){},
		done:    make(chan struct{}),
		state:   RunQueued,
		bins:    map[string]*Binary{},
		fetches: map[string]map[*context.CancelFunc]struct{}{},
		skipped: map[string]bool{},
	}
	if opt.Profile != nil {
		for _, mp := range unsymbolized(opt.Profile) {
			b := j.binaryLocked(symbolize.BinaryKey(mp), mp.File, mp.BuildID)
			b.State = symbolize.StateQueued
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
// It is true from the moment the final event is published, so a client
// reacting to that event (Retry, reloading the page) finds the job done
// even while its worker is still returning.
func (j *Job) Done() bool {
	select {
	case <-j.done:
		return true
	default:
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.published
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
	return j.rowsLocked()
}

func (j *Job) rowsLocked() []Binary {
	bs := make([]Binary, 0, len(j.order))
	for _, k := range j.order {
		bs = append(bs, *j.bins[k])
	}
	return withHelp(bs)
}

// Snapshot returns the job's state as of now; it is the caller's to keep.
func (j *Job) Snapshot() Snapshot {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.snapshotLocked()
}

func (j *Job) snapshotLocked() Snapshot {
	s := Snapshot{Status: j.statusLocked(), Binaries: j.rowsLocked(), Names: j.names, Final: j.state == RunDone}
	if s.Final {
		s.Status.Binaries = s.Binaries
	}
	return s
}

// publishLocked publishes the job's state; events.go sends what changed.
func (j *Job) publishLocked() {
	j.pub.publish(j.snapshotLocked())
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
		case symbolize.StateSymbolized:
			s.Resolved++
		case symbolize.StateNotFound, symbolize.StateSkipped, symbolize.StateError:
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
	if b == nil { // ?build_id= of the kernel
		key = j.fetchKeyLocked(key)
		b = j.bins[key]
	}
	if b == nil {
		j.mu.Unlock()
		return fmt.Errorf("no binary %q in this profile", key)
	}
	j.skipped[key] = true
	cancels := j.cancelsLocked(key)
	if c := j.runs[key]; c != nil {
		cancels = append(cancels, c)
	}
	if !b.State.Final() && j.state != RunDone {
		b.State, b.Reason = symbolize.StateSkipped, "skipped by the user"
		b.Phase, b.Bytes, b.Total = "", 0, 0
		j.publishLocked()
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
		if b := j.bins[k]; b.State == symbolize.StateFetching {
			b.State, b.Reason = symbolize.StateSkipped, "debuginfod disabled for this profile"
			b.Phase, b.Bytes, b.Total = "", 0, 0
		}
	}
	j.publishLocked()
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
	j.mu.Lock()
	defer j.mu.Unlock()
	key := j.fetchKeyLocked(buildID)
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
	fctx, cancel := context.WithCancel(ctx)
	j.mu.Lock()
	key := j.fetchKeyLocked(buildID)
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
func (j *Job) fetchProgress(buildID string, p symbolize.FetchProgress) {
	j.mu.Lock()
	defer j.mu.Unlock()
	key := j.fetchKeyLocked(buildID)
	if j.skipped[key] || j.disabled || j.state == RunDone {
		return
	}
	b := j.binaryLocked(key, "", key)
	changed := false
	if p.Server != "" && !slices.Contains(j.asked, p.Server) {
		j.asked = append(j.asked, p.Server)
		changed = true
	}
	phase := string(p.Phase)
	switch p.Phase {
	case symbolize.PhaseConnecting, symbolize.PhaseDownloading, symbolize.PhaseVerifying:
		changed = changed || b.State != symbolize.StateFetching || b.Phase != phase || (p.Server != "" && b.Server != p.Server)
		b.State, b.Phase = symbolize.StateFetching, phase
		if p.Server != "" {
			b.Server, b.Source = p.Server, p.Server
		}
		b.Bytes, b.Total = p.Bytes, p.Total
		if changed {
			j.publishLocked()
		}
		j.pub.progress(Progress{Key: key, BuildID: b.BuildID, File: b.File, Server: b.Server,
			Phase: phase, Bytes: p.Bytes, Total: p.Total}, j.m.cfg.ProgressEvery)
	case symbolize.PhaseDone, symbolize.PhaseCacheHit:
		// The engine loads the file next and reports "loading".
		b.Phase, b.Bytes, b.Total = phase, p.Bytes, p.Total
		if p.Server != "" {
			b.Source = p.Server
		} else if p.Path != "" {
			b.Source = p.Path
		}
		j.publishLocked()
	case symbolize.PhaseNotFound, symbolize.PhaseError:
		b.Phase = phase
		if p.Err != nil {
			b.Reason = p.Err.Error()
		}
		j.publishLocked()
	default:
		if changed {
			j.publishLocked()
		}
	}
}

// update applies one of the engine's state changes (its Progress events).
func (j *Job) update(u symbolize.Event) {
	key := u.Key
	if key == "" && u.Mapping != nil {
		key = symbolize.BinaryKey(u.Mapping)
	}
	if key == "" {
		key = normBuildID(u.BuildID)
	}
	if key == "" {
		key = "file:" + u.File
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state == RunDone {
		return
	}
	b := j.binaryLocked(key, u.File, u.BuildID)
	if b.State == symbolize.StateSkipped && (j.skipped[key] || j.disabled) && u.State != symbolize.StateSymbolized {
		return // the user's choice stands over the cancelled fetch's error
	}
	before := *b
	b.State = u.State
	if u.Source != "" {
		b.Source = u.Source
		if b.Server != "" && strings.Contains(u.Source, "(debuginfod") {
			// Fetched: name the server; the cache path means nothing to
			// the reader of the page.
			b.Source = "debuginfod " + b.Server
		}
	}
	var limit *timeLimit
	switch {
	case u.Err != nil && errors.As(u.Err, &limit):
		// The profile's or this binary's time limit stopped it.
		b.State, b.Reason = symbolize.StateError, limit.Error()
	case u.Err != nil && errors.Is(u.Err, ErrSkipped):
		b.State, b.Reason = symbolize.StateSkipped, u.Err.Error()
	case u.Err != nil:
		b.Reason = u.Err.Error()
	case u.State == symbolize.StateSymbolized:
		b.Reason = ""
	}
	if b.State != symbolize.StateFetching {
		b.Phase, b.Bytes, b.Total = "", 0, 0
	}
	if *b != before {
		j.publishLocked()
	}
	if b.State != before.State && j.recordAt == nil {
		// Keep the stored rows near the truth (run.go: recordProgress),
		// in one write per recordEvery at most.
		j.recordAt = time.AfterFunc(recordEvery, func() {
			j.mu.Lock()
			j.recordAt = nil
			done := j.state == RunDone
			j.mu.Unlock()
			if !done {
				j.recordProgress(context.Background(), true)
			}
		})
	}
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
	b := &Binary{Key: key, File: file, Name: binaryName(file), BuildID: normBuildID(buildID), State: symbolize.StateQueued}
	j.bins[key] = b
	j.order = append(j.order, key)
	return b
}

// publishAll sends the job's state to its topic (on submit).
func (j *Job) publishAll() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.publishLocked()
}

// storedNames counts a copy with more names stored by this run: pages are
// told with a "names" event.
func (j *Job) storedNames() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.names++
	j.publishLocked()
}

// abandon ends a job that never ran because the server is shutting down.
func (j *Job) abandon() {
	j.mu.Lock()
	j.state, j.errMsg = RunDone, "the server shut down before symbolization started; reload the page to queue it again"
	j.mu.Unlock()
	close(j.done)
}

// fetchKeyLocked is the row a fetch by build ID belongs to: the binary
// with that build ID, or the kernel's row (symbolize.BinaryKey prefixes it
// with "kernel:") when the fetch is the kernel's vmlinux.
func (j *Job) fetchKeyLocked(buildID string) string {
	k := normBuildID(buildID)
	if j.bins[k] == nil && j.bins["kernel:"+k] != nil {
		return "kernel:" + k
	}
	return k
}

// normBuildID is the form build IDs take as keys and in events.
func normBuildID(id string) string { return strings.ToLower(strings.TrimSpace(id)) }

// arrived reports whether the arrival of debug info queued this run.
func (j *Job) arrived() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.opts.Arrived
}
