// Package otlpexporter tests viewer's OTLP endpoint with the
// OpenTelemetry Collector's own OTLP/HTTP exporter. It is a module of its
// own under testdata/ (which the main module's go commands skip) so the
// collector's large tree of modules stays out of viewer's go.mod; `make
// test` runs it.
package otlpexporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/exporter/xexporter"

	"viewer/symbolize"
	"viewer/web"
	"viewer/web/ingest/otlptest"
	"viewer/web/store"
)

// fullDisk is a directory store whose disk is full while full is set: a
// Put fails as the file system's write would, with ENOSPC (the same
// failure web's full-disk tests inject). Only Put and List are the
// directory's: its batch writes would go around Put.
type fullDisk struct {
	store.Store
	dir  *store.Dir
	full atomic.Bool
}

func (f *fullDisk) List(ctx context.Context, prefix string) ([]string, error) {
	return f.dir.List(ctx, prefix)
}

func (f *fullDisk) Put(ctx context.Context, key string, r io.Reader) error {
	if f.full.Load() {
		io.Copy(io.Discard, r)
		return fmt.Errorf("store: writing %s: %w", key, &fs{syscall.ENOSPC})
	}
	return f.Store.Put(ctx, key, r)
}

type fs struct{ err error }

func (e *fs) Error() string { return "write /data/.tmp-1: " + e.err.Error() }
func (e *fs) Unwrap() error { return e.err }

// answers counts the OTLP requests viewer answered, by status.
type answers struct {
	mu     sync.Mutex
	status []int
	onFail func(n int) // called after the nth 503
}

func (a *answers) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w, code: 200}
		h.ServeHTTP(rec, r)
		if r.URL.Path != web.OTLPPath {
			return
		}
		a.mu.Lock()
		a.status = append(a.status, rec.code)
		n := 0
		for _, c := range a.status {
			if c == http.StatusServiceUnavailable {
				n++
			}
		}
		a.mu.Unlock()
		if rec.code == http.StatusServiceUnavailable && a.onFail != nil {
			a.onFail(n)
		}
	})
}

func (a *answers) all() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.status)
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// TestCollectorExporterRetriesFullDisk is issue 37's OTLP point with the
// collector's own client: the otlphttp exporter (no sending queue, so
// ConsumeProfiles returns only once the profile is delivered or given
// up) sends a profile to viewer while its disk is full; viewer answers
// 503 with Retry-After, the exporter retries, the operator frees space
// after the second refusal, and the profile arrives: listed once on the
// services page, its samples the ones sent. A 200 with a partial success
// instead would end the export at once with the profile lost.
func TestCollectorExporterRetriesFullDisk(t *testing.T) {
	d, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	disk := &fullDisk{Store: d, dir: d}
	disk.full.Store(true)
	srv, err := web.New(web.Config{Store: disk, OTLP: true})
	if err != nil {
		t.Fatal(err)
	}
	const freeAfter = 2
	got := &answers{onFail: func(n int) {
		if n == freeAfter {
			disk.full.Store(false) // the operator frees space
		}
	}}
	ts := httptest.NewUnstartedServer(got.wrap(srv.Handler()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)

	f := otlphttpexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlphttpexporter.Config)
	cfg.ProfilesEndpoint = ts.URL + web.OTLPPath
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = 100 * time.Millisecond
	cfg.RetryConfig.MaxInterval = time.Second
	cfg.RetryConfig.MaxElapsedTime = 2 * time.Minute
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	exp, err := f.(xexporter.Factory).CreateProfiles(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exp.Shutdown(context.Background()) })

	sent := otlptest.EBPFLike(300, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := exp.ConsumeProfiles(ctx, otlptest.FromPprof(sent, map[string]string{"service.name": "checkout"})); err != nil {
		t.Fatalf("the exporter gave up: %v (viewer answered %v)", err, got.all())
	}
	status := got.all()
	expect := []int{503, 503, 200}
	if !slices.Equal(status, expect) {
		t.Errorf("viewer answered the exporter %v, want %v: refused while the disk was full, then stored", status, expect)
	}

	// Listed once, on the services page.
	page := httpGet(t, ts.URL+"/services")
	ids := regexp.MustCompile(`href="/p/([^"/?]+)"`).FindAllStringSubmatch(page, -1)
	if len(ids) != 1 {
		section, _, _ := strings.Cut(page[strings.Index(page, "<main>")+len("<main>"):], "</main>")
		t.Fatalf("the services page lists %d profiles (%v), want the one sent:\n%s", len(ids), ids, section)
	}
	stored, err := profile.ParseData([]byte(httpGet(t, ts.URL+"/p/"+ids[0][1]+"/profile.pb.gz")))
	if err != nil {
		t.Fatal(err)
	}
	// Caller addresses are return addresses, made call sites as viewer
	// reads them (as pprof does).
	want := sent.Copy()
	symbolize.CallSites(want)
	if g, w := samples(stored), samples(want); !slices.Equal(g, w) {
		t.Errorf("the stored profile has %d samples, not the %d sent (first: %q, sent %q)", len(g), len(w), first(g), first(w))
	}
}

// samples is each sample of p as its stack of addresses and its values,
// sorted: what the profile says, whatever the order and IDs.
func samples(p *profile.Profile) []string {
	var out []string
	for _, s := range p.Sample {
		var b strings.Builder
		for _, l := range s.Location {
			fmt.Fprintf(&b, "%x;", l.Address)
		}
		fmt.Fprint(&b, s.Value)
		out = append(out, b.String())
	}
	sort.Strings(out)
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", u, resp.StatusCode, errors.Join(err, errors.New(string(bytes.TrimSpace(b)))))
	}
	return string(b)
}
