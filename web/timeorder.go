package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/klauspost/compress/gzip"
	"github.com/labstack/echo/v4"

	"viewer/views"
	"viewer/web/flame"
	"viewer/web/profiles"
)

// timeOrderCache is how many profiles' time-order indexes
// (flame.TimeOrder: a thread, time, stack and value per sample record)
// are kept: each is built on the first visit of a profile's /time page.
const timeOrderCache = 2

// defaultTimeOrderWidth is the columns of time.json without w=.
const defaultTimeOrderWidth = 1200

// handleTimeOrderPage renders /p/ID/time from meta.json alone: the page
// fetches timeline.json and time.json itself.
func (s *Server) handleTimeOrderPage(c echo.Context) error {
	id := c.Param("id")
	m, i, err := s.pageMeta(c, id)
	if err != nil {
		return err
	}
	if _, err := queryFilter(c); err != nil {
		return err
	}
	si := m.SampleTypes[i].Type
	q := filterQuery(c)
	data := q
	data.Del("t") // the script adds the range it shows
	page := views.TimeOrderPage{
		Page:        s.profilePage(c, id, m, displayName(m, id), nav(c, id, "time")),
		ID:          id,
		Name:        m.Name,
		SampleTypes: sampleTypes(m, i),
		DataURL:     withQuery(profileURL(id, "/time.json", si), data),
		TimelineURL: profileURL(id, "/timeline.json", si),
		FlameURL:    withQuery(profileURL(id, "", si), filterQuery(c)),
	}
	for _, k := range flame.FilterParams {
		if v := c.QueryParam(k); v != "" {
			page.Hidden = append(page.Hidden, views.HiddenParam{Name: k, Value: v})
		}
	}
	// Always there: timeline.js sets it to the range it selects.
	page.Hidden = append(page.Hidden, views.HiddenParam{Name: "t", Value: c.QueryParam("t")})
	return Render(c, http.StatusOK, views.TimeOrder(page))
}

// handleTimeOrderJSON serves /p/ID/time.json?si=&t=&w=: the samples of
// the range t (the whole recording without it) per thread in time order,
// laid out for w columns (flame.TimeOrderView; no threads when the
// samples have no times). pprof's f, i, h and s filters apply.
func (s *Server) handleTimeOrderJSON(c echo.Context) error {
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	width := defaultTimeOrderWidth
	if w := c.QueryParam("w"); w != "" {
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 || n > flame.MaxTimeOrderWidth {
			return httpError(http.StatusBadRequest, "w=%q is not a width: give the columns to lay the view out for, 1 to %d (w=1200)", w, flame.MaxTimeOrderWidth)
		}
		width = n
	}
	l, i, err := s.requestProfile(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	key := treeKey{id: l.ID, variant: l.Variant(), si: i, kind: "time/" + strconv.Itoa(width), filter: f.Key()}
	e, err := s.trees.Build(key, func() (*encoded, bool, error) {
		others := f
		others.Time = nil
		o, err := s.timeOrder(ctx, l, i, others)
		if err != nil {
			return nil, false, err
		}
		var body []byte
		if err := s.render(ctx, func(opt flame.Options) { body = o.View(f.Time, width, opt).JSON() }); err != nil {
			return nil, false, err
		}
		// Asked on a drag or click, as a zoom: compressing fast matters more.
		return &encoded{plain: body, gz: gzipLevel(body, gzip.BestSpeed), etag: treeETag(key, f)}, true, nil
	})
	if err != nil {
		return err
	}
	return serveEncoded(c, e, echo.MIMEApplicationJSON)
}

// timeOrder returns l's samples for sample index si after f (no time
// range) by thread and time, built once however many requests ask at the
// same time, within the rendering time limit (s.render).
func (s *Server) timeOrder(ctx context.Context, l *profiles.Loaded, si int, f flame.Filter) (*flame.TimeOrder, error) {
	key := treeKey{id: l.ID, variant: l.Variant(), si: si, kind: "timeorder", filter: f.Key()}
	return s.orders.Build(key, func() (*flame.TimeOrder, bool, error) {
		var o *flame.TimeOrder
		if err := s.render(ctx, func(opt flame.Options) {
			opt.Filter = f
			o = flame.NewTimeOrder(l.Profile, si, opt)
		}); err != nil {
			return nil, false, err
		}
		return o, true, nil
	})
}
