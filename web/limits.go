package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/web/ingest"
	"viewer/web/ingest/perfdata"
)

// Limits bound what one upload may expand to and how many uploads are
// handled at once. Zero fields take the defaults below; a negative count
// means no limit.
type Limits struct {
	// MaxSamples, MaxLocations, MaxFunctions and MaxMappings bound a
	// parsed profile; MaxRecords bounds a perf.data's records. Over a
	// limit, the upload gets 413 naming the count and the flag.
	MaxSamples, MaxLocations, MaxFunctions, MaxMappings, MaxRecords int
	// MaxConcurrentUploads is how many uploads are read and parsed at
	// once (default DefaultMaxConcurrentUploads). Each may hold up to
	// twice MaxUpload in memory while it is parsed.
	MaxConcurrentUploads int
	// UploadWait is how long an upload waits for a free slot before it
	// is answered 503 with Retry-After (default 2s).
	UploadWait time.Duration
	// UploadIdle drops an upload whose body stops arriving for this long
	// (default 30s), so a stalled client cannot hold a slot forever.
	UploadIdle time.Duration
	// MaxDebugFile bounds the size of the executable and debug file the
	// data-type page opens for a binary (--max-debug-file; 0: no limit);
	// a binary whose file is larger is listed with the reason, the rest of
	// the profile is attributed.
	MaxDebugFile int64
	// Binaries, when set, unwinds uploaded perf.data --call-graph=dwarf
	// stacks with this machine's binaries (serve on loopback only, where
	// uploads are this machine's); NoUnwind says why not, for the warning.
	Binaries perfdata.Binaries
	NoUnwind string
}

// DefaultMaxConcurrentUploads is the default number of uploads parsed at
// once.
const DefaultMaxConcurrentUploads = 4

// ingest is the parse limits for uploads of at most maxUpload bytes.
func (l Limits) ingest(maxUpload int64) ingest.Limits {
	pick := func(v, def int) int {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return def
		}
		return v
	}
	return ingest.Limits{
		MaxBytes:     maxUpload,
		MaxSamples:   pick(l.MaxSamples, ingest.DefaultMaxSamples),
		MaxLocations: pick(l.MaxLocations, ingest.DefaultMaxLocations),
		MaxFunctions: pick(l.MaxFunctions, ingest.DefaultMaxFunctions),
		MaxMappings:  pick(l.MaxMappings, ingest.DefaultMaxMappings),
		MaxRecords:   pick(l.MaxRecords, ingest.DefaultMaxRecords),
		Binaries:     l.Binaries,
		NoUnwind:     l.NoUnwind,
	}
}

// uploadSlots bounds concurrent uploads: a request takes a slot before its
// body is read and gives it back when answered.
type uploadSlots struct {
	ch         chan struct{}
	wait, idle time.Duration
}

func newUploadSlots(l Limits) *uploadSlots {
	n := l.MaxConcurrentUploads
	if n <= 0 {
		n = DefaultMaxConcurrentUploads
	}
	w := l.UploadWait
	if w <= 0 {
		w = 2 * time.Second
	}
	idle := l.UploadIdle
	if idle <= 0 {
		idle = 30 * time.Second
	}
	return &uploadSlots{ch: make(chan struct{}, n), wait: w, idle: idle}
}

// acquire takes a slot, waiting up to s.wait; false means the server is
// busy (or the client went away).
func (s *uploadSlots) acquire(ctx context.Context) bool {
	select {
	case s.ch <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case s.ch <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (s *uploadSlots) release() { <-s.ch }

// limit is middleware for the upload routes: it answers 503 with
// Retry-After when every slot stays taken for the wait.
func (s *uploadSlots) limit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.acquire(c.Request().Context()) {
			secs := max(1, int(s.wait.Round(time.Second)/time.Second))
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return httpError(http.StatusServiceUnavailable,
				"the server is busy with %d other uploads; retry in %d s (or restart it with a larger --max-concurrent-uploads)", cap(s.ch), secs)
		}
		defer s.release()
		idle := s.idle
		req := c.Request()
		rc := http.NewResponseController(c.Response())
		if err := rc.SetReadDeadline(time.Now().Add(idle)); err == nil {
			req.Body = &idleReader{ReadCloser: req.Body, rc: rc, idle: idle}
		}
		// The deadline stays: after the handler the server may drain
		// what is left of the body, which must not wait forever either.
		// It sets its own deadline before reading the next request.
		return next(c)
	}
}

// idleReader pushes the connection's read deadline forward before each
// read: a body may take long in total, but not stall.
type idleReader struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.rc.SetReadDeadline(time.Now().Add(r.idle))
	n, err := r.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("no upload bytes arrived for %v; the upload was dropped: %w", r.idle, err)
	}
	return n, err
}
