package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/web/store"
)

// ReplicaConfig is set when several servers share one store (an object
// store bucket): any of them may serve a link, whichever stored it, and a
// symbolization one of them runs is followed, and taken over when its owner
// goes quiet, by the others (replicajobs.go).
type ReplicaConfig struct {
	// ID names this replica in the store's job records; empty means
	// HOSTNAME-PID-RANDOM.
	ID string
	// Recheck is how long a cached profile is served before the store is
	// asked again whether another replica stored a newer symbolized copy
	// (default 1s).
	Recheck time.Duration
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

func (c *ReplicaConfig) defaults() {
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomToken()[:8])
	}
	if c.Recheck <= 0 {
		c.Recheck = time.Second
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

// replica is the server's state for sharing a store with other servers.
type replica struct {
	cfg    ReplicaConfig
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	mirrors   map[string]bool      // profile IDs whose local job is written to the store
	followers map[string]*follower // profile IDs whose remote job is followed
	claims    map[string]claim     // profile IDs this replica claimed
	wg        sync.WaitGroup
}

func (s *Server) initReplica() {
	if s.cfg.Replica == nil {
		return
	}
	cfg := *s.cfg.Replica
	cfg.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	s.rep = &replica{cfg: cfg, ctx: ctx, cancel: cancel,
		mirrors: map[string]bool{}, followers: map[string]*follower{}, claims: map[string]claim{}}
}

// ReplicaID is this replica's name in job records ("" when not replicated).
func (s *Server) ReplicaID() string {
	if s.rep == nil {
		return ""
	}
	return s.rep.cfg.ID
}

// CloseReplica stops following other replicas' jobs and writing this one's
// (a crash looks the same to the others: its records stop changing).
func (s *Server) CloseReplica() {
	if s.rep == nil {
		return
	}
	r := s.rep
	// Let mirrors of jobs that just stopped (CloseSymbolization) write
	// their last record, so others take the jobs over at once.
	for deadline := time.Now().Add(3 * r.cfg.Poll); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		r.mu.Lock()
		n := len(r.mirrors)
		r.mu.Unlock()
		if n == 0 {
			break
		}
	}
	r.cancel()
	r.wg.Wait()
}

// storeUnavailable turns an object store outage into 503 with Retry-After,
// saying that an upload was not stored, so clients retry instead of taking
// a 500 for a bug.
func storeUnavailable(c echo.Context, err error) error {
	var he *echo.HTTPError
	if !errors.Is(err, store.ErrUnavailable) || errors.As(err, &he) {
		return err
	}
	c.Response().Header().Set("Retry-After", "5")
	var ue *store.UnavailableError
	msg := err.Error()
	if errors.As(err, &ue) {
		msg = ue.Error()
	}
	if isUpload(c) {
		return &echo.HTTPError{Code: http.StatusServiceUnavailable, Internal: err,
			Message: msg + "; the profile was NOT stored: upload it again in a few seconds"}
	}
	return &echo.HTTPError{Code: http.StatusServiceUnavailable, Internal: err,
		Message: msg + "; reload in a few seconds"}
}
