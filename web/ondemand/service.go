package ondemand

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"viewer/symbolize"
	"viewer/web/profiles"
	"viewer/web/sse"
)

// ServiceConfig turns on on-demand symbolization: uploads whose addresses
// have no names are queued, symbolized by Engine (local debug info, then
// debuginfod through Gate), their progress streamed to the page, and the
// result stored next to the original.
type ServiceConfig struct {
	// Engine was built with Gate as its Fetcher (or none).
	Engine *symbolize.Symbolizer
	// Gate wraps the debuginfod client (nil client: debuginfod off).
	Gate *Gate
	// Servers are the debuginfod servers build IDs may be sent to.
	Servers []string
	// Workers and Queue bound the work (defaults 2 and 64).
	Workers, Queue int
	// Events bounds the event streams.
	Events sse.Config
	// Timeout bounds the symbolization of each binary of a profile (its
	// debug info search, download and lookups; 0: none). Binaries run
	// in parallel; what resolved by then is kept.
	Timeout time.Duration
	// ProfileTimeout bounds one run over a whole profile, all its binaries
	// together (0: none); see Config.ProfileTimeout.
	ProfileTimeout time.Duration
}

// Service is the symbolization policy of a server: when a profile is
// queued (at upload, on a page view after a restart or a full queue, for
// an event stream opened on another replica), what its panel shows, and
// how Skip, Disable and Retry reach the job, here or on the replica
// running it. The web handlers call it and only translate its answers.
type Service struct {
	cfg    ServiceConfig
	jobs   *Manager
	broker *sse.Broker
	coord  Coordinator
	prof   *profiles.Service
	log    *slog.Logger
}

// NewService starts the job manager for cfg over the profiles of prof.
// With lease set, the server is one of several replicas sharing prof's
// store and coordinates its jobs with them (Lease); else it runs every
// job itself (Local). log may be nil.
func NewService(cfg ServiceConfig, prof *profiles.Service, lease *LeaseConfig, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := sse.NewBroker(cfg.Events)
	m := New(Config{
		Symbolizer: cfg.Engine,
		Store:      prof.Store(),
		Load:       prof.Converted, // the job symbolizes its own copy, never the original again
		Broker:     b,
		Replace:    prof.Replace, // the next page on this server does not parse the stored copy
		Gate:       cfg.Gate,
		Servers:    cfg.Servers,
		Workers:    cfg.Workers,
		Queue:      cfg.Queue,
		// Named by the flags: the reason a timed-out binary shows says what to change.
		BinaryTimeout:      cfg.Timeout,
		BinaryTimeoutName:  "--symbolize-timeout",
		ProfileTimeout:     cfg.ProfileTimeout,
		ProfileTimeoutName: "--symbolize-profile-timeout",
		Logf: func(format string, args ...any) {
			log.Warn(fmt.Sprintf(format, args...))
		},
	})
	m.OnStored(prof.Invalidate)
	s := &Service{cfg: cfg, jobs: m, broker: b, coord: Local{}, prof: prof, log: log}
	if lease != nil {
		s.coord = NewLease(m, *lease, log)
	}
	return s
}

// Close ends the event streams (so a graceful shutdown does not wait for
// them) and stops the jobs. Uploads stay stored; opening their page
// queues them again.
func (s *Service) Close() {
	s.broker.Shutdown()
	s.jobs.Close()
}

// CloseReplica stops following other replicas' jobs and writing this one's;
// call it after Close, so its jobs' last records get written.
func (s *Service) CloseReplica() { s.coord.Close() }

// Servers lists where build IDs may be sent, for the pages.
func (s *Service) Servers() []string { return s.jobs.Servers() }

// Outcome reads the profile's stored Outcome (zero when none).
func (s *Service) Outcome(ctx context.Context, id string) (Outcome, error) {
	return s.jobs.Outcome(ctx, id)
}

// Queue queues symbolization of a stored profile when it has addresses
// without names. noDebuginfod records the uploader's choice not to send its
// build IDs anywhere (the strictest choice for the same bytes wins). A full
// queue is a *QueueFullError: the profile stays stored and opening its page
// queues it again. With replicas, a job another replica runs is followed
// instead.
func (s *Service) Queue(ctx context.Context, id string, noDebuginfod bool) error {
	if noDebuginfod {
		if err := s.jobs.SetNoDebuginfod(ctx, id); err != nil {
			return err
		}
	}
	if j := s.jobs.Job(id); j != nil {
		return nil // queued, running or done in this process
	}
	if m, err := s.prof.Meta(ctx, id); err == nil && m.AllNamed() {
		return nil // the common case costs no parse and no store read
	}
	rec, err := s.jobs.Outcome(ctx, id)
	if err != nil || rec.Done {
		return err
	}
	l, err := s.prof.Profile(ctx, id)
	if err != nil {
		return err
	}
	if !symbolize.NeedsSymbolization(l.Profile) {
		return nil
	}
	if !s.coord.Claim(ctx, id) {
		return nil // another replica runs it, and this one follows it
	}
	j, err := s.jobs.Submit(id, Options{NoDebuginfod: noDebuginfod, Profile: l.Profile})
	if err != nil {
		s.coord.Release(id) // a full queue: let a replica with room take it
	} else {
		s.coord.Heartbeat(j)
	}
	return err
}

// Panel is what a profile's page shows of its symbolization.
type Panel struct {
	// Rows are the binaries a job worked on (pseudo mappings are not
	// among them); nil: none known, the page shows the mappings as its
	// meta.json has them.
	Rows []Binary
	// Follow: the job is still to end; the page opens its event stream.
	Follow bool
	// QueueFull, when set, is why a profile that needs work is not
	// queued: the page says when to reload.
	QueueFull *QueueFullError
}

// Panel returns the profile's panel, queueing the profile if it needs work
// nobody started (after a restart, or when the queue was full at upload).
// allNamed is meta.json's word that nothing needs a name.
func (s *Service) Panel(ctx context.Context, id string, allNamed bool) Panel {
	j := s.jobs.Job(id)
	if j == nil && allNamed {
		return Panel{}
	}
	if j == nil {
		rec, err := s.jobs.Outcome(ctx, id)
		if err != nil {
			s.log.Error("reading the symbolization record", "id", id, "err", err)
			return Panel{}
		}
		if rec.Done {
			return Panel{Rows: withHelp(rec.Binaries)}
		}
		if err := s.Queue(ctx, id, false); err != nil {
			var full *QueueFullError
			if errors.As(err, &full) {
				return Panel{QueueFull: full}
			}
			s.log.Error("queueing symbolization", "id", id, "err", err)
			return Panel{}
		}
		if j = s.jobs.Job(id); j == nil {
			if bs, ok := s.coord.Followed(id); ok { // run by another replica
				return Panel{Rows: bs, Follow: true}
			}
			return Panel{} // nothing to do
		}
	}
	return Panel{Rows: j.Binaries(), Follow: !j.Done()}
}

// Status is the job's status and rows, from memory or the stored record.
func (s *Service) Status(ctx context.Context, id string) (Status, error) {
	if j := s.jobs.Job(id); j != nil {
		st := j.Status()
		st.Binaries = j.Binaries()
		return st, nil
	}
	rec, err := s.jobs.Outcome(ctx, id)
	if err != nil {
		return Status{}, err
	}
	return recordStatus(rec, s.Servers()), nil
}

// recordStatus is the status of a profile no job runs for here (after a
// restart, or symbolized by another replica), from its stored record:
// counted and with help as the job's own final event has them.
func recordStatus(rec Outcome, servers []string) Status {
	st := Status{State: RunNone, Debuginfod: !rec.NoDebuginfod && len(servers) > 0,
		Servers: servers, Asked: rec.Asked, Binaries: withHelp(rec.Binaries)}
	counts(&st, rec.Binaries)
	if rec.Done {
		st.State = RunDone
	} else if len(rec.Binaries) > 0 {
		st.State = RunInterrupted // the server stopped mid-run (Job.recordProgress); Retry resumes
	}
	if st.Servers == nil {
		st.Servers = []string{}
	}
	if st.Asked == nil {
		st.Asked = []string{}
	}
	return st
}

// Skip stops looking for one binary (by key) of the profile's job, here
// or, forwarded, on the replica running it. ErrNoJob: no job runs for it;
// other errors name an unknown binary.
func (s *Service) Skip(ctx context.Context, id, key string) error {
	err := s.jobs.Skip(id, key)
	if errors.Is(err, ErrNoJob) && s.coord.Forward(ctx, id, key, false) {
		return nil // to the replica running it
	}
	return err
}

// Disable stops asking debuginfod for the rest of the profile's job, here
// or on the replica running it; ErrNoJob when no job runs for it.
func (s *Service) Disable(ctx context.Context, id string) error {
	err := s.jobs.Disable(id)
	if err != nil && s.coord.Forward(ctx, id, "", true) {
		return nil // to the replica running it
	}
	return err
}

// Retry runs the binaries that missed again (Manager.Retry), telling the
// other replicas this one runs it.
// A run that the arrival of debug info started is what a Retry would do,
// so a Retry during it gets that run rather than ErrRunning.
func (s *Service) Retry(ctx context.Context, id string) (*Job, error) {
	return s.retry(id, Options{})
}

func (s *Service) retry(id string, opt Options) (*Job, error) {
	j, err := s.jobs.Retry(id, opt)
	if errors.Is(err, ErrRunning) && !opt.Arrived {
		if cur := s.jobs.Job(id); cur != nil && cur.arrived() {
			return cur, nil
		}
	}
	s.coord.Heartbeat(j)
	return j, err
}

// Events streams the profile's symbolization over server-sent events.
// When the page was served by another replica (a load balancer without
// affinity, or an EventSource reconnecting elsewhere), it first follows,
// or queues, the job as a page view would, and for a job finished
// elsewhere it answers with the final event so the page redraws once.
func (s *Service) Events(w http.ResponseWriter, r *http.Request, id string) error {
	s.prepareEvents(r.Context(), id)
	return s.jobs.Events(w, r, id)
}

func (s *Service) prepareEvents(ctx context.Context, id string) {
	if s.coord.ID() == "" || s.jobs.Job(id) != nil {
		return
	}
	if _, ok := s.coord.Followed(id); ok {
		return
	}
	if s.broker.Lookup(id) != nil {
		return
	}
	if err := s.Queue(ctx, id, false); err != nil {
		s.log.Warn("queueing symbolization for an event stream", "id", id, "err", err)
	}
	if s.jobs.Job(id) != nil {
		return
	}
	if _, ok := s.coord.Followed(id); ok {
		return
	}
	if rec, err := s.jobs.Outcome(ctx, id); err == nil {
		s.jobs.PublishOutcome(id, rec)
	}
}

// Arrived is told that debug info for buildID arrived at this server (an
// upload): the misses remembered for it are forgotten, and each profile
// whose last job here left it without symbols runs again for the binaries
// that missed, so an open page (which watches a job that ended with
// misses) gets the names without a reload. It returns the profiles queued.
func (s *Service) Arrived(buildID string) []string {
	s.cfg.Gate.ForgetMiss(buildID)
	var queued []string
	for _, id := range s.jobs.Missing(buildID) {
		if _, err := s.retry(id, Options{Arrived: true}); err != nil {
			if !errors.Is(err, ErrRunning) {
				s.log.Warn("symbolizing again after a debug file arrived", "id", id, "build_id", buildID, "err", err)
			}
			continue
		}
		queued = append(queued, id)
	}
	return queued
}
