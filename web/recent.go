package web

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// The uploads this server process took most recently, newest first, for
// the flame page's compare picker (/api/recent). It is a list of links,
// so with --auth-token it needs the token, as /services and /debuginfo do
// (isListing). Kept in memory: a restart, or another replica, starts
// with none; the picker adds the browser's own recent uploads.

// recentKept is how many uploads /api/recent lists.
const recentKept = 20

type recentUploads struct {
	mu  sync.Mutex
	ids []string // newest first, each once
}

// add records id as the newest upload.
func (r *recentUploads) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = slices.DeleteFunc(r.ids, func(x string) bool { return x == id })
	r.ids = slices.Insert(r.ids, 0, id)
	if len(r.ids) > recentKept {
		r.ids = r.ids[:recentKept]
	}
}

func (r *recentUploads) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

// recentJSON is one upload of /api/recent.
type recentJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Format      string    `json:"format"`
	Uploaded    time.Time `json:"uploaded"`
	SampleTypes []string  `json:"sampleTypes"`
}

// handleRecent is /api/recent: {"profiles": [...]}, this process's
// recent uploads, newest first; n= lists at most n of them.
func (s *Server) handleRecent(c echo.Context) error {
	n := recentKept
	if q := c.QueryParam("n"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v <= 0 {
			return httpError(http.StatusBadRequest, "n=%q: want a positive number of profiles", q)
		}
		n = v
	}
	out := []recentJSON{}
	ids := s.recent.list()
	for _, id := range ids[:min(n, len(ids))] {
		m, err := s.Meta(c.Request().Context(), id)
		if err != nil {
			continue
		}
		out = append(out, recentJSON{ID: id, Name: m.Name, Format: m.Format, Uploaded: m.Uploaded, SampleTypes: sampleTypeNames(m)})
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, map[string]any{"profiles": out})
}
