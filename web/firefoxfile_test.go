package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/flame"
	"viewer/web/ingest"
	"viewer/web/ingest/jsonprof"
)

// TestFirefoxJSON uploads real profiles, fetches /p/ID/firefox.json as
// profiler.firefox.com does (from its origin, which CORS lets read it),
// and reads it back with viewer's own Firefox Profiler reader: each sample
// type's stacks and weights are the uploaded ones (the reader reads
// samples.weight: a time type's values come back in ns, others as they
// were). Unnamed frames are given to the
// symbol server by library, breakpad ID and offset. The flame page links
// the Firefox Profiler's from-url/ page to that absolute URL, with this
// server as symbolServer.
func TestFirefoxJSON(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	for _, name := range []string{
		"../testdata/peers/pprof/gobench.cpu",
		"../testdata/peers/speedscope-formats/sample/profiles/node/10.11.0/example.cpuprofile",
		"testProfile",
	} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			var data []byte
			if name == "testProfile" {
				data = encodeProfile(t, testProfile(), true)
			} else {
				var err error
				if data, err = os.ReadFile(name); err != nil {
					t.Fatal(err)
				}
			}
			p, _, err := ingest.Parse(data, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			id := upload(t, ts.URL, data)
			for si, st := range p.SampleType {
				want := speedscopeStacks(p, si, func(*profile.Sample) bool { return true })
				if len(want) == 0 {
					continue
				}
				f := get(t, ts.URL+"/p/"+id+"/firefox.json?si="+url.QueryEscape(st.Type), "Origin", FirefoxProfilerOrigin)
				if f.status != http.StatusOK || !strings.HasPrefix(f.header.Get("Content-Type"), "application/json") {
					t.Fatalf("status %d, type %q: %.200s", f.status, f.header.Get("Content-Type"), f.body)
				}
				if got := f.header.Get("Access-Control-Allow-Origin"); got != FirefoxProfilerOrigin {
					t.Errorf("Access-Control-Allow-Origin %q; want profiler.firefox.com's, so that it may read the file", got)
				}
				back, err := jsonprof.ParseFirefox(f.body, jsonprof.Options{})
				if err != nil {
					t.Fatalf("viewer's Firefox reader: %v", err)
				}
				scale := map[string]int64{"microseconds": 1e3, "milliseconds": 1e6, "seconds": 1e9}[st.Unit]
				if scale == 0 {
					scale = 1
				}
				got := speedscopeStacks(back, 0, func(*profile.Sample) bool { return true })
				if len(got) != len(want) {
					t.Errorf("%s: %d stacks read back, want %d", st.Type, len(got), len(want))
				}
				for k, v := range want {
					if d := got[k] - v*scale; d < -1 || d > 1 {
						t.Errorf("%s: stack %q weighs %d read back, want %d", st.Type, k, got[k], v*scale)
						break
					}
				}
				if name == "testProfile" {
					checkFirefoxLibs(t, f.body)
				}
			}

			page := get(t, ts.URL+"/p/"+id)
			if !strings.Contains(string(page.body), `id="firefox-link" href="/p/`+id+`/firefox"`) {
				t.Errorf("the flame page has no Open in Firefox Profiler link to /p/%s/firefox", id)
			}
			open := get(t, ts.URL+"/p/"+id+"/firefox?si=cpu")
			link := "https://profiler.firefox.com/from-url/" + url.PathEscape(ts.URL+"/p/"+id+"/firefox.json?si=cpu") + "/?symbolServer=" + url.QueryEscape(ts.URL)
			if open.status != http.StatusSeeOther || open.header.Get("Location") != link {
				t.Errorf("/p/ID/firefox: status %d to %q; want a redirect to %s", open.status, open.header.Get("Location"), link)
			}
			// The app decodes the path part as decodeURIComponent does.
			u, _ := url.Parse(open.header.Get("Location"))
			if parts := strings.Split(u.EscapedPath(), "/"); len(parts) < 3 || parts[1] != "from-url" {
				t.Errorf("from-url link %q", u)
			} else if file, _ := url.PathUnescape(parts[2]); file != ts.URL+"/p/"+id+"/firefox.json?si=cpu" {
				t.Errorf("from-url names %q", file)
			}
		})
	}
	if f := get(t, ts.URL+"/p/"+strings.Repeat("a", 20)+"/firefox.json"); f.status != http.StatusNotFound {
		t.Errorf("an unknown profile's firefox.json: status %d, want 404", f.status)
	}
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	if f := get(t, ts.URL+"/p/"+id+"/firefox.json", "Origin", "https://elsewhere.example"); f.status != http.StatusOK || f.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin is let read the file: %d %q", f.status, f.header.Get("Access-Control-Allow-Origin"))
	}
	if f := get(t, ts.URL+"/p/"+id+"/speedscope.json", "Origin", FirefoxProfilerOrigin); f.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("the Firefox Profiler is let read speedscope.json: %q; only firefox.json is its", f.header.Get("Access-Control-Allow-Origin"))
	}
	if f := get(t, ts.URL+"/p/"+id+"/firefox.json?si=bogus"); f.status != http.StatusBadRequest && f.status != http.StatusNotFound {
		t.Errorf("an unknown sample type: status %d", f.status)
	}
}

// checkFirefoxLibs checks the unnamed libc frame of testProfile is given
// to the symbol server: a library with libc's breakpad ID and build ID,
// and a frame at the address's offset in the file, in that library.
func checkFirefoxLibs(t *testing.T, body []byte) {
	t.Helper()
	var doc struct {
		Meta struct {
			Symbolicated bool `json:"symbolicated"`
			Version      int  `json:"preprocessedProfileVersion"`
		} `json:"meta"`
		Libs []struct {
			DebugName, BreakpadID, CodeID string
		} `json:"libs"`
		Threads []struct {
			FrameTable struct {
				Address []int64 `json:"address"`
				Func    []int   `json:"func"`
			} `json:"frameTable"`
			FuncTable struct {
				Resource []int `json:"resource"`
			} `json:"funcTable"`
			ResourceTable struct {
				Lib []int `json:"lib"`
			} `json:"resourceTable"`
		} `json:"threads"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Meta.Symbolicated || len(doc.Libs) != 1 || doc.Libs[0].DebugName != "libc.so.6" || doc.Libs[0].BreakpadID != BreakpadID("c0ffee") || doc.Libs[0].CodeID != "c0ffee" {
		t.Fatalf("libs %+v, symbolicated %v; want libc.so.6 by its breakpad ID, to be symbolicated", doc.Libs, doc.Meta.Symbolicated)
	}
	th := doc.Threads[0]
	found := false
	for f, a := range th.FrameTable.Address {
		if a == 0x2a2b {
			r := th.FuncTable.Resource[th.FrameTable.Func[f]]
			found = r >= 0 && th.ResourceTable.Lib[r] == 0
		}
	}
	if !found {
		t.Errorf("no frame at libc.so.6's offset 0x2a2b in library 0: %+v", th)
	}
}

// TestFirefoxJSONThreads uploads a perf recording of testdata/perf/threads
// (two named worker threads and a forked child, each sample with its
// time) and checks /p/ID/firefox.json as a user of the Firefox Profiler
// would: one thread per thread the flame page's timeline shows, in its
// process, with that row's total, the thread's own stacks and weights,
// and its samples at the recording's times, in order. Viewer's own
// Firefox reader reads the same threads, stacks and weights back.
func TestFirefoxJSONThreads(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	data, err := os.ReadFile("../testdata/perf/multi.data")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := ingest.Parse(data, ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	si := 0
	for i, st := range p.SampleType {
		if st.Type == p.DefaultSampleType {
			si = i
		}
	}
	st := p.SampleType[si]
	if st.Unit != "nanoseconds" {
		t.Fatalf("default sample type %s/%s; the test expects a time in ns", st.Type, st.Unit)
	}
	threadOf := func(s *profile.Sample) string {
		return fmt.Sprintf("%s %d/%d", s.Label["comm"][0], s.NumLabel["pid"][0], s.NumLabel["tid"][0])
	}
	// Each thread's sample times (ms), as the recording holds them.
	wantTimes := map[string][]float64{}
	for _, s := range p.Sample {
		if s.Value[si] > 0 {
			k := threadOf(s)
			wantTimes[k] = append(wantTimes[k], float64(s.NumLabel[sampling.TimeLabel][0])/1e6)
		}
	}
	if len(wantTimes) < 3 {
		t.Fatalf("the recording holds %d threads; want the main one, two workers and the child", len(wantTimes))
	}
	rows := map[string]int64{}
	for _, r := range flame.BuildTimeline(p, si).Rows {
		rows[r.Name] = r.Value
	}

	id := upload(t, ts.URL, data)
	f := get(t, ts.URL+"/p/"+id+"/firefox.json?si="+url.QueryEscape(st.Type))
	if f.status != http.StatusOK {
		t.Fatalf("status %d: %.300s", f.status, f.body)
	}
	var doc struct {
		Meta struct {
			StartTime float64 `json:"startTime"`
		} `json:"meta"`
		Threads []struct {
			Name, ProcessName string
			Pid               int64
			Tid               *string
			IsMainThread      bool
			Samples           struct {
				Stack      []*int
				Time       []float64
				Weight     []float64
				WeightType string
			}
			StackTable struct {
				Prefix []*int
				Frame  []int
			}
			FrameTable struct {
				Func []int
			}
			FuncTable struct {
				Name []int
			}
			StringArray []string
		} `json:"threads"`
	}
	if err := json.Unmarshal(f.body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Threads) != len(wantTimes) {
		t.Errorf("%d threads in firefox.json, want %d (one per thread the recording names)", len(doc.Threads), len(wantTimes))
	}
	if ms := float64(p.TimeNanos) / 1e6; doc.Meta.StartTime != ms {
		t.Errorf("meta.startTime %v, want the recording's start %v ms", doc.Meta.StartTime, ms)
	}
	seen := map[string]bool{}
	for _, th := range doc.Threads {
		if th.Tid == nil {
			t.Fatalf("thread %q: no tid", th.Name)
		}
		key := th.Name + " " + strconv.FormatInt(th.Pid, 10) + "/" + *th.Tid
		seen[key] = true
		want := speedscopeStacks(p, si, func(s *profile.Sample) bool { return threadOf(s) == key })
		if len(want) == 0 {
			t.Errorf("thread %q is not one of the recording's", key)
			continue
		}
		// The Firefox Profiler's upgrade to version 46 decides it by
		// String(pid) === tid: a number pid and a string tid.
		if main := strconv.FormatInt(th.Pid, 10) == *th.Tid; th.IsMainThread != main {
			t.Errorf("thread %q: isMainThread %v", key, th.IsMainThread)
		}
		if th.Samples.WeightType != "tracing-ms" {
			t.Errorf("thread %q: weightType %q", key, th.Samples.WeightType)
		}
		got := map[string]int64{}
		var total int64
		for i, sp := range th.Samples.Stack {
			var names []string
			for s := sp; s != nil; s = th.StackTable.Prefix[*s] {
				names = append(names, th.StringArray[th.FuncTable.Name[th.FrameTable.Func[th.StackTable.Frame[*s]]]])
			}
			slices.Reverse(names)
			ns := int64(math.Round(th.Samples.Weight[i] * 1e6))
			got[strings.Join(names, ";")] += ns
			total += ns
		}
		if !maps.Equal(got, want) {
			t.Errorf("thread %q: %d stacks %v; want the thread's own %d: %v", key, len(got), got, len(want), want)
		}
		if total != rows[key] {
			t.Errorf("thread %q weighs %d ns; the timeline's row says %d", key, total, rows[key])
		}
		wt := slices.Clone(wantTimes[key])
		slices.Sort(wt)
		if !slices.IsSorted(th.Samples.Time) || !slices.Equal(th.Samples.Time, wt) {
			t.Errorf("thread %q: times %v; want the recording's, in order: %v", key, th.Samples.Time, wt)
		}
	}
	for k := range wantTimes {
		if !seen[k] {
			t.Errorf("thread %q of the recording is not in firefox.json", k)
		}
	}

	// Viewer's own Firefox reader: the same threads, stacks and weights.
	back, err := jsonprof.ParseFirefox(f.body, jsonprof.Options{})
	if err != nil {
		t.Fatalf("viewer's Firefox reader: %v", err)
	}
	for k := range wantTimes {
		want := speedscopeStacks(p, si, func(s *profile.Sample) bool { return threadOf(s) == k })
		got := speedscopeStacks(back, 0, func(s *profile.Sample) bool { return threadOf(s) == k })
		if !maps.Equal(got, want) {
			t.Errorf("thread %q read back: %v; want %v", k, got, want)
		}
	}
	backRows := map[string]int64{}
	for _, r := range flame.BuildTimeline(back, 0).Rows {
		backRows[r.Name] = r.Value
	}
	if !maps.Equal(backRows, rows) {
		t.Errorf("timeline rows read back %v; want %v", backRows, rows)
	}
}
