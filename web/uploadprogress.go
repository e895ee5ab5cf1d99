package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/web/ingest"
	"viewer/web/sse"
)

// UploadProgressHeader names the key an upload's progress is followed by:
// a page that sends it with POST /api/profiles can read the bytes the
// server received and each phase of the conversion from
// GET /api/uploads/KEY/progress, an event stream, while the POST runs.
const UploadProgressHeader = "X-Upload-Progress"

// progressKeyPattern is what a key must look like: 16 to 64 letters,
// digits, '-' or '_' (the page sends 32 random hex digits). Being random,
// the key is the only way to the upload's progress, which tells nothing
// but phases and byte counts.
var progressKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)

// The upload's own phases, before ingest's (perfdata.Phase*); the upload
// page names them all (static/states.js UploadPhase, generated from these).
const (
	phaseReceiving  = "receiving"  // bytes of the request body
	phaseConverting = "converting" // the body read, the profile being parsed
)

// uploadEvent is one event of the progress stream: a phase ("receiving",
// "converting", then ingest's: "inflating", "reading records",
// "aggregating stacks"), done of total (bytes or records; 0 unknown), and,
// last, finished with the upload's error if it failed.
type uploadEvent struct {
	Phase    string `json:"phase"`
	Done     int64  `json:"done"`
	Total    int64  `json:"total"`
	Finished bool   `json:"finished,omitempty"`
	Error    string `json:"error,omitempty"`
}

// uploadTrack is one key's progress: the last event of each phase in
// order, so that a subscriber sees every phase even when it joins late.
type uploadTrack struct {
	mu      sync.Mutex
	events  []uploadEvent
	seq     int           // bumped on every change
	changed chan struct{} // closed and replaced on every change
	ended   time.Time     // when finished; zero while running
	started time.Time
	// client made the track (clientAddr); watchers are its open streams
	// and uploading says an upload named its key: a track neither
	// watched nor uploaded is forgotten at once (uploadTracks.leave).
	client    string
	watchers  int
	uploading bool
}

func (t *uploadTrack) report(phase string, done, total int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended.IsZero() {
		return
	}
	ev := uploadEvent{Phase: phase, Done: done, Total: total}
	if n := len(t.events); n > 0 && t.events[n-1].Phase == phase {
		t.events[n-1] = ev
	} else if n < maxUploadPhases {
		t.events = append(t.events, ev)
	}
	t.bump()
}

func (t *uploadTrack) finish(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ev := uploadEvent{Phase: "done", Finished: true}
	if err != nil {
		ev.Phase, ev.Error = "failed", err.Error()
		var he *echo.HTTPError
		if errors.As(err, &he) {
			if m, ok := he.Message.(string); ok {
				ev.Error = m
			}
		}
	}
	t.events = append(t.events, ev)
	t.ended = time.Now()
	t.bump()
}

func (t *uploadTrack) bump() {
	t.seq++
	close(t.changed)
	t.changed = make(chan struct{})
}

// maxUploadPhases bounds one track's events.
const maxUploadPhases = 16

// uploadTracks are the tracks of the uploads in flight and of those that
// ended in the last uploadTrackTTL, process-wide (keys are random), and
// how many each client address holds.
var uploadTracks = struct {
	mu       sync.Mutex
	m        map[string]*uploadTrack
	byClient map[string]int
}{m: map[string]*uploadTrack{}, byClient: map[string]int{}}

const (
	uploadTrackTTL = time.Minute
	// maxUploadTracks bounds the tracks kept; a new key past it is not
	// followed (the upload itself goes on).
	maxUploadTracks = 4096
	// maxClientUploadTracks bounds one client address's tracks, so that
	// one client cannot take all of maxUploadTracks (the upload page
	// follows one upload at a time).
	maxClientUploadTracks = 16
	// uploadTrackIdle ends a stream no upload came for.
	uploadTrackIdle = 10 * time.Minute
)

// errTooManyTracks says why a key is not followed: the client's share, or
// all tracks, are taken by uploads in flight or streams open.
type errTooManyTracks struct{ own bool }

func (e errTooManyTracks) Error() string {
	if e.own {
		return fmt.Sprintf("this address follows %d uploads' progress already, the most one client may (a fixed limit no flag changes); close a progress stream or wait for an upload to end", maxClientUploadTracks)
	}
	return fmt.Sprintf("the server follows %d uploads' progress already, the most it keeps (a fixed limit no flag changes); retry shortly", maxUploadTracks)
}

// track is key's track for a request from client, made when new; watch
// counts a stream on it (leave uncounts it), else an upload names it.
// A new track that would pass the client's share or the total first
// drops ended ones (the oldest first); past that it is refused.
func track(key, client string, watch bool) (*uploadTrack, error) {
	uploadTracks.mu.Lock()
	defer uploadTracks.mu.Unlock()
	t := uploadTracks.m[key]
	if t == nil {
		now := time.Now()
		if uploadTracks.byClient[client] >= maxClientUploadTracks && !dropEndedTrack(client, now) {
			return nil, errTooManyTracks{own: true}
		}
		if len(uploadTracks.m) >= maxUploadTracks && !dropEndedTrack("", now) {
			return nil, errTooManyTracks{}
		}
		t = &uploadTrack{changed: make(chan struct{}), started: now, client: client}
		uploadTracks.m[key] = t
		uploadTracks.byClient[client]++
	}
	t.mu.Lock()
	if watch {
		t.watchers++
	} else {
		t.uploading = true
	}
	t.mu.Unlock()
	return t, nil
}

// dropEndedTrack forgets the ended tracks past uploadTrackTTL, then, if
// none was, the one that ended first, of client ("": of any client). It
// reports whether it forgot one. uploadTracks.mu is held.
func dropEndedTrack(client string, now time.Time) bool {
	var first string
	var firstEnd time.Time
	dropped := false
	for k, t := range uploadTracks.m {
		if client != "" && t.client != client {
			continue
		}
		t.mu.Lock()
		ended := t.ended
		t.mu.Unlock()
		switch {
		case ended.IsZero():
		case now.Sub(ended) > uploadTrackTTL:
			forgetTrack(k, t)
			dropped = true
		case first == "" || ended.Before(firstEnd):
			first, firstEnd = k, ended
		}
	}
	if !dropped && first != "" {
		forgetTrack(first, uploadTracks.m[first])
		dropped = true
	}
	return dropped
}

// forgetTrack removes key's track t. uploadTracks.mu is held.
func forgetTrack(key string, t *uploadTrack) {
	delete(uploadTracks.m, key)
	if uploadTracks.byClient[t.client]--; uploadTracks.byClient[t.client] <= 0 {
		delete(uploadTracks.byClient, t.client)
	}
}

// leave uncounts a stream on key's track t, forgetting the track when no
// stream watches it and no upload named it: a key asked for and left is
// worth nothing, and costs its client's share nothing after.
func leave(key string, t *uploadTrack) {
	uploadTracks.mu.Lock()
	defer uploadTracks.mu.Unlock()
	t.mu.Lock()
	t.watchers--
	idle := t.watchers == 0 && !t.uploading
	t.mu.Unlock()
	if idle && uploadTracks.m[key] == t {
		forgetTrack(key, t)
	}
}

// withUploadProgress follows an upload that names a progress key
// (UploadProgressHeader): the request body's bytes as "receiving", then
// the parse's phases (ingest.WithProgress), then its end. An upload past
// its client's share of keys goes on unfollowed.
func (s *Server) withUploadProgress(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := c.Request().Header.Get(UploadProgressHeader)
		if !progressKeyPattern.MatchString(key) {
			return h(c)
		}
		t, err := track(key, s.clientAddr(c.Request()), false)
		if err != nil {
			return h(c)
		}
		r := c.Request()
		r.Body = &receivedBody{ReadCloser: r.Body, t: t, total: r.ContentLength}
		c.SetRequest(r.WithContext(ingest.WithProgress(r.Context(), t.report)))
		err = h(c)
		t.finish(err)
		return err
	}
}

// receivedBody reports the bytes read of an upload, then "converting"
// once it is read to its end.
type receivedBody struct {
	io.ReadCloser
	t           *uploadTrack
	done, total int64
	last        time.Time
}

func (b *receivedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.done += int64(n)
	switch {
	case err == io.EOF:
		b.t.report(phaseReceiving, b.done, max(b.total, b.done))
		b.t.report(phaseConverting, 0, 0)
	case time.Since(b.last) >= 50*time.Millisecond:
		b.last = time.Now()
		b.t.report(phaseReceiving, b.done, b.total)
	}
	return n, err
}

// handleUploadProgress streams the progress of the upload keyed :key as
// server-sent events (uploadEvent JSON), each phase's latest, until the
// upload ends; a key no upload has named yet is waited for, up to
// uploadTrackIdle. Past the client's share of keys it answers 429.
func (s *Server) handleUploadProgress(c echo.Context) error {
	key := c.Param("key")
	if !progressKeyPattern.MatchString(key) {
		return echo.NewHTTPError(http.StatusBadRequest, "the progress key must be 16 to 64 letters, digits, '-' or '_'")
	}
	t, err := track(key, s.clientAddr(c.Request()), true)
	if err != nil {
		c.Response().Header().Set("Retry-After", "10")
		if err.(errTooManyTracks).own {
			return httpError(http.StatusTooManyRequests, "%v", err)
		}
		return httpError(http.StatusServiceUnavailable, "%v", err)
	}
	defer leave(key, t)
	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// Open the stream now, before any upload names the key: the client
	// may wait for it to start the upload (the compressing wrapper sends
	// nothing before a first write).
	if sse.WriteComment(w, "open") != nil {
		return nil
	}
	w.Flush()
	ctx := c.Request().Context()
	sent, sentSeq := 0, -1
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	idle := time.NewTimer(uploadTrackIdle)
	var uploading bool
	defer idle.Stop()
	for {
		t.mu.Lock()
		evs := append([]uploadEvent(nil), t.events...)
		seq, changed := t.seq, t.changed
		t.mu.Unlock()
		if seq != sentSeq {
			from := max(sent-1, 0) // the last sent phase may have moved on
			for i := from; i < len(evs); i++ {
				data, _ := json.Marshal(evs[i])
				if err := sse.Write(w, sse.Event{Data: data}); err != nil {
					return nil
				}
			}
			w.Flush()
			sent, sentSeq = len(evs), seq
			if n := len(evs); n > 0 && evs[n-1].Finished {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			time.Sleep(50 * time.Millisecond) // coalesce bursts
		case <-idle.C:
			t.mu.Lock()
			uploading = t.uploading
			t.mu.Unlock()
			if !uploading {
				return nil // no upload came: the stream ends, and its key with it
			}
		case <-keepAlive.C:
			if sse.WriteComment(w, "keep-alive") != nil {
				return nil
			}
			w.Flush()
		}
	}
}
