package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
)

// contentSecurityPolicy is sent with every response (flame.svg narrows it
// further): scripts, styles and connections only from this server, no
// inline script or style element, no plugins, no framing. JSON handed to
// scripts sits in <script type="application/json">, which is data, not
// script.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"font-src 'self'; connect-src 'self'; manifest-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// tokenCookie holds the SHA-256 of the upload token after /login, so a
// browser can upload through the form without the token being stored in
// the clear.
const tokenCookie = "viewer_upload"

// useHardening installs the middleware every request passes through, outermost
// first: a request ID, panic recovery, security headers, and the upload
// guard (token, concurrency, full disk). The /login routes are in routes.go.
func (s *Server) useHardening(e *echo.Echo) {
	slots := newUploadSlots(s.cfg.Limits)
	e.Use(requestID, s.recoverPanics, hardenHeaders, s.checkHost, s.guardUploads(slots)) // checkHost: hosts.go
}

// Login backoff: after loginFreeFailures wrong tokens from one client
// address, each further one makes that address wait twice as long (from
// 1 s, at most loginMaxWait) before /login answers it again. The peer's
// own address (a proxy's, or 127.0.0.1 for every local user, who could
// also forge X-Forwarded-For) has loginPeerFreeFailures.
const (
	loginFreeFailures     = 5
	loginPeerFreeFailures = 100
	loginMaxWait          = 5 * time.Minute
	loginMaxClients       = 10000 // addresses tracked; expired ones go first
)

// loginBackoff counts /login failures per client address (client:
// Server.clientAddr) and per peer address.
type loginBackoff struct {
	mu      sync.Mutex
	clients map[string]*loginFailures
	now     func() time.Time
	client  func(*http.Request) string
}

// keys are the counters a request's failures go to, with the failures
// each allows before waits begin.
func (lb *loginBackoff) keys(r *http.Request) map[string]int {
	keys := map[string]int{"client " + lb.client(r): loginFreeFailures}
	peer, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		peer = r.RemoteAddr
	}
	if k := "peer " + peer; keys["client "+peer] == 0 {
		keys[k] = loginPeerFreeFailures
	}
	return keys
}

type loginFailures struct {
	n     int
	until time.Time // no attempt answered before
	last  time.Time
}

func newLoginBackoff(client func(*http.Request) string) *loginBackoff {
	return &loginBackoff{clients: map[string]*loginFailures{}, now: time.Now, client: client}
}

// guard answers 429 with Retry-After to a client that must wait, and
// counts the failures (401s) of login.
func (lb *loginBackoff) guard(login echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		keys := lb.keys(c.Request())
		var wait time.Duration
		for k := range keys {
			wait = max(wait, lb.wait(k))
		}
		if wait > 0 {
			secs := int((wait + time.Second - 1) / time.Second)
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return httpError(http.StatusTooManyRequests,
				"too many wrong tokens from this address: wait %d s before signing in again", secs)
		}
		err := login(c)
		var he *echo.HTTPError
		for k, free := range keys {
			if errors.As(err, &he) && he.Code == http.StatusUnauthorized {
				lb.fail(k, free)
			} else if err == nil {
				lb.reset(k)
			}
		}
		return err
	}
}

func (lb *loginBackoff) wait(addr string) time.Duration {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if f := lb.clients[addr]; f != nil {
		return f.until.Sub(lb.now())
	}
	return 0
}

func (lb *loginBackoff) fail(addr string, free int) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	now := lb.now()
	f := lb.clients[addr]
	if f == nil {
		if len(lb.clients) >= loginMaxClients {
			lb.pruneLocked(now)
		}
		f = &loginFailures{}
		lb.clients[addr] = f
	}
	f.n++
	f.last = now
	if f.n > free {
		wait := loginMaxWait
		if k := f.n - free - 1; k < 20 {
			wait = min(time.Second<<k, loginMaxWait)
		}
		f.until = now.Add(wait)
	}
}

func (lb *loginBackoff) reset(addr string) {
	lb.mu.Lock()
	delete(lb.clients, addr)
	lb.mu.Unlock()
}

// pruneLocked forgets addresses whose wait is over and that failed no
// more than loginMaxWait ago, then, if still full, the oldest.
func (lb *loginBackoff) pruneLocked(now time.Time) {
	for a, f := range lb.clients {
		if now.After(f.until) && now.Sub(f.last) > loginMaxWait {
			delete(lb.clients, a)
		}
	}
	for len(lb.clients) >= loginMaxClients {
		var oldest string
		var t time.Time
		for a, f := range lb.clients {
			if oldest == "" || f.last.Before(t) {
				oldest, t = a, f.last
			}
		}
		delete(lb.clients, oldest)
	}
}

// requestID gives each request a fresh random ID, sent back as X-Request-Id
// and logged with any failure. A client's own X-Request-Id is not trusted.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var b [8]byte
		rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		c.Request().Header.Set(echo.HeaderXRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// reqID is the request's ID set by requestID.
func reqID(c echo.Context) string { return c.Response().Header().Get(echo.HeaderXRequestID) }

// recoverPanics turns a panic in a handler into a 500 for that request only,
// logged with the request ID and stack.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler {
				panic(r)
			}
			id := reqID(c)
			s.log.Error("panic serving request", "request_id", id, "method", c.Request().Method,
				"path", c.Request().URL.Path, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = httpError(http.StatusInternalServerError,
				"internal server error: the server failed on this request and logged it as request %s", id)
		}()
		return next(c)
	}
}

// hardenHeaders sets the headers that keep pages from being framed, leaking
// their URL or running anything but this server's own scripts. No CORS
// header is ever set, so other origins cannot read responses.
func hardenHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), interest-cohort=()")
		return next(c)
	}
}

// isUpload reports whether the request stores a profile.
func isUpload(c echo.Context) bool {
	if isDebuginfoUpload(c) { // debug files (debuginfod.go)
		return true
	}
	if c.Request().Method != http.MethodPost {
		return false
	}
	p := c.Path()
	return p == "/api/profiles" || p == "/upload" || p == OTLPPath
}

// isSymbolAPI reports whether the request asks the symbolization APIs,
// which need the token when one is set, as uploads do.
func isSymbolAPI(c echo.Context) bool {
	p := c.Path()
	return c.Request().Method == http.MethodPost && (p == "/api/symbolize" || p == "/symbolicate/v5")
}

// isListing reports whether the request lists profiles (their links are
// what a token-less visitor must not learn): the services page, the
// debug file index and the recent uploads, which need the token when one
// is set.
func isListing(c echo.Context) bool {
	p := c.Path()
	return p == "/services" || p == "/debuginfo" || p == "/api/recent"
}

// isControl reports whether the request changes a symbolization run
// (skip, disable, retry), which needs the token when one is set.
func isControl(c echo.Context) bool {
	return c.Request().Method == http.MethodPost && strings.HasPrefix(c.Path(), "/p/:id/symbolize/")
}

// guardUploads refuses uploads from another origin's page, checks the
// token of uploads and symbolization controls, bounds concurrent uploads,
// and answers 507 when the store's disk is full.
func (s *Server) guardUploads(slots *uploadSlots) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		limited := slots.limit(next)
		return func(c echo.Context) error {
			if isControl(c) && !s.authorized(c) {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="viewer"`)
				return httpError(http.StatusUnauthorized,
					"skip, disable and retry on this server need its token: send Authorization: Bearer TOKEN, or sign in at /login")
			}
			if isSymbolAPI(c) && !s.authorized(c) {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="viewer"`)
				return httpError(http.StatusUnauthorized,
					"the symbolization API on this server needs its token (it may make the server fetch debug info): send Authorization: Bearer TOKEN")
			}
			// A CORS-simple POST: any page could make the server fetch
			// from debuginfod. /symbolicate/v5 keeps its one allowed
			// origin (symbolicateCORS).
			if isSymbolAPI(c) && c.Path() == "/api/symbolize" && sameOrigin(c) != nil {
				return httpError(http.StatusForbidden,
					"symbolization request refused: it comes from another site's page; call /api/symbolize with curl or a program, or from this server's own page")
			}
			if isListing(c) && !s.authorized(c) {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="viewer"`)
				return httpError(http.StatusUnauthorized,
					"this list of profiles needs the server's token (a profile's own link needs none): send Authorization: Bearer TOKEN, or sign in at /login")
			}
			if isSymbolAPI(c) {
				// Its body is read before its turn (readAPIBody), as
				// uploads are read: at --upload-min-rate.
				return limited(c)
			}
			if !isUpload(c) {
				return next(c)
			}
			if err := sameOrigin(c); err != nil {
				return httpError(http.StatusForbidden,
					"upload refused: it comes from another site's page; upload from this server's own page, or with curl or viewer upload")
			}
			if !s.authorized(c) {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="viewer uploads"`)
				return httpError(http.StatusUnauthorized,
					"uploads to this server need its token: send Authorization: Bearer TOKEN (viewer upload --token, or $VIEWER_TOKEN), or sign in at /login to upload from the browser")
			}
			err := limited(c)
			if err != nil && diskFull(err) {
				s.log.Error("upload not stored: disk full", "request_id", reqID(c), "err", err)
				return httpError(http.StatusInsufficientStorage,
					"the server's disk is full, so the profile was not stored; try again after its operator frees space")
			}
			return err
		}
	}
}

// diskFull reports whether err comes from a full disk or exhausted quota.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// authorized reports whether the request may upload: always when no token
// is configured, else with the bearer token or the /login cookie.
func (s *Server) authorized(c echo.Context) bool {
	want := s.cfg.AuthToken
	if want == "" {
		return true
	}
	if a := c.Request().Header.Get(echo.HeaderAuthorization); a != "" {
		scheme, tok, ok := strings.Cut(a, " ")
		return ok && strings.EqualFold(scheme, "Bearer") &&
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(want)) == 1
	}
	if ck, err := c.Cookie(tokenCookie); err == nil {
		return subtle.ConstantTimeCompare([]byte(ck.Value), []byte(tokenDigest(want))) == 1
	}
	return false
}

func tokenDigest(tok string) string {
	sum := sha256.Sum256([]byte("viewer upload token\x00" + tok))
	return hex.EncodeToString(sum[:])
}

// loginPage is the form that lets a browser upload to a server with a
// token. It is static: nothing from the request is written into it.
const loginPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in to upload · viewer</title><link rel="stylesheet" href="/static/style.css"></head>
<body><main><h1>Sign in to upload</h1>
<p>This server needs its upload token to accept profiles. Links to profiles work without it.</p>
<form method="post" action="/login"><label>Upload token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form></main></body></html>
`

func (s *Server) handleLoginPage(c echo.Context) error {
	return c.HTML(http.StatusOK, loginPage)
}

// handleLogin checks the posted token and sets a cookie holding its digest
// (HttpOnly, SameSite=Strict, so other sites cannot upload in the user's
// name), then goes to the upload page.
func (s *Server) handleLogin(c echo.Context) error {
	if s.cfg.AuthToken == "" {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	tok := strings.TrimSpace(c.FormValue("token"))
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AuthToken)) != 1 {
		return httpError(http.StatusUnauthorized, "wrong upload token; ask the server's operator for it")
	}
	c.SetCookie(&http.Cookie{
		Name: tokenCookie, Value: tokenDigest(s.cfg.AuthToken), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Scheme() == "https",
		MaxAge: 30 * 24 * 3600,
	})
	return c.Redirect(http.StatusSeeOther, "/")
}
