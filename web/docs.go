package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"viewer/views"
	"viewer/web/manual"
)

// handleDocs serves a page of the manual (package manual renders the
// markdown of static/docs) in the site's layout, with the manual's menu.
func (s *Server) handleDocs(c echo.Context) error {
	name := c.Param("page")
	if route := strings.TrimSuffix(name, ".md"); route != name || route == "README" {
		// A file name as GitHub links it (the index is README.md): its route.
		if route == "README" {
			route = ""
		}
		return c.Redirect(http.StatusMovedPermanently, manual.Root+route)
	}
	m, err := manual.Load()
	if err != nil {
		return err
	}
	p, ok := m.Page(name)
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "The manual has no page "+name+": its pages are listed at "+manual.Root)
	}
	menu := make([]views.NavLink, len(m.Pages))
	for i, q := range m.Pages {
		menu[i] = views.NavLink{Label: q.Label, Href: q.URL(), Active: q == p}
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=3600")
	return Render(c, http.StatusOK, views.Docs(views.DocsPage{
		Page: views.Page{Title: p.Title},
		Menu: menu,
		Body: p.HTML,
	}))
}

// handleDocsRoot sends /docs and the old /README.md (which the pages linked
// before the manual) to the manual's index.
func (s *Server) handleDocsRoot(c echo.Context) error {
	return c.Redirect(http.StatusMovedPermanently, manual.Root)
}
