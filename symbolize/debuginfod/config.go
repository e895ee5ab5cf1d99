package debuginfod

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults, as in elfutils' debuginfod-client.c.
const (
	DefaultTimeout    = 90 * time.Second
	DefaultRetryLimit = 2
	// DefaultEtcDir holds the distribution's *.urls files.
	DefaultEtcDir = "/etc/debuginfod"
)

// Config says where to look for files and how to fetch them. The zero value
// with a CacheDir is a cache-only client.
type Config struct {
	// URLs are the debuginfod servers' base URLs; empty means none.
	URLs []string
	// URLsFrom says where URLs came from, for the start-up message:
	// "DEBUGINFOD_URLS", a *.urls file glob, "--debuginfod-urls",
	// "--no-debuginfod".
	URLsFrom string
	// CacheDir is the elfutils-layout cache directory.
	CacheDir string
	// Context, when set, ends the client's cache-cleaning timer when it
	// is done, as Close does.
	Context context.Context
	// Timeout is DEBUGINFOD_TIMEOUT: a server that sends less than 100 KiB
	// within this long (counting from the request) is given up. 0 disables.
	Timeout time.Duration
	// MaxTime is DEBUGINFOD_MAXTIME, a bound on the whole fetch. 0: none.
	MaxTime time.Duration
	// MaxSize is DEBUGINFOD_MAXSIZE in bytes, sent as X-DEBUGINFOD-MAXSIZE
	// and enforced on what arrives. 0: none.
	MaxSize int64
	// RetryLimit is DEBUGINFOD_RETRY_LIMIT: how many times a server that
	// failed with a network error, a 5xx or a 429 is asked again.
	RetryLimit int
	// RetryBackoff is the wait before the first retry, doubled each time
	// (default 500ms). Retry-After is honoured up to 10 times this.
	RetryBackoff time.Duration
	// Headers are added to every request (DEBUGINFOD_HEADERS_FILE).
	Headers http.Header
	// UserAgent is sent with every request; default names viewer.
	UserAgent string
	// HTTPClient does the requests; default: its own transport that asks for
	// no compression, reads file:/// URLs and follows redirects to http(s) only.
	HTTPClient *http.Client
	// MaxParallel bounds concurrent downloads of distinct files (default 8),
	// so a profile with hundreds of binaries does not flood a server.
	MaxParallel int
	// Logf, if set, receives one line per notable event (retries, discarded
	// files, cache cleaning).
	Logf func(format string, args ...any)
}

// Environment is where ConfigFromEnv reads its settings; tests fill it in.
type Environment struct {
	// Lookup reads a variable, telling unset from empty (os.LookupEnv).
	Lookup func(string) (string, bool)
	// EtcDir holds *.urls files read when DEBUGINFOD_URLS is unset
	// (default /etc/debuginfod).
	EtcDir string
}

// ConfigFromEnv builds a Config from the environment as elfutils reads it:
// DEBUGINFOD_URLS (unset: the *.urls files in /etc/debuginfod; set but
// empty: no servers), DEBUGINFOD_CACHE_PATH, XDG_CACHE_HOME, HOME,
// DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXTIME, DEBUGINFOD_MAXSIZE,
// DEBUGINFOD_RETRY_LIMIT and DEBUGINFOD_HEADERS_FILE.
//
// getenv cannot tell an empty variable from an unset one; when it is
// os.Getenv, os.LookupEnv is used instead so DEBUGINFOD_URLS="" turns
// servers off. Other functions' empty results read as unset; use
// Environment.Config to say otherwise.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	return envFrom(getenv).Config()
}

func envFrom(getenv func(string) string) Environment {
	if getenv == nil || reflect.ValueOf(getenv).Pointer() == reflect.ValueOf(os.Getenv).Pointer() {
		return Environment{Lookup: os.LookupEnv}
	}
	return Environment{Lookup: func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	}}
}

// Config reads the environment e describes.
func (e Environment) Config() (Config, error) {
	lookup := e.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	get := func(k string) string { v, _ := lookup(k); return v }
	etc := e.EtcDir
	if etc == "" {
		etc = DefaultEtcDir
	}
	var c Config
	var errs []error

	if v, ok := lookup("DEBUGINFOD_URLS"); ok {
		c.URLs = strings.Fields(v)
		c.URLsFrom = "DEBUGINFOD_URLS"
	} else {
		urls, from, err := readURLFiles(etc)
		if err != nil {
			errs = append(errs, err)
		}
		c.URLs, c.URLsFrom = urls, from
	}

	c.CacheDir = cacheDirFromEnv(get)

	c.Timeout = DefaultTimeout
	if v := get("DEBUGINFOD_TIMEOUT"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("DEBUGINFOD_TIMEOUT=%q: want a whole number of seconds (0 disables)", v))
		} else {
			c.Timeout = time.Duration(n) * time.Second
		}
	}
	if v := get("DEBUGINFOD_MAXTIME"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("DEBUGINFOD_MAXTIME=%q: want a whole number of seconds (0: no limit)", v))
		} else {
			c.MaxTime = time.Duration(n) * time.Second
		}
	}
	if v := get("DEBUGINFOD_MAXSIZE"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("DEBUGINFOD_MAXSIZE=%q: want a whole number of bytes (0: no limit)", v))
		} else {
			c.MaxSize = n
		}
	}
	c.RetryLimit = DefaultRetryLimit
	if v := get("DEBUGINFOD_RETRY_LIMIT"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("DEBUGINFOD_RETRY_LIMIT=%q: want a whole number of retries", v))
		} else {
			c.RetryLimit = n
		}
	}
	if v := get("DEBUGINFOD_HEADERS_FILE"); v != "" {
		h, err := ReadHeadersFile(v)
		if err != nil {
			errs = append(errs, err)
		}
		c.Headers = h
	}
	return c, errors.Join(errs...)
}

// cacheDirFromEnv follows elfutils: DEBUGINFOD_CACHE_PATH; else
// ~/.debuginfod_client_cache if it exists; else
// $XDG_CACHE_HOME/debuginfod_client; else ~/.cache/debuginfod_client.
func cacheDirFromEnv(get func(string) string) string {
	if v := get("DEBUGINFOD_CACHE_PATH"); v != "" {
		return v
	}
	home := get("HOME")
	if home == "" {
		home = "/"
	}
	if old := filepath.Join(home, ".debuginfod_client_cache"); isDir(old) {
		return old
	}
	if x := get("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "debuginfod_client")
	}
	return filepath.Join(home, ".cache", "debuginfod_client")
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// readURLFiles reads the server URLs from dir/*.urls, as Debian's and
// Fedora's profile scripts do, for processes those scripts never reach
// (services, cron jobs). Lines starting with # are comments.
func readURLFiles(dir string) (urls []string, from string, err error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.urls"))
	sort.Strings(files)
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading debuginfod server list: %w", err))
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			urls = append(urls, strings.Fields(line)...)
		}
	}
	if len(files) > 0 {
		from = filepath.Join(dir, "*.urls")
	}
	return urls, from, errors.Join(errs...)
}

// ReadHeadersFile reads DEBUGINFOD_HEADERS_FILE: one "Name: value" per line;
// blank lines are skipped. A line that is not a header is an error naming it.
func ReadHeadersFile(path string) (http.Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("DEBUGINFOD_HEADERS_FILE: %w", err)
	}
	defer f.Close()
	h := http.Header{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("DEBUGINFOD_HEADERS_FILE %s line %d: %q is not a \"Name: value\" header", path, n, line)
		}
		h.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("DEBUGINFOD_HEADERS_FILE %s: %w", path, err)
	}
	return h, nil
}

// Flags are the command-line switches every subcommand that may fetch debug
// info shares; they override the environment.
type Flags struct {
	URLs string
	Off  bool
	set  bool // --debuginfod-urls was given
}

// RegisterFlags adds --debuginfod-urls and --no-debuginfod to fs.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.Func("debuginfod-urls", "space-separated debuginfod server `URLs` (overrides DEBUGINFOD_URLS and /etc/debuginfod/*.urls)", func(s string) error {
		f.URLs, f.set = s, true
		return nil
	})
	fs.BoolVar(&f.Off, "no-debuginfod", false, "send no build ID to any debuginfod server; use only the local cache")
	return f
}

// Config reads the environment (see ConfigFromEnv) and applies the flags.
func (f *Flags) Config(getenv func(string) string) (Config, error) {
	c, err := ConfigFromEnv(getenv)
	if err != nil {
		return c, err
	}
	return f.Apply(c)
}

// Apply overrides c's servers with the flags.
func (f *Flags) Apply(c Config) (Config, error) {
	if f == nil {
		return c, nil
	}
	if f.Off && f.set && strings.TrimSpace(f.URLs) != "" {
		return c, errors.New("--no-debuginfod and --debuginfod-urls contradict each other; give one")
	}
	switch {
	case f.Off:
		c.URLs, c.URLsFrom = nil, "--no-debuginfod"
	case f.set:
		c.URLs, c.URLsFrom = strings.Fields(f.URLs), "--debuginfod-urls"
	}
	return c, nil
}
