package web

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"viewer/static"
	"viewer/views"
)

// Render renders t into a buffer and only then writes it with status, so a
// template error becomes a clean 500 rather than half a page. The pages
// learn the embedded scripts' imports (static.Imports) from the context,
// for their modulepreload links.
func Render(c echo.Context, status int, t templ.Component) error {
	var buf bytes.Buffer
	if err := t.Render(views.WithModuleGraph(c.Request().Context(), static.Imports), &buf); err != nil {
		return fmt.Errorf("rendering %s: %w", c.Path(), err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// httpError is an error with the status and the message shown to the user.
func httpError(status int, format string, args ...any) *echo.HTTPError {
	return echo.NewHTTPError(status, fmt.Sprintf(format, args...))
}

// headedError is an HTTP error whose page heading names its cause (e.g.
// "These profiles cannot be compared") instead of a title for its status.
type headedError struct {
	heading string
	*echo.HTTPError
}

func (e *headedError) Unwrap() error { return e.HTTPError }

// withHeading gives err's error page the heading h.
func withHeading(h string, err *echo.HTTPError) error { return &headedError{h, err} }

// ErrorMessage is the message a user sees for err: an HTTP error's message
// without its status code, or err's text.
func ErrorMessage(err error) string {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return fmt.Sprint(he.Message)
	}
	return err.Error()
}

// jsonError is the body of a failed JSON request: the message a user
// sees, the status again, and the heading the HTML page would have.
type jsonError struct {
	Error   string `json:"error"`
	Status  int    `json:"status"`
	Heading string `json:"heading,omitempty"`
}

// jsonPaths are the routes (routes.go) whose answers are JSON but whose
// paths neither end in .json nor start with /api/: their errors are JSON
// too, those of the middleware before the handler (a missing token's 401)
// included, which is why the route's path says it and not a middleware
// of the route's own.
var jsonPaths = map[string]bool{
	"/symbolicate/v5":          true,
	"/p/:id/symbolization":     true,
	"/p/:id/symbolize/skip":    true,
	"/p/:id/symbolize/disable": true,
	"/p/:id/symbolize/retry":   true,
}

// answersJSON reports whether a failed request is answered in JSON: an
// API (under /api/, or in jsonPaths), a .json path, or a request
// whose Accept header prefers application/json to text/html.
func answersJSON(c echo.Context) bool {
	p := c.Request().URL.Path
	if strings.HasPrefix(p, "/api/") || strings.HasSuffix(p, ".json") || jsonPaths[c.Path()] {
		return true
	}
	return prefersJSON(c.Request().Header.Values(echo.HeaderAccept))
}

// prefersJSON reports whether the Accept header values name
// application/json with a quality above zero and at least text/html's
// (wildcards don't count: a browser's */* is not a request for JSON).
func prefersJSON(accept []string) bool {
	jsonQ, htmlQ := -1.0, -1.0
	for _, v := range accept {
		for _, r := range strings.Split(v, ",") {
			typ, params, _ := strings.Cut(r, ";")
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(v, 64); err == nil {
						q = f
					}
				}
			}
			switch strings.ToLower(strings.TrimSpace(typ)) {
			case echo.MIMEApplicationJSON:
				jsonQ = max(jsonQ, q)
			case "text/html":
				htmlQ = max(htmlQ, q)
			}
		}
	}
	return jsonQ > 0 && jsonQ >= htmlQ
}

// handleError answers every failed request: JSON {"error": …} to API and
// .json routes and to requests that ask for JSON (answersJSON), the HTML
// error page elsewhere. Unexpected errors are logged and shown as
// a generic 500.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := http.StatusInternalServerError, "internal server error"
	err = storeUnavailable(c, err) // 503 for an object store outage (replica.go)
	var he *echo.HTTPError
	if errors.As(err, &he) {
		status = he.Code
		if m, ok := he.Message.(string); ok {
			msg = m
		} else {
			msg = fmt.Sprint(he.Message)
		}
		if he.Internal != nil {
			s.log.Error("request failed", "request_id", reqID(c), "path", c.Request().URL.Path, "status", status, "err", he.Internal)
		}
	} else {
		s.log.Error("request failed", "request_id", reqID(c), "path", c.Request().URL.Path, "err", err)
	}
	if status == http.StatusNotFound && msg == "Not Found" {
		msg = "There is nothing at " + c.Request().URL.Path + "."
	}
	heading := ""
	var hd *headedError
	switch {
	case errors.As(err, &hd):
		heading = hd.heading
	case status == http.StatusBadRequest && !isUpload(c):
		heading = "That request could not be served" // not an upload: say what was wrong below
	}
	var werr error
	switch {
	case c.Request().Method == http.MethodHead:
		werr = c.NoContent(status)
	case c.Request().URL.Path == OTLPPath:
		werr = writeOTLPStatus(c, status, msg)
	case strings.HasPrefix(c.Request().URL.Path, "/buildid/"): // debuginfod clients and curl (debuginfod.go)
		werr = c.String(status, msg+"\n")
	case answersJSON(c):
		werr = c.JSON(status, jsonError{Error: msg, Status: status, Heading: heading})
	default:
		werr = Render(c, status, views.Error(views.ErrorPage{
			Page:    views.Page{Title: http.StatusText(status)},
			Status:  status,
			Message: msg,
			Heading: heading,
		}))
		if werr != nil {
			werr = c.String(status, msg)
		}
	}
	if werr != nil {
		s.log.Error("writing error response", "err", werr)
	}
}
