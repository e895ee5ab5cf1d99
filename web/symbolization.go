package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/views"
	"viewer/web/ondemand"
	"viewer/web/profiles"
	"viewer/web/sse"
)

// SymbolizationConfig turns on on-demand symbolization: uploads whose
// addresses have no names are queued, symbolized by Engine (local debug info,
// then debuginfod through Gate), their progress streamed to the page, and
// the result stored next to the original.
type SymbolizationConfig struct {
	// Engine was built with Gate as its Fetcher (or none).
	Engine *symbolize.Symbolizer
	// Gate wraps the debuginfod client (nil client: debuginfod off).
	Gate *ondemand.Gate
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
	// together (0: none); see ondemand.Config.ProfileTimeout.
	ProfileTimeout time.Duration
}

// symbolization is the server's on-demand symbolization state.
type symbolization struct {
	jobs   *ondemand.Manager
	broker *sse.Broker
}

// initSymbolization starts the job manager when the config asks for it.
func (s *Server) initSymbolization() {
	c := s.cfg.Symbolization
	if c == nil || c.Engine == nil {
		return
	}
	ev := c.Events
	if ev.ClientKey == nil {
		ev.ClientKey = clientAddr // per-client stream cap (security.go)
	}
	b := sse.NewBroker(ev)
	m := ondemand.New(ondemand.Config{
		Symbolizer: ondemand.Engine{Symbolizer: c.Engine, Timeout: c.Timeout},
		Store:      s.store,
		Load:       s.prof.Converted, // the job symbolizes its own copy, never the original again
		Broker:     b,
		Gate:       c.Gate,
		Servers:    c.Servers,
		Workers:    c.Workers,
		Queue:      c.Queue,
		Needs:      symbolize.NeedsSymbolization,
		// Named by the flag: the reason a timed-out binary shows says what to change.
		ProfileTimeout:     c.ProfileTimeout,
		ProfileTimeoutName: "--symbolize-profile-timeout",
		Logf: func(format string, args ...any) {
			s.log.Warn(fmt.Sprintf(format, args...))
		},
	})
	m.OnStored(s.Invalidate)
	if s.cfg.Replica != nil {
		s.coord = ondemand.NewLease(m, s.cfg.Replica.lease(), s.log)
	}
	s.sym = &symbolization{jobs: m, broker: b}
}

// CloseSymbolization ends the event streams (so a graceful shutdown does not
// wait for them; call it from http.Server.RegisterOnShutdown) and stops the
// ondemand. Uploads stay stored; opening their page queues them again.
func (s *Server) CloseSymbolization() {
	if s.sym == nil {
		return
	}
	s.sym.broker.Shutdown()
	s.sym.jobs.Close()
}

// Jobs is the symbolization job manager, nil when symbolization is off.
func (s *Server) Jobs() *ondemand.Manager {
	if s.sym == nil {
		return nil
	}
	return s.sym.jobs
}

// debuginfodServers lists where build IDs may be sent, for the pages.
func (s *Server) debuginfodServers() []string {
	if s.sym == nil {
		return nil
	}
	return s.sym.jobs.Servers()
}

// QueueSymbolization queues symbolization of a stored profile when it has
// addresses without names. noDebuginfod records the uploader's choice not to
// send its build IDs anywhere (the strictest choice for the same bytes
// wins). A full queue is a *ondemand.QueueFullError: the profile stays stored
// and opening its page queues it again.
func (s *Server) QueueSymbolization(ctx context.Context, id string, noDebuginfod bool) error {
	if s.sym == nil {
		return nil
	}
	if noDebuginfod {
		if err := s.sym.jobs.SetNoDebuginfod(ctx, id); err != nil {
			return err
		}
	}
	if j := s.sym.jobs.Job(id); j != nil {
		return nil // queued, running or done in this process
	}
	if m, err := s.Meta(ctx, id); err == nil && m.AllNamed() {
		return nil // the common case costs no parse and no store read
	}
	rec, err := s.sym.jobs.Outcome(ctx, id)
	if err != nil || rec.Done {
		return err
	}
	l, err := s.Profile(ctx, id)
	if err != nil {
		return err
	}
	if !symbolize.NeedsSymbolization(l.Profile) {
		return nil
	}
	if !s.coord.Claim(ctx, id) {
		return nil // another replica runs it, and this one follows it
	}
	j, err := s.sym.jobs.Submit(id, ondemand.Options{NoDebuginfod: noDebuginfod, Profile: l.Profile})
	if err != nil {
		s.coord.Release(id) // a full queue: let a replica with room take it
	} else {
		s.coord.Heartbeat(j)
	}
	return err
}

// queueUpload is called for every upload once it is stored: it queues
// symbolization, honouring ?debuginfod=0. A full queue makes the API answer
// 503 with Retry-After (the profile is stored: its link works and opening it
// queues it); the browser form goes on to the page, which says so.
func (s *Server) queueUpload(c echo.Context, id string) error {
	err := s.QueueSymbolization(c.Request().Context(), id, noDebuginfodParam(c.QueryParam("debuginfod")))
	var full *ondemand.QueueFullError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &full):
		if c.Path() != "/api/profiles" {
			return nil
		}
		secs := int(full.RetryAfter.Round(time.Second) / time.Second)
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return httpError(http.StatusServiceUnavailable,
			"the profile is stored as /p/%s, but the symbolization queue is full; open the link or upload again in %d s to have its addresses named", id, secs)
	default:
		s.log.Error("queueing symbolization", "id", id, "err", err)
		return nil // the upload itself succeeded
	}
}

// noDebuginfodParam reads ?debuginfod=0 (also false, off, no).
func noDebuginfodParam(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "off", "no":
		return true
	}
	return false
}

// fillSymbolization sets the flame page's symbolization panel and its event
// stream, queueing the profile if it needs work nobody started (after a
// restart, or when the queue was full at upload).
func (s *Server) fillSymbolization(ctx context.Context, id string, m *profiles.Meta, page *views.FlamePage) {
	if s.sym == nil {
		return
	}
	page.StatusURL = "/p/" + id + "/symbolization"
	j := s.sym.jobs.Job(id)
	if j == nil && m.AllNamed() {
		return
	}
	if j == nil {
		rec, err := s.sym.jobs.Outcome(ctx, id)
		if err != nil {
			s.log.Error("reading the symbolization record", "id", id, "err", err)
			return
		}
		if rec.Done {
			page.Binaries = withPseudoRows(binaryRows(rec.Binaries), m)
			return
		}
		if err := s.QueueSymbolization(ctx, id, false); err != nil {
			var full *ondemand.QueueFullError
			if errors.As(err, &full) {
				for i := range page.Binaries {
					if page.Binaries[i].State != "symbolized" && page.Binaries[i].State != views.StatePseudo {
						page.Binaries[i].State = "queued"
						page.Binaries[i].Detail = "the symbolization queue is full; reload in " + views.FormatValue(full.RetryAfter.Round(time.Second).Nanoseconds(), "nanoseconds")
					}
				}
			}
			return
		}
		if j = s.sym.jobs.Job(id); j == nil {
			if bs, ok := s.coord.Followed(id); ok { // run by another replica
				page.Binaries = withPseudoRows(binaryRows(bs), m)
				page.EventsURL = "/p/" + id + "/events"
			}
			return // nothing to do
		}
	}
	page.Binaries = withPseudoRows(binaryRows(j.Binaries()), m)
	if !j.Done() {
		page.EventsURL = "/p/" + id + "/events"
	}
}

// mappingRows is the panel as meta.json alone tells it: each mapping
// symbolized or not, pseudo mappings in their neutral state.
func mappingRows(m *profiles.Meta) []views.Binary {
	var rows []views.Binary
	for _, mp := range m.Mappings {
		state := "unsymbolized"
		switch {
		case mp.HasFunctions:
			state = "symbolized"
		case symbolize.IsPseudo(mp.File):
			rows = append(rows, pseudoRow(mp))
			continue
		}
		rows = append(rows, views.Binary{File: mp.File, BuildID: mp.BuildID, State: state})
	}
	return rows
}

func pseudoRow(mp profiles.MappingMeta) views.Binary {
	file := mp.File
	if file == "" {
		file = "(anonymous)"
	}
	return views.Binary{File: file, BuildID: mp.BuildID, State: views.StatePseudo,
		Detail: "not a file with debug info (memory the kernel, the loader or a JIT maps): its addresses stay as they are"}
}

// withPseudoRows adds meta.json's pseudo mappings to a job's rows, which
// hold only the binaries it worked on.
func withPseudoRows(rows []views.Binary, m *profiles.Meta) []views.Binary {
	for _, mp := range m.Mappings {
		if !mp.HasFunctions && symbolize.IsPseudo(mp.File) {
			rows = append(rows, pseudoRow(mp))
		}
	}
	return rows
}

func binaryRows(bs []ondemand.Binary) []views.Binary {
	rows := make([]views.Binary, 0, len(bs))
	for _, b := range bs {
		detail := b.Reason
		if b.State == symbolize.StateFetching && b.Bytes > 0 {
			detail = humanBytes(b.Bytes)
			if b.Total > 0 {
				detail += " of " + humanBytes(b.Total)
			}
		}
		rows = append(rows, views.Binary{File: b.File, BuildID: b.BuildID, State: string(b.State), Source: b.Source, Detail: detail, Help: b.Help})
	}
	return rows
}

// symbolizationProfile checks the ID and that symbolization is on.
func (s *Server) symbolizationProfile(c echo.Context) (string, error) {
	id := c.Param("id")
	if _, err := s.Meta(c.Request().Context(), id); err != nil {
		return "", err
	}
	if s.sym == nil {
		return "", httpError(http.StatusNotFound, "symbolization is off on this server")
	}
	return id, nil
}

// sameOrigin refuses state-changing requests another origin's page makes
// (uploads too: security.go): by Sec-Fetch-Site when the browser sends it,
// and by Origin. curl and the CLI send neither and pass.
func sameOrigin(c echo.Context) error {
	switch c.Request().Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return httpError(http.StatusForbidden, "cross-origin request refused")
	}
	o := c.Request().Header.Get("Origin")
	if o == "" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || u.Host != c.Request().Host {
		return httpError(http.StatusForbidden, "cross-origin request refused")
	}
	return nil
}

// handleSymbolizationEvents streams the profile's symbolization over
// server-sent events (GET /p/ID/events). The server's write timeout is
// lifted for this response only.
func (s *Server) handleSymbolizationEvents(c echo.Context) error {
	id, err := s.symbolizationProfile(c)
	if err != nil {
		return err
	}
	s.replicaEvents(c.Request().Context(), id) // the page may come from another replica
	err = s.sym.jobs.Events(c.Response(), c.Request(), id)
	if errors.Is(err, sse.ErrTooManySubscribers) {
		return nil // answered 503 with Retry-After
	}
	return err
}

// handleSymbolizationStatus is the job's status and rows as JSON
// (GET /p/ID/symbolization), from memory or the stored record.
func (s *Server) handleSymbolizationStatus(c echo.Context) error {
	id, err := s.symbolizationProfile(c)
	if err != nil {
		return err
	}
	if j := s.sym.jobs.Job(id); j != nil {
		st := j.Status()
		st.Binaries = j.Binaries()
		return c.JSON(http.StatusOK, st)
	}
	rec, err := s.sym.jobs.Outcome(c.Request().Context(), id)
	if err != nil {
		return err
	}
	st := ondemand.Status{State: ondemand.RunNone, Debuginfod: !rec.NoDebuginfod && len(s.debuginfodServers()) > 0,
		Servers: s.debuginfodServers(), Asked: rec.Asked, Binaries: rec.Binaries}
	if rec.Done {
		st.State = ondemand.RunDone
	} else if len(rec.Binaries) > 0 {
		st.State = ondemand.RunInterrupted // the server stopped mid-run (ondemand.Job.recordProgress); Retry resumes
	}
	if st.Servers == nil {
		st.Servers = []string{}
	}
	if st.Asked == nil {
		st.Asked = []string{}
	}
	return c.JSON(http.StatusOK, st)
}

// handleSymbolizationSkip stops looking for one binary
// (POST /p/ID/symbolize/skip?build_id=…, or key=file:PATH).
func (s *Server) handleSymbolizationSkip(c echo.Context) error {
	id, err := s.symbolizationProfile(c)
	if err != nil {
		return err
	}
	if err := sameOrigin(c); err != nil {
		return err
	}
	key := c.QueryParam("key")
	if key == "" {
		key = strings.ToLower(strings.TrimSpace(c.QueryParam("build_id")))
	}
	if key == "" {
		return httpError(http.StatusBadRequest, "say which binary to skip with ?build_id=HEX")
	}
	if err := s.sym.jobs.Skip(id, key); err != nil {
		if errors.Is(err, ondemand.ErrNoJob) && s.coord.Forward(c.Request().Context(), id, key, false) {
			return c.JSON(http.StatusOK, map[string]string{"skipped": key}) // to the replica running it (replicajobs.go)
		}
		if errors.Is(err, ondemand.ErrNoJob) {
			return httpError(http.StatusConflict, "no symbolization is running for this profile")
		}
		return httpError(http.StatusNotFound, "%v", err)
	}
	return c.JSON(http.StatusOK, map[string]string{"skipped": key})
}

// handleSymbolizationDisable stops asking debuginfod for the rest of the
// profile's job (POST /p/ID/symbolize/disable).
func (s *Server) handleSymbolizationDisable(c echo.Context) error {
	id, err := s.symbolizationProfile(c)
	if err != nil {
		return err
	}
	if err := sameOrigin(c); err != nil {
		return err
	}
	if err := s.sym.jobs.Disable(id); err != nil {
		if s.coord.Forward(c.Request().Context(), id, "", true) {
			return c.JSON(http.StatusOK, map[string]bool{"debuginfod": false}) // to the replica running it
		}
		return httpError(http.StatusConflict, "no symbolization is running for this profile")
	}
	return c.JSON(http.StatusOK, map[string]bool{"debuginfod": false})
}

// handleSymbolizationRetry runs the binaries that missed again
// (POST /p/ID/symbolize/retry).
func (s *Server) handleSymbolizationRetry(c echo.Context) error {
	id, err := s.symbolizationProfile(c)
	if err != nil {
		return err
	}
	if err := sameOrigin(c); err != nil {
		return err
	}
	j, err := s.sym.jobs.Retry(id, ondemand.Options{})
	s.coord.Heartbeat(j)
	var full *ondemand.QueueFullError
	switch {
	case errors.As(err, &full):
		secs := int(full.RetryAfter.Round(time.Second) / time.Second)
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return httpError(http.StatusServiceUnavailable, "the symbolization queue is full; retry in %d s", secs)
	case errors.Is(err, ondemand.ErrRunning):
		return httpError(http.StatusConflict, "symbolization is still running for this profile")
	case err != nil:
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]string{"events": "/p/" + id + "/events"})
}

// replicaEvents prepares this replica to answer /p/ID/events when its page
// was served by another replica (a load balancer without affinity, or an
// EventSource reconnecting elsewhere): it follows, or queues, the job as a
// page view would, and for a job finished elsewhere it answers with the
// final event so the page redraws once.
func (s *Server) replicaEvents(ctx context.Context, id string) {
	if s.coord.ID() == "" || s.sym.jobs.Job(id) != nil {
		return
	}
	if _, ok := s.coord.Followed(id); ok {
		return
	}
	if s.sym.broker.Lookup(id) != nil {
		return
	}
	if err := s.QueueSymbolization(ctx, id, false); err != nil {
		s.log.Warn("queueing symbolization for an event stream", "id", id, "err", err)
	}
	if s.sym.jobs.Job(id) != nil {
		return
	}
	if _, ok := s.coord.Followed(id); ok {
		return
	}
	if rec, err := s.sym.jobs.Outcome(ctx, id); err == nil {
		s.sym.jobs.PublishOutcome(id, rec)
	}
}
