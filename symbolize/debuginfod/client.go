package debuginfod

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"viewer/symbolize/buildid"
)

// Client fetches files by build ID: from the cache first, else from every
// configured server at once. It is safe for concurrent use; concurrent
// requests for one file share one download.
type Client struct {
	cfg     Config
	servers []string // normalized base URLs, without a trailing slash
	hosts   []string // their host:port, where redirects may go
	cache   cache
	http    *http.Client
	sem     chan struct{}
	logf    func(string, ...any)

	memo    *lru.Cache[string, memoEntry]
	group   singleflight.Group
	breaker breaker

	mu      sync.Mutex
	flights map[string]*flight

	stopClean func() // stops the cleaning timer
}

// memoEntry remembers a hit (path) or a miss (since when) in memory. A
// miss expires by the cache_miss_s read at each lookup.
type memoEntry struct {
	path  string
	since time.Time
}

// memoSize bounds the in-memory memo of hits and misses.
const memoSize = 16384

// New checks cfg and returns a client. Server URLs must be http://,
// https:// or file:/// URLs; duplicates are asked once.
func New(cfg Config) (*Client, error) {
	c := &Client{cfg: cfg, cache: cache{dir: cfg.CacheDir}, flights: map[string]*flight{}, logf: cfg.Logf}
	seen := map[string]bool{}
	for _, raw := range cfg.URLs {
		if strings.HasPrefix(raw, "ima:") {
			// elfutils 0.190+ lets *.urls files set an IMA signature policy
			// before URLs; we verify build IDs instead and skip the word.
			if cfg.Logf != nil {
				cfg.Logf("debuginfod: ignoring %q from %s: IMA signature policies are not supported; files are checked by build ID", raw, orDefault(cfg.URLsFrom, "the configuration"))
			}
			continue
		}
		u, err := url.Parse(raw)
		okURL := err == nil && ((u.Scheme == "http" || u.Scheme == "https") && u.Host != "" ||
			u.Scheme == "file" && u.Host == "" && strings.HasPrefix(u.Path, "/"))
		if !okURL {
			return nil, fmt.Errorf("debuginfod: server URL %q (from %s) is not an http://, https:// or file:/// URL; fix it or leave it out", raw, orDefault(cfg.URLsFrom, "the configuration"))
		}
		s := strings.TrimRight(raw, "/")
		if !seen[s] {
			seen[s] = true
			c.servers = append(c.servers, s)
			if u.Scheme != "file" {
				c.hosts = append(c.hosts, hostPort(u))
			}
		}
	}
	if c.cfg.RetryBackoff <= 0 {
		c.cfg.RetryBackoff = 500 * time.Millisecond
	}
	if c.cfg.RetryLimit < 0 {
		c.cfg.RetryLimit = 0
	}
	if c.cfg.UserAgent == "" {
		c.cfg.UserAgent = defaultUserAgent()
	}
	c.http = cfg.HTTPClient
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// debuginfod never compresses; not asking for gzip also means a
		// hostile server cannot make us inflate a gzip bomb.
		tr.DisableCompression = true
		// file:///DIR serves DIR/buildid/ID/KIND, as elfutils allows.
		tr.RegisterProtocol("file", http.NewFileTransport(http.Dir("/")))
		c.http = &http.Client{Transport: tr, CheckRedirect: c.checkRedirect}
	}
	n := cfg.MaxParallel
	if n <= 0 {
		n = 8
	}
	c.sem = make(chan struct{}, n)
	c.memo, _ = lru.New[string, memoEntry](memoSize)
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if n := c.cache.sweepTemps(c.tempAge()); n > 0 {
		c.logf("debuginfod: removed %d unfinished downloads left in %s by a process that ended mid-fetch", n, c.cfg.CacheDir)
	}
	c.stopClean = func() {}
	if c.cache.dir != "" {
		// The timer's goroutine holds the cache and the log, not c: it
		// ends at Close, or when c is garbage.
		stop := make(chan struct{})
		var once sync.Once
		c.stopClean = func() { once.Do(func() { close(stop) }) }
		go c.cache.cleaner(stop, c.logf)
		if ctx := cfg.Context; ctx != nil {
			stopClean := c.stopClean
			context.AfterFunc(ctx, stopClean)
		}
		runtime.AddCleanup(c, func(stop func()) { stop() }, c.stopClean)
	}
	return c, nil
}

// Close stops the client's cache-cleaning timer. Fetches in flight go on.
func (c *Client) Close() error {
	c.stopClean()
	return nil
}

// tempAge is how long a download's temp file may go unwritten before it is
// taken for one a dead process left: longer than the whole fetch may take
// (DEBUGINFOD_MAXTIME) and than ten stall windows (DEBUGINFOD_TIMEOUT),
// and at least ten minutes.
func (c *Client) tempAge() time.Duration {
	return max(c.cfg.MaxTime, 10*c.cfg.Timeout, 10*time.Minute)
}

// maxRedirects is how many redirects one request may follow.
const maxRedirects = 8

// checkRedirect follows a redirect, as elfutils does, only to http or
// https on a host (and port) of the server list: the server that answered
// or another one the operator named. So a hostile server cannot make the
// client read a file:// path, reach a loopback admin port or the cloud
// metadata address, nor fetch from anywhere the list does not name.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	to := req.URL
	if len(via) >= maxRedirects {
		return &RedirectError{Reason: fmt.Sprintf("too many redirects (stopped after %d; the server redirects in a loop or too far)", len(via))}
	}
	if to.Scheme != "http" && to.Scheme != "https" {
		return &RedirectError{Reason: fmt.Sprintf("refused a redirect to a %s: URL (only http and https)", to.Scheme)}
	}
	host := hostPort(to)
	if !slices.Contains(c.hosts, host) {
		what := "a host not in the server list"
		if ip := net.ParseIP(to.Hostname()); ip != nil && (ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsPrivate() || ip.IsUnspecified()) {
			what = "a loopback, link-local or private address not in the server list"
		}
		return &RedirectError{Reason: fmt.Sprintf("refused a redirect to %s: %s (a redirect may go only to the same server or another one in DEBUGINFOD_URLS)", to.Host, what)}
	}
	return nil
}

// hostPort is u's host and port, the port filled in from the scheme.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Servers returns the servers build IDs will be sent to, in order; empty
// when the client only reads the cache.
func (c *Client) Servers() []string { return append([]string(nil), c.servers...) }

// CacheDir returns the cache directory.
func (c *Client) CacheDir() string { return c.cfg.CacheDir }

// Describe is the start-up line saying which servers will be sent build IDs
// and why, and where files are cached.
func (c *Client) Describe() string {
	if len(c.servers) == 0 {
		why := "no DEBUGINFOD_URLS and no /etc/debuginfod/*.urls"
		switch {
		case c.cfg.URLsFrom == "--no-debuginfod":
			why = "--no-debuginfod"
		case c.cfg.URLsFrom != "":
			why = c.cfg.URLsFrom + " is empty"
		}
		return fmt.Sprintf("debuginfod: no build IDs leave this machine (%s); using only the cache %s", why, c.cfg.CacheDir)
	}
	return fmt.Sprintf("debuginfod: build IDs will be sent to %s (from %s); cache %s", strings.Join(c.servers, " "), orDefault(c.cfg.URLsFrom, "the configuration"), c.cfg.CacheDir)
}

func defaultUserAgent() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	ua := fmt.Sprintf("viewer/%s,%s/%s", v, unameSys(), goarchUname())
	if id, ver := osRelease(); id != "" {
		ua += "," + id + "/" + ver
	}
	return ua
}

// unameSys is the kernel name uname reports ("Linux").
func unameSys() string {
	if runtime.GOOS == "linux" {
		return "Linux"
	}
	return runtime.GOOS
}

// goarchUname maps GOARCH to the machine name uname reports, which is what
// debuginfod servers see from elfutils' client.
func goarchUname() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i686"
	}
	return runtime.GOARCH
}

func osRelease() (id, version string) {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		data, _ = os.ReadFile("/usr/lib/os-release")
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			id = v
		case "VERSION_ID":
			version = v
		}
	}
	return id, version
}

// Cached returns the cached file for buildID and kind without asking any
// server, or false when it is not cached (or the arguments are invalid).
func (c *Client) Cached(buildID string, kind Kind) (string, bool) {
	bid, err := buildid.Normalize(buildID)
	if err != nil {
		return "", false
	}
	file, err := kindFile(kind)
	if err != nil {
		return "", false
	}
	e, path, _ := c.cache.lookup(bid, file)
	return path, e == entryHit
}

// ForgetMiss drops the misses remembered for buildID, of every kind (in
// memory and the cache's 0-byte files), so the next Fetch asks the servers
// again before cache_miss_s ends: its file has just arrived somewhere (an
// upload to the server this client may ask). Hits are kept.
func (c *Client) ForgetMiss(buildID string) {
	bid, err := buildid.Normalize(buildID)
	if err != nil {
		return
	}
	for _, kind := range []Kind{KindDebuginfo, KindExecutable} {
		file, err := kindFile(kind)
		if err != nil {
			continue
		}
		key := bid + "/" + file
		if m, ok := c.memo.Get(key); ok && m.path == "" {
			c.memo.Remove(key)
		}
		if c.cache.dir == "" {
			continue
		}
		p := c.cache.path(bid, file)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
			os.Remove(p)
		}
	}
}

// Fetch returns the local path of kind for buildID: from the memo or the
// cache when there, else downloaded from the first server that has it,
// verified and cached. progress, if not nil, gets reports one at a time,
// never after Fetch returns; a slow callback misses intermediate reports
// but never slows the download other callers share. Each call ends with one
// terminal phase: PhaseCacheHit, PhaseDone, PhaseNotFound or PhaseError.
//
// Errors: *InvalidBuildIDError, *InvalidKindError, ErrNoServers, an error
// matching ErrNotFound, a *FetchError, or the context's error when ctx ends
// first (the download goes on only while other callers wait for it).
func (c *Client) Fetch(ctx context.Context, buildID string, kind Kind, progress func(Progress)) (string, error) {
	emit := func(p Progress) {}
	if progress != nil {
		emit = progress
	}
	bid, err := buildid.Normalize(buildID)
	if err != nil {
		emit(Progress{BuildID: buildID, Kind: kind, Phase: PhaseError, Total: -1, Err: err})
		return "", err
	}
	base := Progress{BuildID: bid, Kind: kind, Total: -1}
	file, err := kindFile(kind)
	if err != nil {
		p := base
		p.Phase, p.Err = PhaseError, err
		emit(p)
		return "", err
	}
	key := bid + "/" + file

	path, err, done := c.fromCache(key, bid, kind, file)
	server := ""
	if !done {
		if len(c.servers) == 0 {
			err = ErrNoServers
		} else if err = askQuota(ctx); err == nil {
			var got fetched
			got, err = c.join(ctx, key, bid, kind, file, progress)
			path, server = got.path, got.server
		}
	}
	if progress == nil {
		return path, err
	}
	p := base
	if err == nil {
		if st, serr := os.Stat(path); serr == nil {
			p.Bytes, p.Total = st.Size(), st.Size()
		}
	}
	switch {
	case err == nil && done:
		p.Phase, p.Path = PhaseCacheHit, path
	case err == nil:
		p.Phase, p.Path, p.Server = PhaseDone, path, server
	case errors.Is(err, ErrNotFound):
		p.Phase, p.Err = PhaseNotFound, err
	default:
		p.Phase, p.Err = PhaseError, err
	}
	emit(p)
	return path, err
}

// fromCache answers from the memo or the disk cache; done is false when
// neither knows the file.
func (c *Client) fromCache(key, bid string, kind Kind, file string) (string, error, bool) {
	if m, ok := c.memo.Get(key); ok {
		if m.path != "" {
			if st, err := os.Stat(m.path); err == nil && st.Size() > 0 {
				touch(m.path) // a use, as a lookup on disk is
				return m.path, nil, true
			}
		} else if c.cache.missFresh(m.since) {
			return "", &negativeCacheError{BuildID: bid, Kind: kind, Until: c.cache.missUntil(m.since)}, true
		}
		c.memo.Remove(key)
	}
	switch e, path, since := c.cache.lookup(bid, file); e {
	case entryHit:
		c.memo.Add(key, memoEntry{path: path})
		return path, nil, true
	case entryNegative:
		c.memo.Add(key, memoEntry{since: since})
		return "", &negativeCacheError{BuildID: bid, Kind: kind, Path: path, Until: c.cache.missUntil(since)}, true
	}
	return "", nil, false
}

// flight is one shared download and the callers waiting for it. Its context
// is detached from every caller's and cancelled when the last one leaves.
type flight struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	waiters int // guarded by Client.mu

	mu        sync.Mutex
	listeners map[int]*listener
	next      int
	last      *Progress
}

// errAbandoned cancels a download nobody waits for any more.
var errAbandoned = errors.New("debuginfod: every caller gave up waiting")

func (f *flight) emit(p Progress) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = &p
	for _, l := range f.listeners {
		l.post(p)
	}
}

// listen adds a caller's callback; a nil callback adds nothing (id 0).
func (f *flight) listen(fn func(Progress)) int {
	if fn == nil {
		return 0
	}
	l := &listener{fn: fn, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.listeners[f.next] = l
	if f.last != nil {
		l.post(*f.last) // a late joiner learns where the download stands
	}
	return f.next
}

// unlisten removes a callback and waits until it is no longer running, so
// no report reaches a caller after its Fetch returned.
func (f *flight) unlisten(id int) {
	f.mu.Lock()
	l := f.listeners[id]
	delete(f.listeners, id)
	f.mu.Unlock()
	if l != nil {
		close(l.stop)
		<-l.done
	}
}

// listener hands one caller its reports on its own goroutine, so a slow
// callback never holds up the download other callers share. While the
// callback is busy, a newer byte count replaces a queued one; phase changes
// are all kept.
type listener struct {
	fn    func(Progress)
	mu    sync.Mutex
	queue []Progress
	wake  chan struct{} // capacity 1
	stop  chan struct{}
	done  chan struct{}
}

func (l *listener) post(p Progress) {
	l.mu.Lock()
	if n := len(l.queue); n > 0 && p.Phase == PhaseDownloading && l.queue[n-1].Phase == PhaseDownloading && l.queue[n-1].Server == p.Server {
		l.queue[n-1] = p
	} else {
		l.queue = append(l.queue, p)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run delivers queued reports until stopped, then delivers what is left.
func (l *listener) run() {
	defer close(l.done)
	for {
		stopping := false
		select {
		case <-l.stop:
			stopping = true
		case <-l.wake:
		}
		for {
			l.mu.Lock()
			if len(l.queue) == 0 {
				l.mu.Unlock()
				break
			}
			p := l.queue[0]
			l.queue = l.queue[1:]
			l.mu.Unlock()
			l.fn(p)
		}
		if stopping {
			return
		}
	}
}

// join waits for the shared download of key, starting it if needed. When
// ctx ends first, only this caller leaves; the download is cancelled when
// no caller is left.
func (c *Client) join(ctx context.Context, key, bid string, kind Kind, file string, progress func(Progress)) (fetched, error) {
	if err := context.Cause(ctx); err != nil {
		return fetched{}, fmt.Errorf("debuginfod: %s for build ID %s: %w", kind, bid, err)
	}
	c.mu.Lock()
	f := c.flights[key]
	if f == nil {
		fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		f = &flight{ctx: fctx, cancel: cancel, listeners: map[int]*listener{}}
		c.flights[key] = f
	}
	f.waiters++
	c.mu.Unlock()
	id := f.listen(progress)

	ch := c.group.DoChan(key, func() (any, error) {
		defer func() {
			c.mu.Lock()
			if c.flights[key] == f {
				delete(c.flights, key)
			}
			c.mu.Unlock()
		}()
		return c.download(f, key, bid, kind, file)
	})
	select {
	case r := <-ch:
		c.leave(key, f, id)
		if r.Err != nil {
			return fetched{}, r.Err
		}
		return r.Val.(fetched), nil
	case <-ctx.Done():
		c.leave(key, f, id)
		return fetched{}, fmt.Errorf("debuginfod: %s for build ID %s: %w", kind, bid, context.Cause(ctx))
	}
}

func (c *Client) leave(key string, f *flight, id int) {
	f.unlisten(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	f.waiters--
	if f.waiters > 0 {
		return
	}
	f.cancel(errAbandoned)
	if c.flights[key] == f {
		delete(c.flights, key)
		// A later caller must start afresh, not join a cancelled download.
		c.group.Forget(key)
	}
}
