package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// defaultProfilePath is what a URL without a path fetches, as go tool pprof
// does: net/http/pprof's CPU profile.
const defaultProfilePath = "/debug/pprof/profile"

// isProfileURL reports whether a FILE argument of serve or upload is an
// http(s) URL to fetch rather than a local file.
func isProfileURL(arg string) bool {
	l := strings.ToLower(arg)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// profileURL is a URL to fetch a profile from, adjusted as go tool pprof
// adjusts its sources (cmd/pprof's adjustURL): an empty path is
// /debug/pprof/profile; seconds, when positive, sets or replaces the
// query's seconds= (net/http/pprof's profile, trace and delta
// heap/allocs/mutex/block endpoints take it), otherwise the query's own
// seconds= is the duration. timeout is how long the server may take to
// answer: 1.5 × the duration, or 60 s without one, as pprof waits.
func profileURL(raw string, seconds int) (u *url.URL, timeout time.Duration, err error) {
	u, err = url.Parse(raw)
	if err != nil {
		return nil, 0, fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, 0, fmt.Errorf("%q: give an http:// or https:// URL with a host, e.g. http://localhost:6060/debug/pprof/heap", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = defaultProfilePath
	}
	q := u.Query()
	var d time.Duration
	if seconds > 0 {
		q.Set("seconds", strconv.Itoa(seconds))
		d = time.Duration(seconds) * time.Second
	} else if s := q.Get("seconds"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 32); err == nil && n > 0 {
			d = time.Duration(n) * time.Second
		}
	}
	u.RawQuery = q.Encode()
	timeout = 60 * time.Second
	if d > 0 {
		timeout = d + d/2
	}
	return u, timeout, nil
}

// fetchedProfile is a profile's bytes as a URL answered them, and a name
// for them (host and endpoint, as the upload's file name).
type fetchedProfile struct {
	url  string
	name string
	data []byte
}

// fetchProfile gets the profile raw names (adjusted by profileURL with
// seconds), of at most max bytes as sent, saying on stderr what it
// fetches and how long it waits, as go tool pprof does. Its errors name
// the URL and what was wrong: a status other than 2xx (with the text a
// net/http/pprof endpoint answers, such as "profile duration exceeds
// server's WriteTimeout"), an HTML page where a profile was expected, a
// body over max, no answer in time.
func fetchProfile(ctx context.Context, raw string, seconds int, max int64, stderr io.Writer) (*fetchedProfile, error) {
	u, timeout, err := profileURL(raw, seconds)
	if err != nil {
		return nil, err
	}
	src := u.String()
	fmt.Fprintf(stderr, "viewer: fetching profile over HTTP from %s\n", src)
	if d := u.Query().Get("seconds"); d != "" {
		fmt.Fprintf(stderr, "viewer: please wait... (%ss)\n", d)
	}
	// The server takes the profile's duration before it answers, then
	// sends the body: the wait for the headers is pprof's (timeout + 5 s),
	// and the whole fetch gets as long again for the body.
	ctx, cancel := context.WithTimeout(ctx, 2*timeout+5*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout + 5*time.Second,
	}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("fetching %s: no answer within %v; is the profile's seconds= longer than the server lets a request run (its WriteTimeout)?", src, timeout+5*time.Second)
		}
		return nil, fmt.Errorf("fetching %s: %w", src, err)
	}
	defer resp.Body.Close()
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("fetching %s: the server answered %s", src, resp.Status)
		if ctype == "text/plain" {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			if t := strings.TrimSpace(string(b)); t != "" {
				msg += ": " + t
			}
		}
		return nil, errors.New(msg)
	}
	if ctype == "text/html" {
		return nil, fmt.Errorf("fetching %s: the server answered an HTML page, not a profile; give a profile's endpoint, such as /debug/pprof/profile?seconds=30 or /debug/pprof/heap", src)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: reading the answer: %w", src, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("fetching %s: the answer is larger than %s, the largest upload (--max-upload)", src, sizeFlag(max))
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("fetching %s: the server answered %s with no bytes, not a profile", src, resp.Status)
	}
	return &fetchedProfile{url: src, name: u.Host + "-" + path.Base(u.Path), data: data}, nil
}
