package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
	"viewer/views"
	"viewer/web/ondemand"
	"viewer/web/profiles"
	"viewer/web/sse"
)

// SymbolizationConfig turns on on-demand symbolization; its policy lives
// in web/ondemand (Service), this file only its HTTP side.
type SymbolizationConfig = ondemand.ServiceConfig

// initSymbolization starts the symbolization service when the config asks
// for it.
func (s *Server) initSymbolization() {
	c := s.cfg.Symbolization
	if c == nil || c.Engine == nil {
		return
	}
	cfg := *c
	if cfg.Events.ClientKey == nil {
		cfg.Events.ClientKey = s.clientAddr // per-client stream cap (hosts.go)
	}
	var lease *ondemand.LeaseConfig
	if s.cfg.Replica != nil {
		l := s.cfg.Replica.lease()
		lease = &l
	}
	s.sym = ondemand.NewService(cfg, s.prof, lease, s.log)
}

// CloseSymbolization ends the event streams (so a graceful shutdown does not
// wait for them; call it from http.Server.RegisterOnShutdown) and stops the
// jobs. Uploads stay stored; opening their page queues them again.
func (s *Server) CloseSymbolization() {
	if s.sym != nil {
		s.sym.Close()
	}
}

// debuginfodServers lists where build IDs may be sent, for the pages.
func (s *Server) debuginfodServers() []string {
	if s.sym == nil {
		return nil
	}
	return s.sym.Servers()
}

// QueueSymbolization queues symbolization of a stored profile when it has
// addresses without names (ondemand.Service.Queue); unknown IDs give a 404
// *echo.HTTPError, a full queue a *ondemand.QueueFullError.
func (s *Server) QueueSymbolization(ctx context.Context, id string, noDebuginfod bool) error {
	if s.sym == nil {
		return nil
	}
	return httpStatusError(s.sym.Queue(ctx, id, noDebuginfod))
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
// stream (ondemand.Service.Panel, which queues the profile if it needs work
// nobody started).
func (s *Server) fillSymbolization(ctx context.Context, id string, m *profiles.Meta, page *views.FlamePage) {
	if s.sym == nil {
		return
	}
	page.StatusURL = "/p/" + id + "/symbolization"
	p := s.sym.Panel(ctx, id, m.AllNamed())
	if p.QueueFull != nil {
		for i := range page.Binaries {
			if page.Binaries[i].State != "symbolized" && page.Binaries[i].State != views.StatePseudo {
				page.Binaries[i].State = "queued"
				page.Binaries[i].Detail = "the symbolization queue is full; reload in " + sampling.FormatValue(p.QueueFull.RetryAfter.Round(time.Second).Nanoseconds(), "nanoseconds")
			}
		}
	}
	if p.Rows != nil {
		page.Binaries = withPseudoRows(binaryRows(p.Rows), m)
	}
	if p.Follow {
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
		case symbolize.IsPseudoBinary(mp.File, mp.BuildID):
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
		if !mp.HasFunctions && symbolize.IsPseudoBinary(mp.File, mp.BuildID) {
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
	err = s.sym.Events(c.Response(), c.Request(), id)
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
	st, err := s.sym.Status(c.Request().Context(), id)
	if err != nil {
		return err
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
	switch err := s.sym.Skip(c.Request().Context(), id, key); {
	case errors.Is(err, ondemand.ErrNoJob):
		return httpError(http.StatusConflict, "no symbolization is running for this profile")
	case err != nil:
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
	if err := s.sym.Disable(c.Request().Context(), id); err != nil {
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
	_, err = s.sym.Retry(c.Request().Context(), id)
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
