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

	"viewer/web/flame"
	"viewer/web/ingest"
)

// Limits bound what one upload may expand to and how many uploads are
// handled at once. Zero fields take the defaults below; a negative count
// means no limit.
type Limits struct {
	// MaxSamples, MaxLocations, MaxFunctions and MaxMappings bound a
	// parsed profile; MaxRecords bounds a perf.data's records. Over a
	// limit, the upload gets 413 naming the count and the flag.
	MaxSamples, MaxLocations, MaxFunctions, MaxMappings, MaxRecords int
	// MaxFrames bounds the frames of a profile's stacks together,
	// MaxStackDepth one stack (deeper ones keep their leaf-most frames
	// under a "[truncated N frames]" frame), MaxStrings a pprof string
	// table and MaxLineBytes a line of a text profile (ingest.Default*).
	MaxFrames, MaxStackDepth, MaxStrings, MaxLineBytes int
	// MaxOTLPProfiles bounds the profiles of one OTLP request
	// (ingest.DefaultMaxOTLPProfiles), each stored apart.
	MaxOTLPProfiles int
	// IngestMemory is the memory shared by all uploads being parsed, each
	// taking its estimated cost first (default ingest.DefaultMemory).
	IngestMemory int64
	// SpoolDir is where uploads are spooled while read and parsed
	// (default os.TempDir()).
	SpoolDir string
	// MinUploadRate is the slowest average an upload body may arrive at,
	// in bytes per second over UploadRateWindow (default 10 KiB/s over
	// 10 s, as Apache's mod_reqtimeout); negative: no minimum.
	// UploadDeadline bounds an upload's whole body (default 15 min).
	MinUploadRate                    int64
	UploadRateWindow, UploadDeadline time.Duration
	// RenderTimeout bounds the building of one view (flame.json, SVG,
	// diff, sandwich, top; default 30 s); RenderNodes and RenderBytes are
	// the node and byte budget of one built view (flame.Default*).
	RenderTimeout            time.Duration
	RenderNodes, RenderBytes int
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
	Binaries ingest.Binaries
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
	mem := l.IngestMemory
	if mem <= 0 {
		mem = ingest.DefaultMemory
	}
	wait := l.UploadWait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	return ingest.Limits{
		MaxBytes:        maxUpload,
		MaxSamples:      pick(l.MaxSamples, ingest.DefaultMaxSamples),
		MaxLocations:    pick(l.MaxLocations, ingest.DefaultMaxLocations),
		MaxFunctions:    pick(l.MaxFunctions, ingest.DefaultMaxFunctions),
		MaxMappings:     pick(l.MaxMappings, ingest.DefaultMaxMappings),
		MaxRecords:      pick(l.MaxRecords, ingest.DefaultMaxRecords),
		MaxFrames:       pick(l.MaxFrames, ingest.DefaultMaxFrames),
		MaxStackDepth:   pick(l.MaxStackDepth, ingest.DefaultMaxStackDepth),
		MaxStrings:      pick(l.MaxStrings, ingest.DefaultMaxStrings),
		MaxLineBytes:    pick(l.MaxLineBytes, ingest.DefaultMaxLineBytes),
		MaxOTLPProfiles: pick(l.MaxOTLPProfiles, ingest.DefaultMaxOTLPProfiles),
		Memory:          ingest.NewBudget(mem, wait),
		SpoolDir:        l.SpoolDir,
		Binaries:        l.Binaries,
		NoUnwind:        l.NoUnwind,
	}
}

// busy is the 503 for an upload that found the ingest memory taken.
func busy(err error) error {
	return httpError(http.StatusServiceUnavailable, "%v", err)
}

// uploadSlots bounds concurrent parses of uploads: a request takes a slot
// once its body is spooled to disk and gives it back when answered, so a
// slow client holds no slot. Bodies are read under a minimum rate and a
// total deadline (rateReader).
type uploadSlots struct {
	places
	idle     time.Duration
	minRate  int64 // bytes per second; 0: none
	window   time.Duration
	deadline time.Duration
}

// Defaults of the upload body's pace (Limits).
const (
	DefaultMinUploadRate    = 10 << 10
	DefaultUploadRateWindow = 10 * time.Second
	DefaultUploadDeadline   = 15 * time.Minute
)

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
	s := &uploadSlots{places: places{ch: make(chan struct{}, n), wait: w}, idle: idle,
		minRate: l.MinUploadRate, window: l.UploadRateWindow, deadline: l.UploadDeadline}
	switch {
	case s.minRate == 0:
		s.minRate = DefaultMinUploadRate
	case s.minRate < 0:
		s.minRate = 0
	}
	if s.window <= 0 {
		s.window = DefaultUploadRateWindow
	}
	if s.deadline <= 0 {
		s.deadline = DefaultUploadDeadline
	}
	return s
}

// places are a fixed number of places, taken in arrival order (a
// buffered channel's blocked senders go first in, first out): the upload
// slots and the OTLP queue (otlpqueue.go).
type places struct {
	ch   chan struct{}
	wait time.Duration
}

// enter takes a place, waiting up to p.wait; false means every place
// stayed taken (or the client went away).
func (p *places) enter(ctx context.Context) bool {
	select {
	case p.ch <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(p.wait)
	defer t.Stop()
	select {
	case p.ch <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// leave gives a place back.
func (p *places) leave() { <-p.ch }

// slotsKey is the echo context key under which limit leaves the slots for
// the upload handler (holdSlot).
const slotsKey = "viewer.uploadSlots"

// limit is middleware for the upload routes: it reads the body at a
// minimum pace within a deadline, and leaves the slots for holdSlot.
func (s *uploadSlots) limit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(slotsKey, s)
		req := c.Request()
		rc := http.NewResponseController(c.Response())
		now := time.Now()
		r := &rateReader{ReadCloser: req.Body, rc: rc, s: s, end: now.Add(s.deadline), credit: now.Add(s.window)}
		if err := rc.SetReadDeadline(r.next(now)); err == nil {
			req.Body = r
		}
		// The deadline stays: after the handler the server may drain
		// what is left of the body, which must not wait forever either.
		// It sets its own deadline before reading the next request.
		return next(c)
	}
}

// holdSlot takes a parse slot for an upload whose body is read, answering
// 503 with Retry-After when every slot stays taken for the wait. Requests
// that did not pass limit need none.
func holdSlot(c echo.Context) (release func(), err error) {
	s, ok := c.Get(slotsKey).(*uploadSlots)
	if !ok {
		return func() {}, nil
	}
	if !s.enter(c.Request().Context()) {
		secs := max(1, int(s.wait.Round(time.Second)/time.Second))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return nil, httpError(http.StatusServiceUnavailable,
			"the server is busy with %d other uploads; retry in %d s (or restart it with a larger --max-concurrent-uploads)", cap(s.ch), secs)
	}
	return s.leave, nil
}

// rateReader reads an upload body under three deadlines, set on the
// connection before each read: no stall longer than idle; no later than
// the total deadline; and, as Apache's mod_reqtimeout MinRate, no slower
// on average than minRate: the body starts with window of credit and each
// byte earns 1/minRate s more, up to window ahead of now.
type rateReader struct {
	io.ReadCloser
	rc          *http.ResponseController
	s           *uploadSlots
	end, credit time.Time
}

// next is the read deadline at now.
func (r *rateReader) next(now time.Time) time.Time {
	d := earliest(now.Add(r.s.idle), r.end)
	if r.s.minRate > 0 {
		d = earliest(d, r.credit)
	}
	return d
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (r *rateReader) Read(p []byte) (int, error) {
	r.rc.SetReadDeadline(r.next(time.Now()))
	n, err := r.ReadCloser.Read(p)
	now := time.Now()
	if r.s.minRate > 0 && n > 0 {
		r.credit = earliest(r.credit.Add(time.Duration(int64(n)*int64(time.Second)/r.s.minRate)), now.Add(r.s.window))
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		switch {
		case !now.Before(r.end):
			err = fmt.Errorf("the upload took longer than the %v upload deadline and was dropped (restart the server with a larger --upload-deadline): %w", r.s.deadline, err)
		case r.s.minRate > 0 && !now.Before(r.credit):
			err = fmt.Errorf("the upload arrived slower than the minimum of %s/s averaged over %v and was dropped (restart the server with a smaller --upload-min-rate): %w", humanBytes(r.s.minRate), r.s.window, err)
		default:
			err = fmt.Errorf("no upload bytes arrived for %v; the upload was dropped: %w", r.s.idle, err)
		}
	}
	return n, err
}

// renderTimeout is Limits.RenderTimeout or its default.
func (s *Server) renderTimeout() time.Duration {
	if d := s.cfg.Limits.RenderTimeout; d > 0 {
		return d
	}
	return DefaultRenderTimeout
}

// DefaultRenderTimeout bounds the building of one view.
const DefaultRenderTimeout = 30 * time.Second

// renderBudget is the node and byte budget of one built view; negative
// Limits fields mean no bound.
func (s *Server) renderBudget() flame.Budget {
	pick := func(v, def int) int {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return def
		}
		return v
	}
	return flame.Budget{Nodes: pick(s.cfg.Limits.RenderNodes, flame.DefaultBudgetNodes), Bytes: pick(s.cfg.Limits.RenderBytes, flame.DefaultBudgetBytes)}
}
