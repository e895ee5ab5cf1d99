package debuginfod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// minProgress is the least data (in bytes) DEBUGINFOD_TIMEOUT demands per
// period, as elfutils' CURLOPT_LOW_SPEED_LIMIT.
const minProgress = 100 << 10

// LocalSizeLimit caps what is written for one file when DEBUGINFOD_MAXSIZE
// is not set, so an endless body cannot fill the disk. The largest debug
// files seen in distributions are a few GiB.
const LocalSizeLimit = 16 << 30

// progressEvery is how many bytes pass between two downloading reports.
const progressEvery = 64 << 10

// fetched is a downloaded file and the server it came from; server is
// empty when the cache had it after all.
type fetched struct {
	path   string
	server string
}

// download runs one shared fetch: it asks every server, keeps the first
// good answer, verifies it and moves it into the cache.
func (c *Client) download(f *flight, key, bid string, kind Kind, file string) (fetched, error) {
	ctx := f.ctx
	if c.cfg.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.cfg.MaxTime, &MaxTimeError{MaxTime: c.cfg.MaxTime})
		defer cancel()
	}
	select {
	case c.sem <- struct{}{}:
		defer func() { <-c.sem }()
	case <-ctx.Done():
		return fetched{}, context.Cause(ctx)
	}
	if err := c.cache.ensure(); err != nil {
		return fetched{}, err
	}
	c.cache.clean(c.logf)
	// Another process (or an earlier flight) may have fetched it meanwhile.
	if path, err, done := c.fromCache(key, bid, kind, file); done {
		return fetched{path: path}, err
	}

	candidates := c.servers
	var failures []*ServerError
	for len(candidates) > 0 && ctx.Err() == nil {
		winner, errs, path := c.round(ctx, f, candidates, bid, kind, file)
		if path != "" {
			c.memo.Add(key, memoEntry{path: path})
			return fetched{path, winner}, nil
		}
		failures = append(failures, errs...)
		if winner == "" {
			break
		}
		// The server that answered 200 sent something unusable; others
		// that were cancelled when it won get their turn.
		var next []string
		for _, s := range candidates {
			if s == winner {
				continue
			}
			if !hasServer(errs, s) {
				next = append(next, s)
			}
		}
		candidates = next
	}
	if ctx.Err() != nil {
		return fetched{}, fmt.Errorf("debuginfod: %s for build ID %s: %w", kind, bid, context.Cause(ctx))
	}
	ferr := &FetchError{BuildID: bid, Kind: kind, Servers: failures}
	if ferr.notFound() {
		c.cache.writeNegative(bid, file)
		c.memo.Add(key, memoEntry{since: time.Now()})
	}
	return fetched{}, ferr
}

func hasServer(errs []*ServerError, s string) bool {
	for _, e := range errs {
		if e.Server == s {
			return true
		}
	}
	return false
}

// round asks all candidates in parallel. The first to answer 200 wins and
// the others are cancelled. It returns the winner (empty if none), the
// errors of servers that finished on their own, and the cached path when
// the winner's file was good.
func (c *Client) round(ctx context.Context, f *flight, servers []string, bid string, kind Kind, file string) (winner string, errs []*ServerError, path string) {
	type result struct {
		server string
		path   string
		err    *ServerError
		lost   bool // cancelled because another server won
	}
	var (
		mu      sync.Mutex
		won     = -1
		cancels = make([]context.CancelFunc, len(servers))
		ctxs    = make([]context.Context, len(servers))
	)
	for i := range servers {
		ctxs[i], cancels[i] = context.WithCancel(ctx)
	}
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	claim := func(i int) bool {
		mu.Lock()
		defer mu.Unlock()
		if won >= 0 {
			return won == i
		}
		won = i
		for j, cancel := range cancels {
			if j != i {
				cancel()
			}
		}
		return true
	}
	results := make(chan result, len(servers))
	for i, s := range servers {
		go func() {
			p, err := c.tryServer(ctxs[i], f, s, bid, kind, file, func() bool { return claim(i) })
			r := result{server: s, path: p}
			if err != nil {
				mu.Lock()
				r.lost = won >= 0 && won != i && ctxs[i].Err() != nil && ctx.Err() == nil
				mu.Unlock()
				r.err = err
			}
			results <- r
		}()
	}
	for range servers {
		r := <-results
		if r.path != "" {
			path = r.path
		}
		if r.err != nil && !r.lost && ctx.Err() == nil {
			errs = append(errs, r.err)
		}
	}
	if won >= 0 {
		winner = servers[won]
	}
	return winner, errs, path
}

// tryServer asks one server, retrying network errors, 5xx and 429 up to
// RetryLimit times with backoff. claim is called on a 200; when it says
// another server already won, tryServer stops.
func (c *Client) tryServer(ctx context.Context, f *flight, server, bid string, kind Kind, file string, claim func() bool) (string, *ServerError) {
	u := server + "/buildid/" + bid + "/" + urlSuffix(kind)
	fail := func(err error) *ServerError { return &ServerError{Server: server, URL: u, Err: err} }
	claimed := false
	for attempt := 0; ; attempt++ {
		if err := c.breaker.check(server); err != nil {
			return "", fail(err)
		}
		f.emit(Progress{BuildID: bid, Kind: kind, Server: server, Phase: PhaseConnecting, Total: -1})
		path, err, retryAfter := c.attempt(ctx, f, server, u, bid, kind, file, &claimed, claim)
		if ctx.Err() != nil {
			return "", fail(context.Cause(ctx))
		}
		c.breaker.record(server, err)
		if err == nil {
			return path, nil
		}
		if !retryable(err) || attempt >= c.cfg.RetryLimit {
			return "", fail(err)
		}
		wait := c.cfg.RetryBackoff << attempt
		wait = wait/2 + rand.N(wait/2+1) // jitter, so clients do not retry in step
		if retryAfter > wait {
			wait = min(retryAfter, 10*c.cfg.RetryBackoff<<attempt)
		}
		c.logf("debuginfod: %s: %v; retrying in %v (%d of %d)", u, err, wait.Round(time.Millisecond), attempt+1, c.cfg.RetryLimit)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fail(context.Cause(ctx))
		case <-t.C:
		}
	}
}

// breaker stops asking a server that could not be reached several times
// in a row, for a while, so an offline laptop or a dead server does not
// cost every build ID its retries. Any HTTP answer closes it again.
type breaker struct {
	mu    sync.Mutex
	state map[string]*breakerState
}

type breakerState struct {
	failures  int
	openUntil time.Time
}

const (
	breakerThreshold = 3
	breakerCooldown  = 30 * time.Second
)

// UnreachableError is returned for a server skipped after repeated network
// failures.
type UnreachableError struct {
	Failures int
	Until    time.Time
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("skipped: unreachable %d times in a row; asked again after %s", e.Failures, e.Until.Format(time.TimeOnly))
}

func (b *breaker) check(server string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.state[server]; st != nil && time.Now().Before(st.openUntil) {
		return &UnreachableError{Failures: st.failures, Until: st.openUntil}
	}
	return nil
}

// record counts network failures (no HTTP answer at all) and resets on
// anything else.
func (b *breaker) record(server string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == nil {
		b.state = map[string]*breakerState{}
	}
	st := b.state[server]
	if st == nil {
		st = &breakerState{}
		b.state[server] = st
	}
	if !isNetworkError(err) {
		st.failures, st.openUntil = 0, time.Time{}
		return
	}
	st.failures++
	if st.failures >= breakerThreshold {
		st.openUntil = time.Now().Add(breakerCooldown)
	}
}

// isNetworkError reports an error that came before any HTTP answer.
func isNetworkError(err error) bool {
	if err == nil {
		return false
	}
	var se *StatusError
	var ve *VerifyError
	var tl *TooLargeError
	var st *StalledError
	var fe *fileError
	var re *RedirectError
	return !errors.As(err, &se) && !errors.As(err, &ve) && !errors.As(err, &tl) && !errors.As(err, &st) && !errors.As(err, &fe) && !errors.As(err, &re)
}

// retryable reports whether err is worth asking the same server again:
// network errors, stalls, 5xx and 429, but not 404, 406, other 4xx or a
// file that failed verification.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status >= 500 || se.Status == http.StatusTooManyRequests
	}
	var ve *VerifyError
	var tl *TooLargeError
	if errors.As(err, &ve) || errors.As(err, &tl) {
		return false
	}
	var fe *fileError
	var ue *UnreachableError
	var re *RedirectError
	return !errors.As(err, &fe) && !errors.As(err, &ue) && !errors.As(err, &re)
}

// fileError is a local failure (writing the cache), not worth a retry.
type fileError struct{ err error }

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// attempt is one GET of u, downloading the body into the cache when this
// server wins.
func (c *Client) attempt(ctx context.Context, f *flight, server, u, bid string, kind Kind, file string, claimed *bool, claim func() bool) (path string, err error, retryAfter time.Duration) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var received atomic.Int64
	if c.cfg.Timeout > 0 {
		stop := make(chan struct{})
		defer close(stop)
		go watchdog(c.cfg.Timeout, &received, stop, cancel)
	}
	// stalled turns a cancellation by the watchdog into its StalledError.
	stalled := func(err error) error {
		if ctx.Err() == nil {
			var se *StalledError
			if cause := context.Cause(actx); errors.As(cause, &se) {
				return se
			}
		}
		return err
	}

	req, err := http.NewRequestWithContext(actx, http.MethodGet, u, nil)
	if err != nil {
		return "", err, 0
	}
	for k, vs := range c.cfg.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if c.cfg.MaxSize > 0 {
		req.Header.Set("X-DEBUGINFOD-MAXSIZE", strconv.FormatInt(c.cfg.MaxSize, 10))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", stalled(err), 0
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotAcceptable && c.cfg.MaxSize > 0:
		return "", &TooLargeError{Limit: c.cfg.MaxSize, Size: -1}, 0
	default:
		size := resp.ContentLength
		if n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)); size < 0 && err == nil && n < 64<<10 {
			size = n
		}
		return "", &StatusError{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Size: size}, parseRetryAfter(resp.Header.Get("Retry-After"))
	}

	total := resp.ContentLength
	if total < 0 {
		if n, err := strconv.ParseInt(resp.Header.Get("X-Debuginfod-Size"), 10, 64); err == nil && n >= 0 {
			total = n
		}
	}
	limit := c.cfg.MaxSize
	if limit <= 0 {
		limit = LocalSizeLimit
	}
	if total > limit {
		return "", &TooLargeError{Limit: limit, Size: total}, 0
	}
	if !*claimed {
		if !claim() {
			return "", context.Canceled, 0
		}
		*claimed = true
	}
	if _, ok := sourcePath(kind); ok {
		if err := checkSourceType(resp.Header.Get("Content-Type"), string(kind)); err != nil {
			return "", &VerifyError{Want: bid, Reason: err.Error()}, 0
		}
	}

	tmp, err := c.cache.tempFile(bid, file)
	if err != nil {
		return "", &fileError{err}, 0
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	emit := func(n int64) {
		f.emit(Progress{BuildID: bid, Kind: kind, Server: server, Phase: PhaseDownloading, Bytes: n, Total: total})
	}
	emit(0)
	body := io.LimitReader(resp.Body, limit+1)
	stopBeat := heartbeat(&received, emit)
	n, err := copyWithProgress(tmp, body, &received, emit)
	stopBeat()
	if err != nil {
		var we *writeError
		if errors.As(err, &we) {
			return "", &fileError{fmt.Errorf("writing %s: %w", tmp.Name(), we.err)}, 0
		}
		return "", stalled(fmt.Errorf("reading the body after %d bytes: %w", n, err)), 0
	}
	emit(n)
	if n > limit {
		return "", &TooLargeError{Limit: limit, Size: n}, 0
	}

	if kind == KindDebuginfo || kind == KindExecutable {
		f.emit(Progress{BuildID: bid, Kind: kind, Server: server, Phase: PhaseVerifying, Bytes: n, Total: total})
		got, err := elfBuildID(tmp)
		if err != nil {
			c.logf("debuginfod: %s: discarded: %v", u, err)
			return "", &VerifyError{Want: bid, Reason: err.Error() + " (" + bodyKind(resp.Header.Get("Content-Type"), n) + ")"}, 0
		}
		if got != bid {
			c.logf("debuginfod: %s: discarded: build ID %s", u, got)
			return "", &VerifyError{Want: bid, Got: got}, 0
		}
	}
	var mtime time.Time
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		mtime, _ = http.ParseTime(lm)
	}
	keep = true
	path, err = c.cache.commit(tmp, bid, file, mtime)
	if err != nil {
		return "", &fileError{err}, 0
	}
	return path, nil, 0
}

// checkSourceType refuses an HTML page sent for a source file that is not
// itself HTML: the mark of a proxy or login page answering 200.
func checkSourceType(contentType, kind string) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "text/html" {
		return nil
	}
	lk := strings.ToLower(kind)
	if strings.HasSuffix(lk, ".html") || strings.HasSuffix(lk, ".htm") {
		return nil
	}
	return errors.New("an HTML page (Content-Type text/html) instead of the source file")
}

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// watchdog cancels the attempt when less than minProgress bytes arrived in
// the last period: elfutils' DEBUGINFOD_TIMEOUT.
func watchdog(period time.Duration, received *atomic.Int64, stop <-chan struct{}, cancel context.CancelCauseFunc) {
	t := time.NewTicker(period)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			n := received.Load()
			if n-last < minProgress {
				cancel(&StalledError{Timeout: period, Bytes: n - last})
				return
			}
			last = n
		}
	}
}

// heartbeatEvery is the longest time between two downloading reports while
// a body is read, so that a small file (under progressEvery) or a stalled
// server still shows a live row with its elapsed time.
const heartbeatEvery = time.Second

// heartbeat reports the bytes received so far every heartbeatEvery until
// the returned stop is called; stop returns once no report is under way,
// so a later phase is never followed by a stale downloading report.
func heartbeat(received *atomic.Int64, report func(int64)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				report(received.Load())
			}
		}
	}()
	return func() { close(quit); <-done }
}

// writeError marks a failure to write the local file.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// copyWithProgress copies src to dst, counting bytes into received and
// calling report at most once per progressEvery bytes. Reads fill a 1 MiB
// buffer before it is written, so a fast download costs few write calls.
func copyWithProgress(dst io.Writer, src io.Reader, received *atomic.Int64, report func(int64)) (int64, error) {
	buf := make([]byte, 1<<20)
	var n, reported int64
	fill := 0
	flush := func() error {
		if fill == 0 {
			return nil
		}
		if _, err := dst.Write(buf[:fill]); err != nil {
			return &writeError{err}
		}
		fill = 0
		return nil
	}
	for {
		m, rerr := src.Read(buf[fill:])
		if m > 0 {
			fill += m
			n += int64(m)
			received.Store(n)
			if n-reported >= progressEvery {
				report(n)
				reported = n
			}
			if fill == len(buf) {
				if err := flush(); err != nil {
					return n, err
				}
			}
		}
		if rerr == io.EOF {
			return n, flush()
		}
		if rerr != nil {
			return n, rerr
		}
	}
}
