package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/web/ondemand"
	"viewer/web/store"
)

// ReplicaConfig is set when several servers share one store (an object
// store bucket): any of them may serve a link, whichever stored it, and a
// symbolization one of them runs is followed, and taken over when its owner
// goes quiet, by the others (web/ondemand.Lease).
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

// lease is the ondemand store-lease coordinator's config for c.
func (c *ReplicaConfig) lease() ondemand.LeaseConfig {
	return ondemand.LeaseConfig{ID: c.ID, Poll: c.Poll, Heartbeat: c.Heartbeat, TakeoverAfter: c.TakeoverAfter}
}

// CloseReplica stops following other replicas' jobs and writing this one's
// (a crash looks the same to the others: its records stop changing). Call
// it after CloseSymbolization, so its jobs' last records get written.
func (s *Server) CloseReplica() {
	if s.sym != nil {
		s.sym.CloseReplica()
	}
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
