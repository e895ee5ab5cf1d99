package web

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"viewer/views"
	"viewer/web/profiles"
)

// Warnings returns what the conversion of profile id skipped, cut or could
// not do (profiles.Meta.Warnings): what its pages show under the header,
// warnings.json lists and the CLI prints. A meta.json written before
// warnings were kept has them read from the loaded profile.
func (s *Server) Warnings(ctx context.Context, id string) (views.Warnings, error) {
	m, err := s.Meta(ctx, id)
	if err != nil {
		return views.Warnings{}, err
	}
	return s.warningsOf(ctx, id, m)
}

func (s *Server) warningsOf(ctx context.Context, id string, m *profiles.Meta) (views.Warnings, error) {
	if m.Warnings == nil {
		l, err := s.Profile(ctx, id)
		if err != nil {
			return views.Warnings{}, err
		}
		m = l.Meta // profiles.Service.load fills them in
	}
	return views.Warnings{List: m.Warnings, Omitted: m.WarningsOmitted}, nil
}

// profilePage is the layout model of a page of profile id, of meta m:
// title, header links and the profile's warnings. A profile whose
// warnings cannot be read (a meta.json from before they were kept, whose
// profile does not load) gets its page without them, and the error logged:
// the page's own data requests report the error.
func (s *Server) profilePage(c echo.Context, id string, m *profiles.Meta, title string, nav []views.NavLink) views.Page {
	w, err := s.warningsOf(c.Request().Context(), id, m)
	if err != nil {
		s.log.Error("reading a profile's warnings", "request_id", reqID(c), "id", id, "err", err)
	}
	return views.Page{Title: title, Nav: nav, Warnings: w}
}

// withHelp is page p linking the manual's section at help (a /docs/ URL)
// that explains it.
func withHelp(p views.Page, help string) views.Page {
	p.Help = help
	return p
}

// diffPage is profilePage for the diff of profile id against baseID: the
// warnings of both, each named by its profile, as both make the numbers.
func (s *Server) diffPage(c echo.Context, baseID string, bm *profiles.Meta, id string, m *profiles.Meta, title string, nav []views.NavLink) views.Page {
	p := s.profilePage(c, id, m, title, nav)
	if baseID == id {
		return p
	}
	base := s.profilePage(c, baseID, bm, "", nil).Warnings
	list := make([]string, 0, len(p.Warnings.List)+len(base.List))
	for _, w := range p.Warnings.List {
		list = append(list, "new profile "+displayName(m, id)+": "+w)
	}
	for _, w := range base.List {
		list = append(list, "base profile "+displayName(bm, baseID)+": "+w)
	}
	p.Warnings = views.Warnings{List: list, Omitted: p.Warnings.Omitted + base.Omitted}
	return p
}

// warningsJSON is the warnings.json encoding (static/docs/pages.md, "Warnings").
type warningsJSON struct {
	Version  int      `json:"version"`
	Count    int      `json:"count"`    // every warning, listed or not
	Warnings []string `json:"warnings"` // at most profiles.MaxMetaWarnings
	Omitted  int      `json:"omitted"`  // count - len(warnings)
}

// handleWarningsJSON serves /p/ID/warnings.json: the profile's warnings,
// as its pages list them.
func (s *Server) handleWarningsJSON(c echo.Context) error {
	w, err := s.Warnings(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	out := warningsJSON{Version: 1, Count: w.Count(), Warnings: w.List, Omitted: w.Omitted}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return c.JSON(http.StatusOK, out)
}
