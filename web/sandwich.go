package web

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"viewer/views"
	"viewer/web/flame"
)

// handleSandwichJSON serves /p/ID/sandwich.json?fn=NAME: the function's
// merged callers and callees, built on the server from every sample so
// that frames merged away in flame.json still count (format in README).
func (s *Server) handleSandwichJSON(c echo.Context) error {
	fn := c.QueryParam("fn")
	if fn == "" {
		return httpError(http.StatusBadRequest, "fn is missing: give the function name, as the flame graph shows it")
	}
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	l, err := s.Profile(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	i, err := resolveSI(l.Meta, c.QueryParam("si"))
	if err != nil {
		return err
	}
	k := treeKey{id: l.ID, variant: l.variant(), si: i, kind: "sandwich\x00" + fn, filter: f.Key()}
	if e, ok := s.trees.Get(k); ok {
		return serveEncoded(c, e, echo.MIMEApplicationJSON)
	}
	v, err, _ := s.flight.Do(fmt.Sprintf("sandwich:%#v", k), func() (any, error) {
		var body []byte
		if err := s.render(c.Request().Context(), func(opt flame.Options) {
			opt.MinFraction, opt.Filter = flame.DefaultMinFraction, f
			body = flame.BuildSandwich(l.Profile, i, fn, opt).JSON()
		}); err != nil {
			return nil, err
		}
		e := &encoded{plain: body, gz: gzipBytes(body), etag: fmt.Sprintf(`"sw-%s-%s-%d-%x%s"`, l.ID, l.variant(), i, fnHash(fn), filterETag(f))}
		s.trees.Add(k, e)
		return e, nil
	})
	if err != nil {
		return err
	}
	return serveEncoded(c, v.(*encoded), echo.MIMEApplicationJSON)
}

func fnHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

func (s *Server) handleSandwichPage(c echo.Context) error {
	id := c.Param("id")
	fn := c.QueryParam("fn")
	if fn == "" {
		return httpError(http.StatusBadRequest, "fn is missing: give the function name, as the flame graph shows it")
	}
	if _, err := queryFilter(c); err != nil {
		return err
	}
	m, i, err := s.pageMeta(c, id)
	if err != nil {
		return err
	}
	si := m.SampleTypes[i].Type
	q := filterQuery(c)
	data := url.Values{"fn": {fn}, "si": {si}}
	for k, v := range q {
		data[k] = v
	}
	page := views.SandwichPage{
		Page:        views.Page{Title: displayName(m, id) + " · " + fn, Nav: nav(id, c.QueryParam("si"), "")},
		ID:          id,
		Fn:          fn,
		DataURL:     "/p/" + id + "/sandwich.json?" + data.Encode(),
		FlameURL:    withQuery(profileURL(id, "", si), q),
		SourceURL:   "/p/" + id + "/source?" + url.Values{"fn": {fn}, "si": {si}}.Encode(),
		SampleTypes: sampleTypes(m, i),
		SI:          si,
		Filter: views.FilterBar{
			Action: "/p/" + id + "/sandwich", SI: c.QueryParam("si"), Keep: [][2]string{{"fn", fn}},
			F: c.QueryParam("f"), I: c.QueryParam("i"), H: c.QueryParam("h"), S: c.QueryParam("s"),
		},
	}
	return Render(c, http.StatusOK, views.Sandwich(page))
}
