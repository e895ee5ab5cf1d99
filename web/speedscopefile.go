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

// speedscopeLink is the flame page's link that opens profile id in
// speedscope's app, which fetches its speedscope.json from this server
// (by the host the page was asked for). It is empty for a page served by
// plain HTTP from another machine than the browser's: the app's page is
// HTTPS, and browsers block its fetches of http:// URLs (mixed content)
// but those of localhost and loopback addresses.
func speedscopeLink(c echo.Context, id, name string) string {
	if c.Scheme() != "https" && !loopbackHostPort(c.Request().Host) {
		return ""
	}
	file := c.Scheme() + "://" + c.Request().Host + "/p/" + id + "/speedscope.json"
	return SpeedscopeOrigin + "/#profileURL=" + url.QueryEscape(file) + "&title=" + url.QueryEscape(name)
}
