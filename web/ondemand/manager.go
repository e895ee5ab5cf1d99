package ondemand

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/web/sse"
	"viewer/web/store"
)

// Symbolizer is the symbolization engine (*symbolize.Symbolizer): it fills
// in a profile's functions and lines in place, binary by binary, leaving
// mappings that are already symbolized alone. Each binary's state changes
// arrive through opt.Progress, its work runs under the context opt.Binary
// gives (Skip, a per-binary time limit), and its names are written under
// opt.Names. Fetches it makes must go through the Gate with the context it
// was given (or one derived from it).
type Symbolizer interface {
	Symbolize(ctx context.Context, p *profile.Profile, opt symbolize.Options) (*symbolize.Report, error)
}

// Loader parses a stored upload (ID/original, whatever its format).
type Loader func(ctx context.Context, id string) (*profile.Profile, error)

// Config wires a Manager; Symbolizer, Store, Load and Broker are required.
type Config struct {
	Symbolizer Symbolizer
	Store      store.Store
	Load       Loader
	Broker     *sse.Broker
	// Replace, when set, is handed each job's final symbolized profile
	// once its encoding (encoded) is stored and OnStored ran, so that
	// this server serves it without parsing the stored copy again
	// (profiles.Service.Replace). The job no longer changes p.
	Replace func(ctx context.Context, id string, p *profile.Profile, encoded []byte)
	// Gate is the Fetcher the Symbolizer was built with; nil or a gate with
	// no client means debuginfod is off.
	Gate *Gate
	// Servers are the debuginfod servers build IDs may be sent to.
	Servers []string
	// Workers run jobs (default 2); Queue is how many may wait (default 64).
	Workers, Queue int
	// Parallel bounds how many binaries of one job are symbolized at once
	// (default 8).
	Parallel int
	// BinaryTimeout bounds the work on each binary of a profile (its debug
	// info search, download and lookups; 0: none); a binary it stops is
	// reported timed out, naming BinaryTimeoutName (e.g.
	// "--symbolize-timeout"). What other binaries resolved is kept.
	BinaryTimeout     time.Duration
	BinaryTimeoutName string
	// SnapshotEvery is the shortest interval between two stored copies of
	// a profile while its binaries resolve (default 500ms).
	SnapshotEvery time.Duration
	// ProgressEvery is the shortest interval between two progress events of
	// one fetch (default 100ms: ten a second).
	ProgressEvery time.Duration
	// ProfileTimeout bounds one run over a profile, all its binaries
	// together, from the moment the run starts (0: none). When it passes,
	// binaries still looking or waiting stop and are reported "timed out";
	// what resolved is stored and the run ends like any other (its record
	// is done, so opening the page does not queue it again). Retry runs the
	// timed-out binaries again.
	ProfileTimeout time.Duration
	// ProfileTimeoutName is how a timed-out binary's reason names the
	// limit, e.g. "--symbolize-profile-timeout".
	ProfileTimeoutName string
	// Logf reports failures nobody else sees (default: discard).
	Logf func(format string, args ...any)
}

// ErrQueueFull is matched (errors.Is) by a *QueueFullError.
var ErrQueueFull = errors.New("symbolization queue is full")

// QueueFullError says the job could not be queued; the upload itself is
// stored, and asking again later (or opening the page) queues it.
type QueueFullError struct {
	RetryAfter time.Duration
}

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("symbolization queue is full; the profile is stored, retry in %v", e.RetryAfter.Round(time.Second))
}

func (e *QueueFullError) Is(target error) bool { return target == ErrQueueFull }

// ErrNoJob is returned for Skip, Disable and Retry on a profile with no job.
var ErrNoJob = errors.New("no symbolization job for this profile")

// ErrRunning is returned by Retry while a job for the profile still runs.
var ErrRunning = errors.New("symbolization is still running for this profile")

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("server is shutting down")

// Options are one upload's choices.
type Options struct {
	// NoDebuginfod: the uploader asked not to send build IDs anywhere.
	NoDebuginfod bool
	// Profile, when the caller has it parsed already (an upload), lists
	// the binaries at once so the page shows them queued; it is not kept.
	Profile *profile.Profile
	// Arrived: the run was queued because debug info the last run missed
	// arrived (Service.Arrived), not by a user.
	Arrived bool
}

// Manager queues and runs symbolization jobs, one per profile at a time.
type Manager struct {
	cfg    Config
	queue  chan *Job
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	jobs     map[string]*Job // latest job per profile
	finished []string        // profile IDs with a finished job, oldest first
	closed   bool
	avg      time.Duration // moving average of job durations, for Retry-After
	onStored []func(id string)
	recMu    sync.Mutex // serializes read-modify-write of records
}

// OnStored registers f to be called each time a symbolized copy of a
// profile was stored (while it runs and at the end), before the event
// announcing it, so a server can drop what it cached of the profile.
// Register before submitting jobs.
func (m *Manager) OnStored(f func(id string)) {
	m.mu.Lock()
	m.onStored = append(m.onStored, f)
	m.mu.Unlock()
}

func (m *Manager) stored(id string) {
	m.mu.Lock()
	fs := slices.Clone(m.onStored)
	m.mu.Unlock()
	for _, f := range fs {
		f(id)
	}
}

// maxFinished bounds how many finished jobs are kept for their state.
const maxFinished = 4096

// New starts the workers.
func New(cfg Config) *Manager {
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 64
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 8
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = 500 * time.Millisecond
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 100 * time.Millisecond
	}
	if cfg.ProfileTimeoutName == "" {
		cfg.ProfileTimeoutName = "the profile's symbolization time limit"
	}
	if cfg.BinaryTimeoutName == "" {
		cfg.BinaryTimeoutName = "the time limit of one binary's symbolization"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		cfg:    cfg,
		queue:  make(chan *Job, cfg.Queue),
		ctx:    ctx,
		cancel: cancel,
		jobs:   map[string]*Job{},
		avg:    5 * time.Second,
	}
	for range cfg.Workers {
		m.wg.Add(1)
		go m.work()
	}
	return m
}

// Close cancels running jobs, drops queued ones (their uploads stay stored;
// opening the page queues them again) and waits for the workers.
func (m *Manager) Close() {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.queue)
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// DebuginfodEnabled reports whether the server may ask debuginfod at all.
func (m *Manager) DebuginfodEnabled() bool { return m.cfg.Gate.Enabled() && len(m.cfg.Servers) > 0 }

// Servers are the debuginfod servers configured for this server.
func (m *Manager) Servers() []string {
	if !m.DebuginfodEnabled() {
		return nil
	}
	return slices.Clone(m.cfg.Servers)
}

func (m *Manager) work() {
	defer m.wg.Done()
	for j := range m.queue {
		if m.ctx.Err() != nil {
			j.abandon()
			continue
		}
		start := time.Now()
		j.run(m.ctx)
		m.mu.Lock()
		m.avg = (3*m.avg + time.Since(start)) / 4
		m.finished = append(m.finished, j.id)
		for len(m.finished) > maxFinished {
			if old := m.jobs[m.finished[0]]; old != nil && old.Done() {
				delete(m.jobs, m.finished[0])
			}
			m.finished = m.finished[1:]
		}
		m.mu.Unlock()
	}
}

// Submit queues symbolization of the stored profile id, unless a job for it
// is queued, running or done already, in which case that job is returned.
// A full queue is a *QueueFullError.
func (m *Manager) Submit(id string, opt Options) (*Job, error) {
	return m.submit(id, opt, false)
}

// Retry runs the profile's binaries that missed again, with debuginfod back
// on unless the upload (opt, or the stored record) or the server said no.
// Misses are remembered by the debuginfod client for the cache's
// cache_miss_s, as elfutils does, so an immediate retry asks servers only
// about what was not a plain miss. It works for a profile whose job this
// process never ran (symbolized before a restart, or by another replica).
func (m *Manager) Retry(id string, opt Options) (*Job, error) {
	m.mu.Lock()
	j := m.jobs[id]
	m.mu.Unlock()
	if j != nil && !j.Done() {
		return nil, ErrRunning
	}
	if j != nil {
		opt.NoDebuginfod = opt.NoDebuginfod || j.opts.NoDebuginfod
	}
	return m.submit(id, opt, true)
}

func (m *Manager) submit(id string, opt Options, retry bool) (*Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	prev := m.jobs[id]
	if prev != nil && (!retry || !prev.Done()) {
		return prev, nil
	}
	topic := m.cfg.Broker.Topic(id)
	j := newJob(m, id, opt, topic, prev, retry)
	select {
	case m.queue <- j:
	default:
		d := m.avg * time.Duration(len(m.queue)) / time.Duration(m.cfg.Workers)
		return nil, &QueueFullError{RetryAfter: max(d, time.Second)}
	}
	if topic.Finished() {
		topic.Reopen()
	}
	m.jobs[id] = j
	j.publishAll()
	return j, nil
}

// Job returns the latest job for profile id, or nil.
func (m *Manager) Job(id string) *Job {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[id]
}

// Skip stops looking for one binary of the profile (its key: build ID, or
// "file:" + path), cancelling its fetch.
func (m *Manager) Skip(id, key string) error {
	j := m.Job(id)
	if j == nil {
		return ErrNoJob
	}
	return j.Skip(key)
}

// Disable stops asking debuginfod for the rest of the profile's job,
// cancelling its fetches.
func (m *Manager) Disable(id string) error {
	j := m.Job(id)
	if j == nil {
		return ErrNoJob
	}
	j.Disable()
	return nil
}

// Binaries is the profile's symbolization panel, or nil when no job is
// known for it.
func (m *Manager) Binaries(id string) []Binary {
	if j := m.Job(id); j != nil {
		return j.Binaries()
	}
	return nil
}

// Events streams the profile's job over server-sent events; see
// sse.Broker.Serve. A profile with no job answers 204, which tells the
// browser's EventSource not to reconnect.
func (m *Manager) Events(w http.ResponseWriter, r *http.Request, id string) error {
	err := m.cfg.Broker.Serve(w, r, id)
	if errors.Is(err, sse.ErrNoTopic) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return err
}

// Outcome reads the profile's stored Outcome (zero when none).
func (m *Manager) Outcome(ctx context.Context, id string) (Outcome, error) {
	r, _, err := ReadOutcome(ctx, m.cfg.Store, id)
	return r, err
}

// SetNoDebuginfod records that an upload of the profile asked not to send
// its build IDs anywhere. The strictest choice wins: a later upload of the
// same bytes cannot turn debuginfod back on. A job already running stops
// asking.
func (m *Manager) SetNoDebuginfod(ctx context.Context, id string) error {
	m.recMu.Lock()
	defer m.recMu.Unlock()
	r, _, err := ReadOutcome(ctx, m.cfg.Store, id)
	if err != nil {
		return err
	}
	if !r.NoDebuginfod {
		r.NoDebuginfod = true
		if _, err := writeOutcome(ctx, m.cfg.Store, id, r); err != nil {
			return err
		}
	}
	if j := m.Job(id); j != nil && !j.Done() {
		j.mu.Lock()
		j.opts.NoDebuginfod = true
		j.mu.Unlock()
		j.Disable()
	}
	return nil
}

// Missing lists the profiles whose last job in this process ended leaving
// the binary with buildID (lower-case hex) without symbols.
func (m *Manager) Missing(buildID string) []string {
	buildID = normBuildID(buildID)
	m.mu.Lock()
	jobs := make([]*Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		jobs = append(jobs, j)
	}
	m.mu.Unlock()
	var ids []string
	for _, j := range jobs {
		if !j.Done() {
			continue
		}
		for _, b := range j.Binaries() {
			if b.BuildID == buildID && b.State == symbolize.StateNotFound {
				ids = append(ids, j.id)
				break
			}
		}
	}
	slices.Sort(ids)
	return ids
}
