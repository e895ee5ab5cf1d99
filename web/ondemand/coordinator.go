package ondemand

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"viewer/web/store"
)

// Coordinator decides which server runs a profile's job when several share
// one store, and carries what the others need: Local is the single-server
// one, Lease the store-lease one replicas use.
type Coordinator interface {
	// Claim is asked before this server runs a profile's job: true when it
	// should (it holds the claim), false when another runs it and this
	// one now follows it.
	Claim(ctx context.Context, id string) bool
	// Release gives up a claim whose job could not be submitted (a full
	// queue), so another server takes it at once.
	Release(id string)
	// Heartbeat publishes a local job's state to the others while it
	// runs, and ends with it.
	Heartbeat(j *Job)
	// Followed is the rows of a job another server runs that this one
	// follows (its events are published on the job's topic like a local
	// job's), and whether it follows one.
	Followed(id string) ([]Binary, bool)
	// Forward passes a Skip (key) or Disable to the server running the
	// job, and reports whether it did.
	Forward(ctx context.Context, id, key string, disable bool) bool
	// ID names this server in the records ("" for Local).
	ID() string
	// Close stops following and heartbeating (a crash looks the same to
	// the others: the records stop changing).
	Close()
}

// Local is the Coordinator of a server that shares its store with nobody:
// it runs every job itself.
type Local struct{}

func (Local) Claim(context.Context, string) bool                 { return true }
func (Local) Release(string)                                     {}
func (Local) Heartbeat(*Job)                                     {}
func (Local) Followed(string) ([]Binary, bool)                   { return nil, false }
func (Local) Forward(context.Context, string, string, bool) bool { return false }
func (Local) ID() string                                         { return "" }
func (Local) Close()                                             {}

// LeaseConfig tunes the store-lease coordinator.
type LeaseConfig struct {
	// ID names this replica in the store's job records; empty means
	// HOSTNAME-PID-RANDOM.
	ID string
	// Poll is how often a job another replica runs is read from the store
	// for this replica's event streams (default 500ms).
	Poll time.Duration
	// Heartbeat is how often this replica's running jobs rewrite their
	// record even when nothing changed (default 2s).
	Heartbeat time.Duration
	// TakeoverAfter is how long a running job's record may stay unchanged
	// before another replica claims the job and finishes it (default 30s).
	// It must be several Heartbeats, and larger than the clock skew
	// between replicas.
	TakeoverAfter time.Duration
}

func (c *LeaseConfig) defaults() {
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomToken()[:8])
	}
	if c.Poll <= 0 {
		c.Poll = 500 * time.Millisecond
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 2 * time.Second
	}
	if c.TakeoverAfter <= 0 {
		c.TakeoverAfter = 30 * time.Second
	}
}

func randomToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Lease is the Coordinator of replicas sharing one store: a job is claimed
// by writing claim-GEN.json (a conditional create where the store has one),
// its owner heartbeats job.json (profiles.KeyLease) with the job's rows,
// the others follow that record for their pages, forward Skip and Disable
// through control.json, and take the job over when its record stops
// changing.
type Lease struct {
	cfg    LeaseConfig
	m      *Manager
	store  store.Store
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	mirrors   map[string]bool      // profile IDs whose local job is written to the store
	followers map[string]*follower // profile IDs whose remote job is followed
	claims    map[string]claim     // profile IDs this replica claimed
	wg        sync.WaitGroup
}

// NewLease returns the store-lease coordinator of m's jobs (m's Config.Store
// is the shared store); log may be nil.
func NewLease(m *Manager, cfg LeaseConfig, log *slog.Logger) *Lease {
	cfg.defaults()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Lease{cfg: cfg, m: m, store: m.cfg.Store, log: log, ctx: ctx, cancel: cancel,
		mirrors: map[string]bool{}, followers: map[string]*follower{}, claims: map[string]claim{}}
}

// ID implements Coordinator.
func (l *Lease) ID() string { return l.cfg.ID }

// Close implements Coordinator. Mirrors of jobs that just stopped (the
// Manager closed first) write their last record, so others take the jobs
// over at once.
func (l *Lease) Close() {
	for deadline := time.Now().Add(3 * l.cfg.Poll); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		l.mu.Lock()
		n := len(l.mirrors)
		l.mu.Unlock()
		if n == 0 {
			break
		}
	}
	l.cancel()
	l.wg.Wait()
}
