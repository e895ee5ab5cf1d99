package web

import (
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// LoopbackOnly reports whether a server listening on addr (host:port, as
// serve's --addr) is reachable from this machine only: its host is
// localhost or a loopback address.
func LoopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return loopbackName(host)
}

// loopbackName reports whether host (no port; brackets allowed) names this
// machine by itself: localhost or an address of 127.0.0.0/8 or ::1. A name
// a DNS server answers with 127.0.0.1 does not count: that is what DNS
// rebinding makes of an attacker's name.
func loopbackName(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHostPort is loopbackName for a host:port (or a bare host).
func loopbackHostPort(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return loopbackName(host)
}

// checkHost refuses, on a server listening on loopback only and not
// BehindProxy, every request whose Host names something else than this
// machine (localhost or a loopback address, which the --addr host is
// one of): a web page
// that rebinds its own name to 127.0.0.1 (DNS rebinding) is then answered
// 421 on every route instead of reading profiles, /debuginfo and /services
// or uploading with a matching Origin. A server reachable from elsewhere,
// or through a proxy, is addressed by names of its own and is not checked.
// A request without Host (HTTP/1.0) names nothing to rebind and passes.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	addr := s.cfg.Addr
	if s.cfg.BehindProxy || !LoopbackOnly(addr) {
		return next
	}
	return func(c echo.Context) error {
		h := c.Request().Host
		if h == "" || loopbackHostPort(h) {
			return next(c)
		}
		return httpError(http.StatusMisdirectedRequest,
			"this server listens on loopback only (--addr %s) and answers requests addressed to localhost or a loopback address, not to %q: "+
				"a web page may have pointed that name at this machine (DNS rebinding). Open it as localhost or 127.0.0.1 with the same port; "+
				"if a reverse proxy forwards that name to it, restart viewer with --behind-proxy", addr, h)
	}
}

// clientAddr is the address a request comes from, for per-client bounds
// (event streams, upload progress, /login failures): the peer's IP, or,
// with BehindProxy and a peer on this machine (the proxy), the address it
// appended to X-Forwarded-For. Without BehindProxy the header is anyone's
// to write, and one client would be a new one per request.
func (s *Server) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !s.cfg.BehindProxy {
		return host
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			parts := strings.Split(xff[len(xff)-1], ",")
			if last := strings.TrimSpace(parts[len(parts)-1]); net.ParseIP(last) != nil {
				return last
			}
		}
	}
	return host
}

// localRequest reports whether the request came straight from this machine:
// a loopback peer, a loopback Host (not a name rebound to 127.0.0.1 by a
// web page's DNS: the check checkHost makes of every request on a loopback
// server) and no header a reverse proxy adds. Reading files a profile
// names (the source view) is allowed only then, since behind a proxy the
// uploader is someone else.
func localRequest(c echo.Context) bool {
	r := c.Request()
	for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Real-Ip", "X-Forwarded-Host", "Via"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	return loopbackHostPort(r.Host) && loopbackHostPort(r.RemoteAddr)
}
