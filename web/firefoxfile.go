package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"viewer/web/firefoxprofile"
)

// FirefoxProfilerOrigin is the Firefox Profiler's web app, which the flame
// page's "Open in Firefox Profiler" link opens at from-url/ naming
// /p/ID/firefox.json: the app fetches it from the browser, so that route
// answers it with CORS.
const FirefoxProfilerOrigin = "https://profiler.firefox.com"

// firefoxCORS marks /p/ID/firefox.json readable by the Firefox Profiler.
// Like the profile's own link, it needs no token.
var firefoxCORS = middleware.CORSWithConfig(middleware.CORSConfig{
	AllowOrigins: []string{FirefoxProfilerOrigin},
	AllowMethods: []string{http.MethodGet},
	MaxAge:       86400,
})

// handleFirefoxJSON answers /p/ID/firefox.json: the profile's samples of
// one sample type (?si=, else the default) in the Firefox Profiler's
// processed format (package web/firefoxprofile), its unnamed frames
// given by library and breakpad ID for the symbol server to name.
func (s *Server) handleFirefoxJSON(c echo.Context) error {
	l, si, err := s.requestProfile(c)
	if err != nil {
		return err
	}
	id := c.Param("id")
	name := displayName(l.Meta, id)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	file := strings.NewReplacer(`"`, "", "\n", "", "\r", "", "/", "_").Replace(strings.TrimSuffix(name, ".gz")) + ".firefox.json"
	h.Set(echo.HeaderContentDisposition, `inline; filename="`+file+`"`)
	err = firefoxprofile.Write(c.Response(), l.Profile, firefoxprofile.Options{Name: name, SampleIndex: si, BreakpadID: BreakpadID})
	if errors.Is(err, firefoxprofile.ErrNoSamples) {
		h.Del(echo.HeaderContentDisposition)
		return httpError(http.StatusUnprocessableEntity, "%v: the Firefox Profiler would show nothing", err)
	}
	return err
}

// firefoxLink is the flame page's "Open in Firefox Profiler" link to
// /p/ID/firefox (handleOpenFirefox), with the page's ?si=, or "" where the
// app could not fetch the file (speedscopeCanFetch: the same mixed-content
// rule as speedscope's app).
func firefoxLink(c echo.Context, id, si string) string {
	if !speedscopeCanFetch(c) {
		return ""
	}
	link := "/p/" + id + "/firefox"
	if si != "" {
		link += "?si=" + url.QueryEscape(si)
	}
	return link
}

// handleOpenFirefox redirects to the Firefox Profiler's from-url/ page
// naming this profile's firefox.json by the absolute URL the request was
// made to, with this server as its symbol server (symbolServer=, to which
// the app posts /symbolicate/v5 requests).
func (s *Server) handleOpenFirefox(c echo.Context) error {
	id := c.Param("id")
	if _, err := s.Meta(c.Request().Context(), id); err != nil {
		return err
	}
	if !speedscopeCanFetch(c) {
		return httpError(http.StatusConflict, "profiler.firefox.com (an HTTPS page) cannot fetch this server's http:// URLs: open viewer by https, or as localhost, "+
			"or download /p/%s/firefox.json and load the file in the Firefox Profiler", id)
	}
	return c.Redirect(http.StatusSeeOther, FirefoxProfilerURL(c.Scheme()+"://"+c.Request().Host, id, c.QueryParam("si")))
}

// FirefoxProfilerURL is the Firefox Profiler's page that loads profile id
// of the viewer server at base (scheme://host) from its firefox.json (of
// sample type si, "" for the default), with base as the symbol server.
func FirefoxProfilerURL(base, id, si string) string {
	file := base + "/p/" + id + "/firefox.json"
	if si != "" {
		file += "?si=" + url.QueryEscape(si)
	}
	return FirefoxProfilerOrigin + "/from-url/" + url.PathEscape(file) + "/?symbolServer=" + url.QueryEscape(base)
}
