package debuginfod_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"viewer/symbolize/debuginfod"
)

// Build IDs of the checked-in test binaries (testdata/debuginfod/buildids.txt).
const (
	helloID = "8e44c8b0040d3a4162b62bffc2fb28e2c2b8fecc"
	otherID = "1fb24b73998e656025af695f4b950cb2315278df"
	// absentID is served by no test server.
	absentID = "0123456789abcdef0123456789abcdef01234567"
)

const filesDir = "../../testdata/debuginfod/files"

func testFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newClient makes a client with its own cache and test-friendly timings.
func newClient(t testing.TB, cfg debuginfod.Config) *debuginfod.Client {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = filepath.Join(t.TempDir(), "cache")
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = 10 * time.Millisecond
	}
	if cfg.RetryLimit == 0 {
		cfg.RetryLimit = debuginfod.DefaultRetryLimit
	}
	cfg.Logf = t.Logf
	c, err := debuginfod.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recorder collects progress reports.
type recorder struct {
	mu sync.Mutex
	ps []debuginfod.Progress
}

func (r *recorder) add(p debuginfod.Progress) {
	r.mu.Lock()
	r.ps = append(r.ps, p)
	r.mu.Unlock()
}

func (r *recorder) phases() []debuginfod.Phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []debuginfod.Phase
	for _, p := range r.ps {
		if len(out) == 0 || out[len(out)-1] != p.Phase {
			out = append(out, p.Phase)
		}
	}
	return out
}

func (r *recorder) last() debuginfod.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ps) == 0 {
		return debuginfod.Progress{}
	}
	return r.ps[len(r.ps)-1]
}

func phaseList(ps []debuginfod.Phase) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, " → ")
}

// mustMatch checks the file at path has the given contents.
func mustMatch(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, not the %d expected", path, len(got), len(want))
	}
}

// listDir names what is in dir, or nothing if it does not exist.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
