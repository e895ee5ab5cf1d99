package web

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"viewer/symbolize"
)

// Bounds of the debuginfod fetches the symbolization APIs (/api/symbolize,
// /symbolicate/v5) make for their callers, who need no token on a default
// server: one request naming 256 unknown build IDs made 512 upstream
// requests. A fetch the cache answers (downloaded, or known missing) is
// not counted; a fetch over a bound is not made, and its binary's reason
// names the bound.
const (
	// apiFetchesPerRequest bounds one request's fetches (each build ID
	// takes one or two: its debuginfo, then its executable).
	apiFetchesPerRequest = 64
	// apiFetchesPerClient and apiFetchRate bound one client's (by
	// address, as clientAddr tells them apart): a burst of that many,
	// then that many a second.
	apiFetchesPerClient = 128
	apiFetchRate        = 2
)

// clientFetches are the fetch budgets of the symbolization APIs' clients.
type clientFetches struct {
	mu      sync.Mutex
	clients map[string]*rate.Limiter
	pruned  time.Time
}

func newClientFetches() *clientFetches {
	return &clientFetches{clients: map[string]*rate.Limiter{}}
}

// limiter is client's budget; budgets back to full are dropped once a
// minute, so the map holds only clients seen lately.
func (cf *clientFetches) limiter(client string) *rate.Limiter {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if now := time.Now(); now.Sub(cf.pruned) > time.Minute {
		for k, l := range cf.clients {
			if l.TokensAt(now) >= apiFetchesPerClient {
				delete(cf.clients, k)
			}
		}
		cf.pruned = now
	}
	l := cf.clients[client]
	if l == nil {
		l = rate.NewLimiter(apiFetchRate, apiFetchesPerClient)
		cf.clients[client] = l
	}
	return l
}

// fetchQuota is the request's context carrying its fetch budget
// (symbolize.WithFetchQuota): apiFetchesPerRequest, and its client's.
func (s *Server) fetchQuota(c echo.Context) context.Context {
	client := s.clientAddr(c.Request())
	l := s.apiFetches.limiter(client)
	var made atomic.Int64
	return symbolize.WithFetchQuota(c.Request().Context(), func() error {
		if made.Add(1) > apiFetchesPerRequest {
			return fmt.Errorf("not fetched: this request already made its %d debuginfod fetches (at most %d per symbolization API request, a fixed limit no flag changes); send the rest in another request",
				apiFetchesPerRequest, apiFetchesPerRequest)
		}
		if !l.Allow() {
			return fmt.Errorf("not fetched: this client made its %d debuginfod fetches (the symbolization APIs fetch at most %d at once for one client, then %d a second: fixed limits no flag changes); retry shortly",
				apiFetchesPerClient, apiFetchesPerClient, apiFetchRate)
		}
		return nil
	})
}
