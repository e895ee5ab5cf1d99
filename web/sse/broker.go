package sse

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNoTopic is returned by Serve when the topic does not exist; nothing has
// been written, so the caller chooses the response (404, 204...).
var ErrNoTopic = errors.New("sse: no such event stream")

// ErrTooManySubscribers is returned by Serve after it answered 503: the
// broker already streams to Config.MaxSubscribers clients.
var ErrTooManySubscribers = errors.New("sse: too many event-stream subscribers")

// Config bounds a Broker; zero fields take the defaults.
type Config struct {
	// MaxSubscribers is how many streams may be open at once across all
	// topics (default 256). One more is answered 503 with Retry-After.
	MaxSubscribers int
	// MaxPerClient is how many of them one client address may hold
	// (default 32), so one client cannot take them all.
	MaxPerClient int
	// ClientKey names a request's client (default: the peer's IP address,
	// from RemoteAddr).
	ClientKey func(*http.Request) string
	// KeepAlive is the interval of comment lines on an idle stream
	// (default 15s), so proxies and browsers don't drop it.
	KeepAlive time.Duration
	// Retry is the reconnection delay sent to clients (default 2s).
	Retry time.Duration
	// MaxFinished is how many finished topics are kept for late subscribers
	// (default 1024); the oldest are forgotten first.
	MaxFinished int
}

// Broker holds the topics and bounds the subscribers.
type Broker struct {
	cfg Config

	mu       sync.Mutex
	topics   map[string]*Topic
	finished []string // names of finished topics, oldest first
	subs     int
	byClient map[string]int // open streams per client key
	done     chan struct{}  // closed by Shutdown
	shut     bool
}

// NewBroker returns a broker with cfg's bounds.
func NewBroker(cfg Config) *Broker {
	if cfg.MaxSubscribers <= 0 {
		cfg.MaxSubscribers = 256
	}
	if cfg.MaxPerClient <= 0 {
		cfg.MaxPerClient = 32
	}
	if cfg.ClientKey == nil {
		cfg.ClientKey = peerIP
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 2 * time.Second
	}
	if cfg.MaxFinished <= 0 {
		cfg.MaxFinished = 1024
	}
	return &Broker{cfg: cfg, topics: map[string]*Topic{}, byClient: map[string]int{}, done: make(chan struct{})}
}

// Topic returns the topic called name, creating it when needed. A finished
// topic is returned as is; call Reopen before publishing to it again.
func (b *Broker) Topic(name string) *Topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.topics[name]; t != nil {
		return t
	}
	t := &Topic{
		b:        b,
		name:     name,
		epoch:    strconv.FormatInt(time.Now().UnixNano(), 36),
		latest:   map[string]entry{},
		pending:  map[string]*Event{},
		timers:   map[string]*time.Timer{},
		lastEmit: map[string]time.Time{},
		subs:     map[chan struct{}]struct{}{},
	}
	b.topics[name] = t
	return t
}

// Lookup returns the topic called name, or nil.
func (b *Broker) Lookup(name string) *Topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topics[name]
}

// Subscribers is the number of open streams.
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.subs
}

// Shutdown ends every open stream (after what was already published) and
// refuses new ones, so an http.Server's graceful shutdown doesn't wait for
// streams that would never end. Use it with http.Server.RegisterOnShutdown.
func (b *Broker) Shutdown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.shut {
		b.shut = true
		close(b.done)
	}
}

// peerIP is the IP address of the request's peer.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// acquire takes a stream slot for client, or says which bound refused it.
func (b *Broker) acquire(client string) (ok, perClient bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs >= b.cfg.MaxSubscribers || b.shut {
		return false, false
	}
	if b.byClient[client] >= b.cfg.MaxPerClient {
		return false, true
	}
	b.subs++
	b.byClient[client]++
	return true, false
}

func (b *Broker) release(client string) {
	b.mu.Lock()
	b.subs--
	if b.byClient[client]--; b.byClient[client] <= 0 {
		delete(b.byClient, client)
	}
	b.mu.Unlock()
}

// markFinished records that t finished and forgets the oldest finished
// topics beyond the bound.
func (b *Broker) markFinished(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finished = slices.DeleteFunc(b.finished, func(n string) bool { return n == name })
	b.finished = append(b.finished, name)
	for len(b.finished) > b.cfg.MaxFinished {
		delete(b.topics, b.finished[0])
		b.finished = b.finished[1:]
	}
}

func (b *Broker) markReopened(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finished = slices.DeleteFunc(b.finished, func(n string) bool { return n == name })
}

// Topic is one stream of state: the latest event per key. Publishing under
// a key supersedes that key's previous event.
type Topic struct {
	b     *Broker
	name  string
	epoch string // distinguishes IDs of this topic from a previous process's

	mu       sync.Mutex
	seq      uint64
	latest   map[string]entry
	pending  map[string]*Event // throttled events waiting for their slot
	timers   map[string]*time.Timer
	lastEmit map[string]time.Time
	subs     map[chan struct{}]struct{}
	closed   bool   // Finish was called
	finalKey string // key of the final event
}

type entry struct {
	seq uint64
	ev  Event
}

// Publish sends an event of type typ under key now.
func (t *Topic) Publish(key, typ string, data []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.dropPending(key)
	t.emit(key, Event{Type: typ, Data: data})
}

// PublishThrottled sends an event under key at most once per every: events
// arriving sooner are coalesced, the last one being sent when the interval
// is up. Used for download progress.
func (t *Topic) PublishThrottled(key, typ string, data []byte, every time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	ev := Event{Type: typ, Data: data}
	now := time.Now()
	if _, waiting := t.timers[key]; !waiting {
		if last, ok := t.lastEmit[key]; !ok || now.Sub(last) >= every {
			t.emit(key, ev)
			return
		}
	}
	t.pending[key] = &ev
	if _, waiting := t.timers[key]; waiting {
		return
	}
	wait := every - now.Sub(t.lastEmit[key])
	t.timers[key] = time.AfterFunc(wait, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.timers, key)
		if ev := t.pending[key]; ev != nil && !t.closed {
			delete(t.pending, key)
			t.emit(key, *ev)
		}
	})
}

// Forget drops key's latest and pending events, e.g. a fetch's progress once
// the binary has resolved, so late subscribers are not sent stale progress.
func (t *Topic) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropPending(key)
	delete(t.latest, key)
	delete(t.lastEmit, key)
}

// Finish publishes the final event under key and ends the topic: open
// streams end after sending it, pending throttled events are dropped, and
// further publishing is ignored until Reopen.
func (t *Topic) Finish(key, typ string, data []byte) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	for k := range t.timers {
		t.dropPending(k)
	}
	t.emit(key, Event{Type: typ, Data: data})
	t.closed = true
	t.finalKey = key
	t.mu.Unlock()
	t.b.markFinished(t.name)
}

// Reopen makes a finished topic publishable again (a retry), dropping its
// final event so new subscribers don't take the old end for the new one.
func (t *Topic) Reopen() {
	t.mu.Lock()
	if t.closed {
		t.closed = false
		delete(t.latest, t.finalKey)
		t.finalKey = ""
	}
	t.mu.Unlock()
	t.b.markReopened(t.name)
}

// Finished reports whether Finish was called (and no Reopen since).
func (t *Topic) Finished() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Snapshot returns the current events in the order they were published.
func (t *Topic) Snapshot() []Event {
	es, _ := t.since(0)
	evs := make([]Event, len(es))
	for i, e := range es {
		evs[i] = e.ev
	}
	return evs
}

func (t *Topic) dropPending(key string) {
	if tm := t.timers[key]; tm != nil {
		tm.Stop()
		delete(t.timers, key)
	}
	delete(t.pending, key)
}

// emit assigns the next ID and wakes the subscribers. t.mu is held.
func (t *Topic) emit(key string, ev Event) {
	t.seq++
	ev.ID = t.epoch + "-" + strconv.FormatUint(t.seq, 10)
	t.latest[key] = entry{t.seq, ev}
	t.lastEmit[key] = time.Now()
	for ch := range t.subs {
		select {
		case ch <- struct{}{}:
		default: // already woken; it will read everything new
		}
	}
}

// since returns the latest events newer than seq, oldest first, and whether
// the topic is finished.
func (t *Topic) since(seq uint64) ([]entry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var es []entry
	for _, e := range t.latest {
		if e.seq > seq {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
	return es, t.closed
}

func (t *Topic) subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	t.mu.Lock()
	t.subs[ch] = struct{}{}
	t.mu.Unlock()
	return ch
}

func (t *Topic) unsubscribe(ch chan struct{}) {
	t.mu.Lock()
	delete(t.subs, ch)
	t.mu.Unlock()
}

// resumeSeq parses a Last-Event-ID of this topic; other IDs (another
// process, garbage) mean "from the start".
func (t *Topic) resumeSeq(id string) uint64 {
	epoch, n, ok := strings.Cut(strings.TrimSpace(id), "-")
	if !ok || epoch != t.epoch {
		return 0
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if seq > t.seq {
		return 0
	}
	return seq
}

// Serve streams the topic called name to one client: first the current
// state (or, with a Last-Event-ID header, what changed since that event),
// then each change as it happens, with keep-alive comments when idle, until
// the topic finishes, the client goes away or the broker shuts down. It
// lifts the server's write deadline for this response only. It writes every
// response itself (204 to a client that already has the final event, 503
// with Retry-After when the subscriber bound is reached) except for
// ErrNoTopic, where nothing is written.
func (b *Broker) Serve(w http.ResponseWriter, r *http.Request, name string) error {
	t := b.Lookup(name)
	if t == nil {
		return ErrNoTopic
	}
	last := t.resumeSeq(r.Header.Get("Last-Event-ID"))
	if evs, closed := t.since(last); closed && len(evs) == 0 {
		// The client saw the end; 204 tells EventSource not to reconnect.
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	client := b.cfg.ClientKey(r)
	if ok, perClient := b.acquire(client); !ok {
		w.Header().Set("Retry-After", "5")
		msg := "too many open event streams; retry in a few seconds"
		if perClient {
			msg = fmt.Sprintf("this client already has %d open event streams, the most one client may hold (a fixed limit no flag changes); close some pages and retry", b.cfg.MaxPerClient)
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
		return ErrTooManySubscribers
	}
	defer b.release(client)
	ch := t.subscribe()
	defer t.unsubscribe(ch)

	rc := http.NewResponseController(w)
	// A stream lives longer than any write timeout meant for pages.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: don't buffer the stream
	w.WriteHeader(http.StatusOK)
	if err := WriteRetry(w, int(b.cfg.Retry/time.Millisecond)); err != nil {
		return nil
	}
	keep := time.NewTicker(b.cfg.KeepAlive)
	defer keep.Stop()
	ctx := r.Context()
	for {
		es, closed := t.since(last)
		for _, e := range es {
			if err := Write(w, e.ev); err != nil {
				return nil // client gone
			}
			last = e.seq
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		if closed {
			return nil
		}
		select {
		case <-ch:
		case <-keep.C:
			if WriteComment(w, "keep-alive") != nil || rc.Flush() != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-b.done:
			return nil
		}
	}
}
