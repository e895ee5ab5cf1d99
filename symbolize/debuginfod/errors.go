package debuginfod

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"viewer/symbolize/buildid"
)

// ErrNoServers is returned when a file is not in the cache and no debuginfod
// server is configured (DEBUGINFOD_URLS empty, --no-debuginfod).
var ErrNoServers = errors.New("debuginfod: not in the cache and no debuginfod server is configured (set DEBUGINFOD_URLS or --debuginfod-urls)")

// InvalidBuildIDError says why a build ID was refused before any request
// (buildid.Normalize, the one check).
type InvalidBuildIDError = buildid.InvalidError

// InvalidKindError says why a Kind was refused.
type InvalidKindError struct {
	Kind   Kind
	Reason string
}

func (e *InvalidKindError) Error() string {
	return fmt.Sprintf("debuginfod: invalid kind %q: %s; use debuginfo, executable or source/ABSOLUTE/PATH", e.Kind, e.Reason)
}

// StatusError is an HTTP answer other than 200 from one server. It says
// what the body was, never what it said: the message reaches users of a
// shared server, and the body is the server's (or whatever it redirected
// to) to choose.
type StatusError struct {
	Status      int
	ContentType string // "" when the server sent none
	Size        int64  // body bytes, -1 when unknown
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP status %d (%s)", e.Status, bodyKind(e.ContentType, e.Size))
}

// bodyKind describes a reply's body by its type and size.
func bodyKind(contentType string, size int64) string {
	if contentType == "" {
		contentType = "no content type"
	}
	if size < 0 {
		return contentType + ", size unknown"
	}
	return fmt.Sprintf("%s, %d bytes", contentType, size)
}

// RedirectError is a redirect the client refused to follow: to a host not
// in the server list, to a loopback, link-local or private address, to a
// non-HTTP URL, or one too many.
type RedirectError struct {
	Reason string
}

func (e *RedirectError) Error() string { return e.Reason }

// Is makes 404 and 410 answers match ErrNotFound.
func (e *StatusError) Is(target error) bool {
	return target == ErrNotFound && (e.Status == 404 || e.Status == 410)
}

// TooLargeError means a file exceeds DEBUGINFOD_MAXSIZE, by the server's 406,
// its announced size, or the bytes actually received.
type TooLargeError struct {
	Limit int64
	Size  int64 // announced or received size; -1 when the server only said 406
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("file larger than the %d-byte limit (server answered 406); raise DEBUGINFOD_MAXSIZE", e.Limit)
	}
	return fmt.Sprintf("file of at least %d bytes exceeds the %d-byte limit; raise DEBUGINFOD_MAXSIZE", e.Size, e.Limit)
}

// StalledError means less than 100 KiB arrived within DEBUGINFOD_TIMEOUT.
type StalledError struct {
	Timeout time.Duration
	Bytes   int64 // received in the last window
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("transfer stalled: %d bytes in %v, under the 100 KiB required per DEBUGINFOD_TIMEOUT", e.Bytes, e.Timeout)
}

// MaxTimeError means the whole fetch took longer than DEBUGINFOD_MAXTIME.
type MaxTimeError struct {
	MaxTime time.Duration
}

func (e *MaxTimeError) Error() string {
	return fmt.Sprintf("fetch took longer than DEBUGINFOD_MAXTIME (%v)", e.MaxTime)
}

// VerifyError means a server sent a file that is not what was asked for: not
// ELF, no build ID, another build ID, or an HTML page. The file is discarded.
type VerifyError struct {
	Want   string // requested build ID
	Got    string // build ID found in the file, empty if none
	Reason string
}

func (e *VerifyError) Error() string {
	if e.Got != "" {
		return fmt.Sprintf("returned a file with build ID %s instead of %s; discarded", e.Got, e.Want)
	}
	return fmt.Sprintf("returned a file that is not the requested one (%s); discarded", e.Reason)
}

// ServerError is one server's failure within a fetch.
type ServerError struct {
	Server string // base URL as configured
	URL    string // full request URL
	Err    error
}

func (e *ServerError) Error() string { return e.Server + ": " + e.Err.Error() }
func (e *ServerError) Unwrap() error { return e.Err }

// FetchError is the outcome of a fetch no server could satisfy. It matches
// ErrNotFound (errors.Is) only when every server said not found, which is
// also the only case that writes a negative cache entry.
type FetchError struct {
	BuildID string
	Kind    Kind
	Servers []*ServerError
}

func (e *FetchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "debuginfod: %s for build ID %s: ", e.Kind, e.BuildID)
	if e.notFound() {
		b.WriteString("not found on ")
		for i, s := range e.Servers {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s.Server)
		}
		return b.String()
	}
	for i, s := range e.Servers {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s.Error())
	}
	return b.String()
}

func (e *FetchError) notFound() bool {
	if len(e.Servers) == 0 {
		return true
	}
	for _, s := range e.Servers {
		if !errors.Is(s.Err, ErrNotFound) {
			return false
		}
	}
	return true
}

// Is reports ErrNotFound when all servers said not found.
func (e *FetchError) Is(target error) bool { return target == ErrNotFound && e.notFound() }

// Unwrap gives the per-server errors, so errors.As finds a VerifyError or a
// TooLargeError among them.
func (e *FetchError) Unwrap() []error {
	errs := make([]error, len(e.Servers))
	for i, s := range e.Servers {
		errs[i] = s
	}
	return errs
}

// negativeCacheError is returned when a negative cache entry (or the memo of
// one) says no server had the file recently.
type negativeCacheError struct {
	BuildID string
	Kind    Kind
	Path    string
	Until   time.Time
}

func (e *negativeCacheError) Error() string {
	where := "remembered"
	if e.Path != "" {
		where = "negative cache entry " + e.Path
	}
	return fmt.Sprintf("debuginfod: %s for build ID %s: not found (%s; asked again after %s)", e.Kind, e.BuildID, where, e.Until.Format(time.TimeOnly))
}

func (e *negativeCacheError) Is(target error) bool { return target == ErrNotFound }

// MissRemembered reports whether err is a miss answered from the negative
// cache, without asking a server, and until when it is remembered: the
// file is asked for again after that (or once ForgetMiss is called, when
// it arrives somewhere).
func MissRemembered(err error) (until time.Time, ok bool) {
	var n *negativeCacheError
	if errors.As(err, &n) {
		return n.Until, true
	}
	return time.Time{}, false
}
