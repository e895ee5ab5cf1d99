package web

import (
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// routes registers every route: the one place to add more (symbolization
// events, the data-type page).
func (s *Server) routes() {
	e := s.e
	s.useHardening(e) // request ID, recover, CSP, upload guard (security.go)
	e.Use(securityHeaders)
	e.Use(middleware.GzipWithConfig(middleware.GzipConfig{
		MinLength: 1024,
		Skipper:   skipGzip,
	}))

	e.GET("/", s.handleIndex)
	e.GET("/healthz", s.handleHealth)
	e.POST("/api/profiles", s.handleAPIUpload)
	e.POST("/upload", s.handleFormUpload)

	e.GET("/p/:id", s.handleFlamePage)
	e.GET("/p/:id/top", s.handleTop)
	e.GET("/p/:id/top.json", s.handleTopJSON) // the flame page's table and search share (zoom.go)
	e.GET("/p/:id/flame.json", s.handleFlameJSON)
	e.GET("/p/:id/flame.svg", s.handleFlameSVG)
	e.GET("/p/:id/profile.pb.gz", s.handleProfileDownload)
	s.registerTypes() // /p/:id/types, /p/:id/types.json (web/types.go)
	// Filters' compare picker, diff, sandwich, source (web/diff.go).
	s.registerCompare()
	// On-demand symbolization (web/symbolization.go).
	e.GET("/p/:id/events", s.handleSymbolizationEvents)
	e.GET("/p/:id/symbolization", s.handleSymbolizationStatus)
	e.POST("/p/:id/symbolize/skip", s.handleSymbolizationSkip)
	e.POST("/p/:id/symbolize/disable", s.handleSymbolizationDisable)
	e.POST("/p/:id/symbolize/retry", s.handleSymbolizationRetry)

	e.GET("/static/*", s.handleStatic)
	e.GET("/favicon.ico", s.handleFavicon)
}

// skipGzip leaves alone responses that are already compressed (flame.json
// and flame.svg are gzipped once and cached; profile.pb.gz is gzip) and
// event streams.
func skipGzip(c echo.Context) bool {
	p := c.Path()
	return strings.HasSuffix(p, "/flame.json") || strings.HasSuffix(p, "/flame.svg") ||
		strings.HasSuffix(p, ".gz") || strings.HasSuffix(p, "/events")
}

// securityHeaders keeps browsers from sniffing uploaded content into
// something executable, and keeps the standalone SVG inert.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if strings.HasSuffix(c.Path(), "/flame.svg") {
			h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		}
		return next(c)
	}
}
