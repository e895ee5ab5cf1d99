package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"viewer/web/speedscope"
)

// SpeedscopeOrigin is speedscope's web app, which the flame page's "Open
// in speedscope" link opens with #profileURL= naming /p/ID/speedscope.json:
// the app fetches it from the browser, so that route answers it with CORS.
const SpeedscopeOrigin = "https://www.speedscope.app"

// speedscopeCORS marks /p/ID/speedscope.json readable by speedscope's app.
// Like the profile's own link, it needs no token.
var speedscopeCORS = middleware.CORSWithConfig(middleware.CORSConfig{
	AllowOrigins: []string{SpeedscopeOrigin},
	AllowMethods: []string{http.MethodGet},
	MaxAge:       86400,
})

// handleSpeedscopeJSON answers /p/ID/speedscope.json: the whole profile in
// speedscope's file format, a profile per sample type (package
// web/speedscope).
func (s *Server) handleSpeedscopeJSON(c echo.Context) error {
	id := c.Param("id")
	l, err := s.Profile(c.Request().Context(), id)
	if err != nil {
		return err
	}
	name := displayName(l.Meta, id)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	file := strings.NewReplacer(`"`, "", "\n", "", "\r", "", "/", "_").Replace(strings.TrimSuffix(name, ".gz")) + ".speedscope.json"
	h.Set(echo.HeaderContentDisposition, `inline; filename="`+file+`"`)
	// Write checks the profile before its first byte: an error here is
	// still the response's.
	err = speedscope.Write(c.Response(), l.Profile, name)
	if errors.Is(err, speedscope.ErrNoSamples) {
		h.Del(echo.HeaderContentDisposition)
		return httpError(http.StatusUnprocessableEntity, "%v: speedscope would show nothing", err)
	}
	return err
}

// speedscopeLink is the flame page's "Open in speedscope" link to
// /p/ID/speedscope (handleOpenSpeedscope), or "" where speedscope's app
// could not fetch the file: a page served by plain HTTP from another
// machine than the browser's, as the app's page is HTTPS and browsers
// block its fetches of http:// URLs (mixed content) but those of
// localhost and loopback addresses. The link is relative, so that the
// page is the same whatever port or name it was asked by.
func speedscopeLink(c echo.Context, id string) string {
	if !speedscopeCanFetch(c) {
		return ""
	}
	return "/p/" + id + "/speedscope"
}

func speedscopeCanFetch(c echo.Context) bool {
	return c.Scheme() == "https" || loopbackHostPort(c.Request().Host)
}

// handleOpenSpeedscope redirects to speedscope's app with #profileURL=
// naming this profile's speedscope.json by the absolute URL the request
// was made to, which the app then fetches from the browser.
func (s *Server) handleOpenSpeedscope(c echo.Context) error {
	id := c.Param("id")
	m, err := s.Meta(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if !speedscopeCanFetch(c) {
		return httpError(http.StatusConflict, "speedscope.app (an HTTPS page) cannot fetch this server's http:// URLs: open viewer by https, or as localhost, "+
			"or download /p/%s/speedscope.json and open the file in speedscope", id)
	}
	file := c.Scheme() + "://" + c.Request().Host + "/p/" + id + "/speedscope.json"
	return c.Redirect(http.StatusSeeOther, SpeedscopeOrigin+"/#profileURL="+url.QueryEscape(file)+"&title="+url.QueryEscape(displayName(m, id)))
}
