package browsertest_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/symbolize"
	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/firefoxprofile"
	"viewer/web/webtest"
)

// TestFirefoxProfilerLive opens viewer's profiles in a real Firefox
// Profiler, as a user does: the flame page's "Open in Firefox Profiler"
// link, which redirects to https://profiler.firefox.com/from-url/…. It
// runs only with VIEWER_FIREFOX_PROFILER_DIST naming a built Firefox
// Profiler (its dist/ folder: `node scripts/build.mjs` in a checkout of
// firefox-devtools/profiler). That folder is served over TLS and chromium
// resolves profiler.firefox.com to it (certificate errors ignored), so the
// app runs at its real origin and reads /p/ID/firefox.json through
// viewer's own CORS header, and its symbol server is this viewer. Each
// profile must load without an error message or a page error, with a
// track for every thread the flame page's timeline has, each thread's call
// tree total equal to its timeline.json row, and each function's self time
// summed over the threads equal to viewer's /top.json. One case opens the
// file of a viewer that has not symbolized the profile with another, that
// has, as symbol server: the names come from /symbolicate/v5 and must be
// the ones viewer gives. Screenshots of the call trees are kept in
// $VIEWER_ARTIFACTS.
func TestFirefoxProfilerLive(t *testing.T) {
	dist := os.Getenv("VIEWER_FIREFOX_PROFILER_DIST")
	if dist == "" {
		t.Skip("set VIEWER_FIREFOX_PROFILER_DIST to a built Firefox Profiler's dist/ folder")
	}
	if _, err := os.Stat(filepath.Join(dist, "index.html")); err != nil {
		t.Fatal(err)
	}
	// The app is a single page: a path that is no file is index.html
	// (its _redirects file).
	files := http.FileServer(http.Dir(dist))
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(filepath.Join(dist, filepath.FromSlash(r.URL.Path))); err != nil || r.URL.Path == "/" {
			http.ServeFile(w, r, filepath.Join(dist, "index.html"))
			return
		}
		files.ServeHTTP(w, r)
	}))
	app.StartTLS()
	t.Cleanup(app.Close)
	appHost := strings.TrimPrefix(app.URL, "https://")

	// Two viewers, noting the symbol server requests the app makes: one
	// that does not symbolize uploads (its firefox.json names frames by
	// library and offset), and one that does, from the system's debug
	// files and a build-ID tree holding testdata/perf/threads.
	var mu sync.Mutex
	var symbolicate []string
	logged := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/symbolicate/") {
				mu.Lock()
				symbolicate = append(symbolicate, r.Method+" "+r.Host+r.URL.Path+" from "+r.Header.Get("Origin"))
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	}
	plainServer, err := web.New(web.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ps := webtest.LoopbackServer(t, logged(plainServer.Handler()))
	ps.Start()
	t.Cleanup(ps.Close)
	plain := ps.URL
	debugDir := t.TempDir()
	threadsBin, err := filepath.Abs("../../testdata/perf/threads")
	if err != nil {
		t.Fatal(err)
	}
	const threadsID = "66dad36b1aab77c580bc4819a77004464dfdb69d"
	if err := os.MkdirAll(filepath.Join(debugDir, ".build-id", threadsID[:2]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(threadsBin, filepath.Join(debugDir, ".build-id", threadsID[:2], threadsID[2:]+".debug")); err != nil {
		t.Fatal(err)
	}
	symServer, _ := webtest.SymbolizingServer(t, nil, 1, func(c *symbolize.Config) {
		c.DebugDirs = []string{debugDir}
		c.SystemDebugDir = ""
	})
	ss := webtest.LoopbackServer(t, logged(symServer.Handler()))
	ss.Start()
	t.Cleanup(ss.Close)
	symbolizing := ss.URL

	b := browsertest.Start(t, browsertest.Options{Flags: []chromedp.ExecAllocatorOption{
		chromedp.Flag("host-resolver-rules", "MAP profiler.firefox.com:443 "+appHost),
		chromedp.Flag("ignore-certificate-errors", true),
	}})

	// The control: a file the app cannot fetch shows its error message
	// where the cases below look for one.
	t.Run("missing file", func(t *testing.T) {
		run(t, b, "open a missing file", chromedp.Navigate(web.FirefoxProfilerURL(plain, "nosuchprofile", "")))
		if !waitUntil(b, 60*time.Second, `!!document.querySelector(`+jsString(firefoxProfilerErrors)+`)`) {
			t.Fatalf("no error message for a file that is not there; page says: %.500s", eval[string](t, b, `document.body.innerText`))
		}
		t.Logf("the Firefox Profiler says: %.300s", eval[string](t, b, `document.querySelector(`+jsString(firefoxProfilerErrors)+`).innerText`))
		b.Problems() // its failed fetch is expected
	})

	for _, in := range []struct {
		name, file string
		si         string // the sample type shown (?si=), "" for the default
		base       string // the viewer it is uploaded to, and opened from
		// symbolServer, when set, is the viewer the app asks for names
		// instead: the file is the plain viewer's (frames unnamed), the
		// names the symbolizing one's, as when the app opens a profile
		// before viewer has symbolized it.
		symbolServer string
	}{
		{"go-cpu", "../../testdata/pprof/go.crc32.cpu", "", plain, ""},
		{"go-heap-bytes", "../../testdata/peers/pprof/gobench.heap", "", plain, ""},
		{"go-heap-objects", "../../testdata/peers/pprof/gobench.heap", "alloc_objects", plain, ""},
		{"java-cpu", "../../testdata/peers/pprof/java.cpu", "", plain, ""},
		{"cpp-contention", "../../testdata/peers/pprof/cppbench.contention", "", plain, ""},
		{"cpuprofile", "../../testdata/peers/speedscope-formats/sample/profiles/node/10.11.0/example.cpuprofile", "", plain, ""},
		{"perf-symbolized", "../../testdata/perf/multi.data", "", symbolizing, ""},
		{"perf-symbol-server", "../../testdata/perf/multi.data", "", plain, symbolizing},
	} {
		t.Run(in.name, func(t *testing.T) {
			data, err := os.ReadFile(in.file)
			if err != nil {
				t.Fatal(err)
			}
			base := in.base
			id := webtest.PostProfile(t, base, filepath.Base(in.file), data)
			truth := base
			if in.symbolServer != "" {
				truth = in.symbolServer
				if webtest.PostProfile(t, truth, filepath.Base(in.file), data) != id {
					t.Fatal("the two viewers gave the file different IDs")
				}
			}
			if truth == symbolizing {
				waitSymbolized(t, truth, id)
			}
			var top struct {
				Total int64
				Unit  string
				Rows  [][3]json.RawMessage
			}
			q := ""
			if in.si != "" {
				q = "?si=" + url.QueryEscape(in.si)
			}
			decodeJSON(t, truth+"/p/"+id+"/top.json"+q, &top)
			var timeline struct {
				Rows []struct {
					Name  string
					Value int64
				}
			}
			decodeJSON(t, truth+"/p/"+id+"/timeline.json"+q, &timeline)
			scale := map[string]float64{"nanoseconds": 1e-6, "microseconds": 1e-3, "seconds": 1e3}[top.Unit]
			if scale == 0 {
				scale = 1
			}

			// What a user clicks: the flame page's Export menu entry.
			run(t, b, "open flame page", chromedp.Navigate(base+"/p/"+id+q))
			href := eval[string](t, b, `(() => { const a = [...document.querySelectorAll('a')].find(a => a.textContent.includes('Open in Firefox Profiler')); return a ? a.href : '' })()`)
			if href == "" {
				t.Fatal("no Open in Firefox Profiler link on the flame page")
			}
			if in.symbolServer != "" {
				u, err := url.Parse(href)
				if err != nil {
					t.Fatal(err)
				}
				// Where /p/ID/firefox redirects, with the other symbol server.
				href = web.FirefoxProfilerURL(u.Scheme+"://"+u.Host, id, in.si)
				href = href[:strings.Index(href, "?symbolServer=")] + "?symbolServer=" + url.QueryEscape(in.symbolServer)
			}
			run(t, b, "follow the link", chromedp.Navigate(href))
			if u := currentURL(t, b); u.Host != "profiler.firefox.com" || !strings.HasPrefix(u.Path, "/from-url/") && !strings.Contains(u.Path, "/calltree/") {
				t.Fatalf("the link led to %s", u)
			}
			if !waitUntil(b, 60*time.Second, `!!(window.profile && document.querySelector('.treeViewBody .treeViewRow'))`) {
				b.Screenshot(t, in.name+"-failed")
				t.Fatalf("the Firefox Profiler showed no call tree; page says: %.1500s", eval[string](t, b, `document.body.innerText`))
			}
			// Let symbolication (the app's requests to viewer's
			// /symbolicate/v5) end.
			if !waitUntil(b, 60*time.Second, `window.selectors.profile.getSymbolicationStatus(window.getState()) === 'DONE'`) {
				t.Errorf("the Firefox Profiler is still symbolicating")
			}
			if msg := eval[string](t, b, `(() => { const e = document.querySelector(`+jsString(firefoxProfilerErrors)+`); return e ? e.innerText : '' })()`); msg != "" {
				t.Errorf("the Firefox Profiler shows an error: %s", msg)
			}

			type thread struct {
				Name  string
				Tid   json.Number
				Shown bool
				Total float64
				Self  map[string]float64
				Roots []string
			}
			var got struct {
				Threads []thread
				URL     string
				Tracks  json.RawMessage
			}
			raw := eval[string](t, b, `(() => {
				const S = window.selectors, st = () => window.getState();
				const p = window.profile;
				// The threads the timeline shows a track of: a process's
				// main thread, or a thread track of a process.
				const shown = new Set();
				const hg = S.urlState.getHiddenGlobalTracks(st()), gt = S.profile.getGlobalTracks(st());
				gt.forEach((tr, i) => { if (!hg.has(i) && tr.mainThreadIndex != null) shown.add(tr.mainThreadIndex); });
				for (const [pid, tracks] of S.profile.getLocalTracksByPid(st())) {
					const hl = S.urlState.getHiddenLocalTracksByPid(st()).get(pid) || new Set();
					tracks.forEach((tr, i) => { if (!hl.has(i) && tr.type === 'thread') shown.add(tr.threadIndex); });
				}
				const out = [];
				for (let i = 0; i < p.threads.length; i++) {
					window.dispatch(window.actions.changeSelectedThreads(new Set([i])));
					const ct = window.callTree;
					const self = {};
					const roots = [];
					let total = 0;
					const walk = (n, depth) => {
						const d = ct.getNodeData(n);
						if (depth === 0) { total += d.total; roots.push(d.funcName); }
						if (d.self) self[d.funcName] = (self[d.funcName] || 0) + d.self;
						for (const c of ct.getChildren(n)) walk(c, depth + 1);
					};
					for (const r of ct.getRoots()) walk(r, 0);
					const th = p.threads[i];
					out.push({Name: th.name, Tid: String(th.tid), Shown: shown.has(i), Total: total, Self: self, Roots: roots});
				}
				window.dispatch(window.actions.changeSelectedThreads(new Set([0])));
				const tracks = gt.map((tr, i) => ({name: S.profile.getGlobalTrackNames(st())[i], type: tr.type, pid: tr.pid, main: tr.mainThreadIndex,
					local: ((tr.pid != null && S.profile.getLocalTracksByPid(st()).get(tr.pid)) || []).map((l, j) => ({name: S.profile.getLocalTrackNamesByPid(st()).get(tr.pid)[j], thread: l.threadIndex}))}));
				return JSON.stringify({Threads: out, URL: location.href, Tracks: tracks});
			})()`)
			d := json.NewDecoder(strings.NewReader(raw))
			d.UseNumber()
			if err := d.Decode(&got); err != nil {
				t.Fatalf("%v: %.300s", err, raw)
			}
			t.Logf("Firefox Profiler at %s; tracks %s", got.URL, got.Tracks)

			near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }
			// Every thread of the flame page's timeline (one thread for a
			// profile without thread labels), with its total.
			want := map[string]float64{}
			for _, r := range timeline.Rows {
				want[r.Name] = float64(r.Value) * scale
			}
			if len(timeline.Rows) == 1 && !strings.Contains(timeline.Rows[0].Name, "/") {
				// No thread labels: the timeline's one row ("all
				// samples") is the file's one thread.
				want = map[string]float64{"": float64(top.Total) * scale}
			}
			if len(timeline.Rows) == 0 {
				want[""] = float64(top.Total) * scale
			}
			if len(got.Threads) != len(want) {
				t.Errorf("%d threads in the Firefox Profiler, viewer's timeline has %d", len(got.Threads), len(want))
			}
			sum := 0.0
			selfs := map[string]float64{}
			for _, th := range got.Threads {
				t.Logf("thread %q tid %s: total %g, roots %q, track shown %v", th.Name, th.Tid, th.Total, th.Roots, th.Shown)
				if !th.Shown {
					t.Errorf("thread %q tid %s has no track in the timeline", th.Name, th.Tid)
				}
				sum += th.Total
				for f, v := range th.Self {
					selfs[f] += v
				}
				key := th.Name + " "
				for name, w := range want {
					if name == "" || strings.HasPrefix(name, key) && strings.HasSuffix(name, "/"+th.Tid.String()) {
						if !near(th.Total, w) {
							t.Errorf("thread %q: call tree total %g, viewer's timeline %g", name, th.Total, w)
						}
						delete(want, name)
					}
				}
			}
			for name := range want {
				t.Errorf("viewer's thread %q is not in the Firefox Profiler", name)
			}
			if !near(sum, float64(top.Total)*scale) {
				t.Errorf("call tree totals add up to %g, viewer's total is %g", sum, float64(top.Total)*scale)
			}
			// Each function's self time, summed over the threads.
			// Samples without frames have no row in viewer's table: their
			// share is the total less the rows' self values, and is
			// firefoxprofile.NoStack's self in the Firefox Profiler.
			var lines []string
			frameless := top.Total
			for _, r := range top.Rows {
				var name string
				var self int64
				json.Unmarshal(r[0], &name)
				json.Unmarshal(r[1], &self)
				frameless -= self
				if self == 0 {
					continue
				}
				w := float64(self) * scale
				lines = append(lines, fmt.Sprintf("%s: viewer %g, Firefox Profiler %g", name, w, selfs[name]))
				if !near(selfs[name], w) {
					t.Errorf("%s: self %g in the Firefox Profiler, %g in viewer's top table", name, selfs[name], w)
				}
				delete(selfs, name)
			}
			if w := float64(frameless) * scale; w != 0 || selfs[firefoxprofile.NoStack] != 0 {
				lines = append(lines, fmt.Sprintf("%s: viewer %g, Firefox Profiler %g", firefoxprofile.NoStack, w, selfs[firefoxprofile.NoStack]))
				if !near(selfs[firefoxprofile.NoStack], w) {
					t.Errorf("samples without frames: %g in the Firefox Profiler, %g in viewer", selfs[firefoxprofile.NoStack], w)
				}
				delete(selfs, firefoxprofile.NoStack)
			}
			for f, v := range selfs {
				t.Errorf("%s: self %g in the Firefox Profiler, not in viewer's top table", f, v)
			}
			sort.Strings(lines)
			t.Logf("self times:\n%s", strings.Join(lines, "\n"))
			mu.Lock()
			t.Logf("symbol server requests: %q", symbolicate)
			if in.symbolServer != "" && len(symbolicate) == 0 {
				t.Errorf("the Firefox Profiler asked no symbol server")
			}
			symbolicate = nil
			mu.Unlock()
			noProblems(t, b)
			b.Screenshot(t, in.name+"-calltree")
		})
	}
}

// firefoxProfilerErrors are where the Firefox Profiler shows that it
// failed: its crash page, its loading page's message (a file it could not
// fetch or read), its warning bar and its source view's errors.
const firefoxProfilerErrors = ".appErrorBoundary, .rootMessage, .warningMessageBarWrapper, .codeErrorOverlay"

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func decodeJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// waitUntil polls a JS expression until it is true or timeout passes.
func waitUntil(b *browsertest.Browser, timeout time.Duration, expr string) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ok, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return true
		}
	}
	return false
}

// waitSymbolized waits until viewer at base has symbolized profile id.
func waitSymbolized(t *testing.T, base, id string) {
	t.Helper()
	// Opening the page queues the job, if the upload did not.
	if resp, err := http.Get(base + "/p/" + id); err == nil {
		resp.Body.Close()
	}
	var st struct{ State string }
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		decodeJSON(t, base+"/p/"+id+"/symbolization", &st)
		if st.State == "done" {
			return
		}
	}
	t.Fatalf("symbolization of %s: %q after a minute", id, st.State)
}
