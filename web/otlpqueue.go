package web

import (
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// otlpQueue lets OTLP requests whose bodies are read be converted, encoded
// and stored in the order they arrived, a few at a time: one more than the
// cores, so that one can wait for the store's journal sync while the others
// use the CPU. With every request at once (a fleet of profilers sending
// together), each took its share of two cores for as long as the slowest
// and the 99th percentile was 3–4× the median; in arrival order, each waits
// for those ahead of it and then runs nearly alone (BENCHMARKS.md, issue
// 21's intake). A request that waits longer than --upload-wait is answered
// 503 with Retry-After, which OTLP exporters retry.
type otlpQueue struct{ places }

func newOTLPQueue(l Limits) *otlpQueue {
	w := l.UploadWait
	if w <= 0 {
		w = 2 * time.Second
	}
	return &otlpQueue{places{ch: make(chan struct{}, runtime.GOMAXPROCS(0)+1), wait: w}}
}

// turn waits for the request's turn, and returns what ends it.
func (q *otlpQueue) turn(c echo.Context) (end func(), err error) {
	if !q.enter(c.Request().Context()) {
		secs := max(1, int(q.wait.Round(time.Second)/time.Second))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return nil, httpError(http.StatusServiceUnavailable,
			"the server is busy with other OTLP requests; retry in %d s (or restart it with a larger --upload-wait)", secs)
	}
	return q.leave, nil
}
