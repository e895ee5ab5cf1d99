package web

import (
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzhttp"
	"github.com/labstack/echo/v4"
)

// routes registers every route: the one place to add more. Handlers live in
// one file per feature (upload.go, flamepage.go, toppage.go, zoom.go,
// compare.go, source.go, types.go, symbolization.go, security.go, static.go,
// docs.go).
func (s *Server) routes() {
	e := s.e
	// Outermost: it renders the error the others return, as echo would.
	e.Use(compressOnce())
	s.useHardening(e) // request ID, recover, CSP, upload guard (security.go)
	e.Use(securityHeaders)

	e.GET("/", s.handleIndex)
	e.GET("/healthz", s.handleHealth)
	e.POST("/api/profiles", s.withUploadProgress(s.handleAPIUpload))
	e.GET("/api/uploads/:key/progress", s.handleUploadProgress) // an upload's progress, by its key (uploadprogress.go)
	e.POST("/upload", s.handleFormUpload)
	e.POST(OTLPPath, s.handleOTLP, s.otlpEnabled)  // serve --otlp (otlp.go)
	e.POST("/api/symbolize", s.handleSymbolizeAPI) // symbolizeapi.go
	// The Firefox Profiler's API (symbolicate.go), with CORS for profiler.firefox.com.
	e.Match([]string{http.MethodPost, http.MethodOptions}, "/symbolicate/v5", s.handleSymbolicateV5, symbolicateCORS)

	// OTLP profiles by service.name; a time range merged, redirected to
	// its /p/ID (services.go).
	e.GET("/services", s.handleServices)
	e.GET("/s/:service", s.handleServiceMerge)

	e.GET("/p/:id", s.handleFlamePage)
	e.GET("/p/:id/top", s.handleTop)
	e.GET("/p/:id/top.json", s.handleTopJSON) // the flame page's table and search share (zoom.go)
	e.GET("/p/:id/flame.json", s.handleFlameJSON)
	e.GET("/p/:id/flame.svg", s.handleFlameSVG)
	e.GET("/p/:id/timeline.json", s.handleTimelineJSON) // samples per thread over time; t= filters every view (timeline.go)
	e.GET("/p/:id/time", s.handleTimeOrderPage)         // each thread's stacks in time order (timeorder.go)
	e.GET("/p/:id/time.json", s.handleTimeOrderJSON)
	e.GET("/p/:id/profile.pb.gz", s.handleProfileDownload)
	// The profile in speedscope's format, which speedscope.app fetches,
	// and the flame page's link there (speedscopefile.go).
	e.GET("/p/:id/speedscope.json", s.handleSpeedscopeJSON, speedscopeCORS)
	e.GET("/p/:id/speedscope", s.handleOpenSpeedscope)
	// The profile in the Firefox Profiler's processed format, which
	// profiler.firefox.com fetches, and the flame page's link there
	// (firefoxfile.go).
	e.GET("/p/:id/firefox.json", s.handleFirefoxJSON, firefoxCORS)
	e.GET("/p/:id/firefox", s.handleOpenFirefox)
	e.GET("/p/:id/warnings.json", s.handleWarningsJSON) // what the conversion skipped or cut, as every page lists it (warnings.go)
	// Data types (datatypes.go).
	e.GET("/p/:id/types", s.handleTypesPage)
	e.GET("/p/:id/types.json", s.handleTypesJSON)
	e.GET("/p/:id/types/flame", s.handleTypesFlamePage)
	e.GET("/p/:id/types/flame.json", s.handleTypesFlameJSON)
	e.GET("/p/:id/types/top.json", s.handleTypesTopJSON)
	// The annotate view (annotate.go).
	e.GET("/p/:id/annotate", s.handleAnnotatePage)
	e.GET("/p/:id/annotate.json", s.handleAnnotateJSON)
	// Filters' compare picker, diff, sandwich (compare.go); source (source.go).
	e.GET("/p/:id/compare", s.handleCompare)
	e.GET("/api/recent", s.handleRecent) // the compare picker's list (recent.go); a listing: the token when set
	e.GET("/p/:base/diff/:id", s.handleDiffPage)
	e.GET("/p/:base/diff/:id/diff.json", s.handleDiffJSON)
	e.GET("/p/:id/sandwich", s.handleSandwichPage)
	e.GET("/p/:id/sandwich.json", s.handleSandwichJSON)
	e.GET("/p/:id/source", s.handleSource)
	// On-demand symbolization (symbolization.go). Routes that answer JSON
	// but whose paths don't say so are in jsonPaths: their errors are JSON
	// too (render.go).
	e.GET("/p/:id/events", s.handleSymbolizationEvents)
	e.GET("/p/:id/symbolization", s.handleSymbolizationStatus)
	e.POST("/p/:id/symbolize/skip", s.handleSymbolizationSkip)
	e.POST("/p/:id/symbolize/disable", s.handleSymbolizationDisable)
	e.POST("/p/:id/symbolize/retry", s.handleSymbolizationRetry)

	// debuginfod server and debug file uploads (web/debuginfod.go).
	e.Match(readMethods, "/buildid/:id/:kind", s.handleBuildID) // debuginfo, executable
	e.Match(readMethods, "/buildid/:id/source/*", s.handleBuildIDSource)
	e.Match(readMethods, "/buildid/:id/section/:name", s.handleBuildIDSection)
	e.PUT("/buildid/:id/:kind", s.handleBuildIDPut) // debuginfo, executable, sources
	e.POST("/api/debuginfo", s.handleDebuginfoUpload)
	e.GET("/debuginfo", s.handleDebuginfoIndex)
	e.GET("/metrics", s.handleMetrics)

	e.GET("/static/*", s.handleStatic)
	e.GET("/favicon.ico", s.handleFavicon)
	// The manual (docs.go): static/docs rendered in the site's layout.
	e.GET("/docs/", s.handleDocs)
	e.GET("/docs/:page", s.handleDocs)
	e.GET("/docs", s.handleDocsRoot)
	e.GET("/README.md", s.handleDocsRoot) // linked by the pages before the manual
	// The upload token's login (security.go).
	e.GET("/login", s.handleLoginPage)
	e.POST("/login", newLoginBackoff(s.clientAddr).guard(s.handleLogin))
}

// compressOnce gzips responses of 1 KiB or more for clients that accept it,
// by one rule: a response that sets its own Content-Encoding (flame.json,
// diff.json and the other cached bodies, gzipped once when built) is passed
// through as it is. Event streams are never buffered or compressed, and
// gzip files (profile.pb.gz) are not compressed again (gzhttp's content
// type filter). It is the outermost middleware: the error the chain returns
// is rendered inside the wrapper, so error pages follow the same rule.
func compressOnce() echo.MiddlewareFunc {
	wrap, err := gzhttp.NewWrapper(
		gzhttp.MinSize(1024),
		gzhttp.EnableZstd(false), // one coding, as serveEncoded negotiates
		gzhttp.ContentTypeFilter(func(ct string) bool {
			return gzhttp.DefaultContentTypeFilter(ct) && !strings.HasPrefix(ct, "text/event-stream") &&
				ct != "application/octet-stream" // debug files: sent as is, as debuginfod does, Range intact
		}),
	)
	if err != nil {
		panic(err) // only from invalid constant options
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			res := c.Response()
			orig := res.Writer
			defer func() { res.Writer = orig }()
			wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res.Writer = w
				c.SetRequest(r)
				if err := next(c); err != nil {
					c.Error(err)
				}
			})).ServeHTTP(orig, c.Request())
			return nil
		}
	}
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
