package debuginfod_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
)

func mapEnv(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	etc := t.TempDir()
	os.WriteFile(filepath.Join(etc, "a.urls"), []byte("https://a.example/ https://b.example # two\n"), 0o644)
	os.WriteFile(filepath.Join(etc, "b.urls"), []byte("# none\nhttps://c.example\n"), 0o644)

	cfg := func(vars map[string]string) debuginfod.Config {
		t.Helper()
		c, err := debuginfod.Environment{EtcDir: etc, Lookup: mapEnv(vars)}.Config()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	c := cfg(map[string]string{"HOME": home})
	if want := []string{"https://a.example/", "https://b.example", "https://c.example"}; !reflect.DeepEqual(c.URLs, want) {
		t.Errorf("URLs from *.urls: %v, want %v", c.URLs, want)
	}
	if c.CacheDir != filepath.Join(home, ".cache", "debuginfod_client") {
		t.Errorf("default cache %s", c.CacheDir)
	}
	if c.Timeout != 90*time.Second || c.RetryLimit != 2 || c.MaxTime != 0 || c.MaxSize != 0 {
		t.Errorf("defaults: timeout %v, retries %d, maxtime %v, maxsize %d", c.Timeout, c.RetryLimit, c.MaxTime, c.MaxSize)
	}

	c = cfg(map[string]string{"HOME": home, "DEBUGINFOD_URLS": " https://x.example  https://y.example ", "XDG_CACHE_HOME": "/xdg",
		"DEBUGINFOD_TIMEOUT": "5", "DEBUGINFOD_MAXTIME": "60", "DEBUGINFOD_MAXSIZE": "1048576", "DEBUGINFOD_RETRY_LIMIT": "0"})
	if want := []string{"https://x.example", "https://y.example"}; !reflect.DeepEqual(c.URLs, want) || c.URLsFrom != "DEBUGINFOD_URLS" {
		t.Errorf("URLs %v from %s, want %v from DEBUGINFOD_URLS", c.URLs, c.URLsFrom, want)
	}
	if c.CacheDir != "/xdg/debuginfod_client" {
		t.Errorf("XDG cache %s", c.CacheDir)
	}
	if c.Timeout != 5*time.Second || c.MaxTime != time.Minute || c.MaxSize != 1<<20 || c.RetryLimit != 0 {
		t.Errorf("parsed: timeout %v, maxtime %v, maxsize %d, retries %d", c.Timeout, c.MaxTime, c.MaxSize, c.RetryLimit)
	}

	if c = cfg(map[string]string{"DEBUGINFOD_URLS": ""}); len(c.URLs) != 0 {
		t.Errorf("DEBUGINFOD_URLS=\"\" gave %v, want no servers", c.URLs)
	}

	// The old ~/.debuginfod_client_cache wins over XDG when it exists; the
	// explicit path wins over both.
	os.Mkdir(filepath.Join(home, ".debuginfod_client_cache"), 0o700)
	if c = cfg(map[string]string{"HOME": home, "XDG_CACHE_HOME": "/xdg"}); c.CacheDir != filepath.Join(home, ".debuginfod_client_cache") {
		t.Errorf("legacy cache not used: %s", c.CacheDir)
	}
	if c = cfg(map[string]string{"HOME": home, "DEBUGINFOD_CACHE_PATH": "/explicit"}); c.CacheDir != "/explicit" {
		t.Errorf("DEBUGINFOD_CACHE_PATH not used: %s", c.CacheDir)
	}

	_, err := debuginfod.Environment{EtcDir: etc, Lookup: mapEnv(map[string]string{"DEBUGINFOD_TIMEOUT": "soon"})}.Config()
	if err == nil || !strings.Contains(err.Error(), "DEBUGINFOD_TIMEOUT") {
		t.Errorf("bad DEBUGINFOD_TIMEOUT: %v, want an error naming it", err)
	}
}

func TestConfigFromEnvWithGetenv(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	t.Setenv("DEBUGINFOD_CACHE_PATH", "/tmp/x")
	c, err := debuginfod.ConfigFromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.URLs) != 0 || c.URLsFrom != "DEBUGINFOD_URLS" {
		t.Errorf("os.Getenv with DEBUGINFOD_URLS set empty: %v from %q, want servers off", c.URLs, c.URLsFrom)
	}
	c, err = debuginfod.ConfigFromEnv(func(k string) string {
		return map[string]string{"DEBUGINFOD_URLS": "http://a.example"}[k]
	})
	if err != nil || len(c.URLs) != 1 {
		t.Errorf("custom getenv: %v, %v", c.URLs, err)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "http://env.example")
	parse := func(args ...string) (debuginfod.Config, error) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := debuginfod.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.Config(os.Getenv)
	}
	c, _ := parse()
	if len(c.URLs) != 1 || c.URLs[0] != "http://env.example" {
		t.Errorf("no flags: %v", c.URLs)
	}
	c, _ = parse("--debuginfod-urls", "http://a.example http://b.example")
	if len(c.URLs) != 2 || c.URLsFrom != "--debuginfod-urls" {
		t.Errorf("--debuginfod-urls: %v from %s", c.URLs, c.URLsFrom)
	}
	c, _ = parse("--no-debuginfod")
	if len(c.URLs) != 0 || c.URLsFrom != "--no-debuginfod" {
		t.Errorf("--no-debuginfod: %v from %s", c.URLs, c.URLsFrom)
	}
	cl, err := debuginfod.New(c)
	if err != nil || !strings.Contains(cl.Describe(), "no build IDs leave this machine") {
		t.Errorf("Describe with --no-debuginfod: %q, %v", cl.Describe(), err)
	}
	if cl != nil {
		cl.Close()
	}
	if _, err := parse("--no-debuginfod", "--debuginfod-urls", "http://a.example"); err == nil {
		t.Error("contradicting flags accepted")
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"ftp://x.example", "debuginfod.example", "file://host/srv", "http:///nohost"} {
		_, err := debuginfod.New(debuginfod.Config{URLs: []string{u}, URLsFrom: "DEBUGINFOD_URLS"})
		if err == nil || !strings.Contains(err.Error(), u) || !strings.Contains(err.Error(), "DEBUGINFOD_URLS") {
			t.Errorf("URL %q: %v, want an error naming it and where it came from", u, err)
		}
	}
	c, err := debuginfod.New(debuginfod.Config{URLs: []string{"ima:permissive", "http://a.example/", "http://a.example"}})
	if err != nil || len(c.Servers()) != 1 {
		t.Errorf("duplicate URLs: %v, %v", c.Servers(), err)
	}
}
