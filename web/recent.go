package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// /api/recent lists the newest uploads for the flame page's compare
// picker (profiles.Service.Recent: every replica's, across restarts, when
// the store lists keys). It is a list of links, so with --auth-token it
// needs the token, as /services and /debuginfo do (isListing); the picker
// adds the browser's own recent uploads.

// recentKept is how many uploads /api/recent lists at most.
const recentKept = 20

// recentJSON is one upload of /api/recent.
type recentJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Format      string    `json:"format"`
	Uploaded    time.Time `json:"uploaded"`
	SampleTypes []string  `json:"sampleTypes"`
}

// handleRecent is /api/recent: {"profiles": [...]}, the newest uploads
// first; n= lists at most n of them (and never more than recentKept).
func (s *Server) handleRecent(c echo.Context) error {
	n := recentKept
	if q := c.QueryParam("n"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v <= 0 {
			return httpError(http.StatusBadRequest, "n=%q: want a positive number of profiles", q)
		}
		n = v
	}
	n = min(n, recentKept)
	ids, err := s.prof.Recent(c.Request().Context(), n)
	if err != nil {
		return err
	}
	out := []recentJSON{}
	for _, id := range ids {
		m, err := s.Meta(c.Request().Context(), id)
		if err != nil {
			continue
		}
		out = append(out, recentJSON{ID: id, Name: m.Name, Format: m.Format, Uploaded: m.Uploaded, SampleTypes: sampleTypeNames(m)})
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, map[string]any{"profiles": out})
}
