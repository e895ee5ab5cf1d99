package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/web/ingest"
	"viewer/web/ingest/jsonprof"
)

// TestFirefoxJSON uploads real profiles, fetches /p/ID/firefox.json as
// profiler.firefox.com does (from its origin, which CORS lets read it),
// and reads it back with viewer's own Firefox Profiler reader: each sample
// type's stacks and weights are the uploaded ones (the reader weighs a
// sample by the time to the next one, in ns: a time type's values come
// back as they were, others × 1e6). Unnamed frames are given to the
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
				scale := int64(1e6)
				if st.Unit == "nanoseconds" {
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
