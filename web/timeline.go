package web

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"viewer/web/flame"
)

// handleTimelineJSON serves /p/ID/timeline.json?si=: the sample type's
// values per thread and time bucket (flame.Timeline; no rows when the
// profile has no sample times). The flame page draws it (static/timeline.js)
// and selecting a range sets t=, which every view's filter honours
// (filter.go).
func (s *Server) handleTimelineJSON(c echo.Context) error {
	l, i, err := s.requestProfile(c)
	if err != nil {
		return err
	}
	k := treeKey{id: l.ID, variant: l.Variant(), si: i, kind: "timeline"}
	e, ok := s.trees.Get(k)
	if !ok {
		body := flame.BuildTimeline(l.Profile, i).JSON()
		e = &encoded{plain: body, gz: gzipBytes(body), etag: fmt.Sprintf(`"tl-%s-%s-%d"`, l.ID, l.Variant(), i)}
		s.trees.Add(k, e)
	}
	return serveEncoded(c, e, echo.MIMEApplicationJSON)
}
