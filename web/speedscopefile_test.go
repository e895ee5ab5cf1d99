package web

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/web/flame"
	"viewer/web/ingest"
	"viewer/web/ingest/jsonprof"
)

// speedscopeStacks sums sample type si of p per stack of flame graph frame
// names, root first; keep selects the samples.
func speedscopeStacks(p *profile.Profile, si int, keep func(*profile.Sample) bool) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		if !keep(s) || s.Value[si] <= 0 {
			continue
		}
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i]
			if len(l.Line) == 0 {
				names = append(names, flame.FrameName(l, -1))
			}
			for j := len(l.Line) - 1; j >= 0; j-- {
				names = append(names, flame.FrameName(l, j))
			}
		}
		out[strings.Join(names, ";")] += s.Value[si]
	}
	return out
}

// TestSpeedscopeJSON uploads real profiles, fetches /p/ID/speedscope.json
// as speedscope.app does (from its origin, which CORS lets read it), and
// reads it back with viewer's own speedscope reader: each sample type is
// a profile of the file with the uploaded stacks and weights. The flame
// page links speedscope.app to that absolute URL.
func TestSpeedscopeJSON(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	for _, name := range []string{
		"../testdata/peers/pprof/gobench.cpu",
		"../testdata/peers/speedscope-formats/sample/profiles/node/10.11.0/example.cpuprofile",
	} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := ingest.Parse(data, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			id := upload(t, ts.URL, data)
			f := get(t, ts.URL+"/p/"+id+"/speedscope.json", "Origin", SpeedscopeOrigin)
			if f.status != http.StatusOK || !strings.HasPrefix(f.header.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d, type %q: %.200s", f.status, f.header.Get("Content-Type"), f.body)
			}
			if got := f.header.Get("Access-Control-Allow-Origin"); got != SpeedscopeOrigin {
				t.Errorf("Access-Control-Allow-Origin %q; want speedscope.app's, so that it may read the file", got)
			}
			back, err := jsonprof.ParseSpeedscope(f.body, jsonprof.Options{})
			if err != nil {
				t.Fatalf("viewer's speedscope reader: %v", err)
			}
			for si, st := range p.SampleType {
				want := speedscopeStacks(p, si, func(*profile.Sample) bool { return true })
				if len(want) == 0 {
					continue
				}
				comm := "cpu.pb.gz: " + st.Type + " (" + st.Unit + ")"
				ofType := func(s *profile.Sample) bool { return len(s.Label["comm"]) == 1 && s.Label["comm"][0] == comm }
				matched := false
				for bi := range back.SampleType {
					got := speedscopeStacks(back, bi, ofType)
					if len(got) == 0 {
						continue
					}
					matched = true
					if len(got) != len(want) {
						t.Errorf("%s: %d stacks read back, want %d", comm, len(got), len(want))
					}
					for k, v := range want {
						if got[k] != v {
							t.Errorf("%s: stack %q weighs %d read back, want %d", comm, k, got[k], v)
							break
						}
					}
				}
				if !matched {
					t.Errorf("no profile %q in the file", comm)
				}
			}

			page := get(t, ts.URL+"/p/"+id)
			if !strings.Contains(string(page.body), `id="speedscope-link" href="/p/`+id+`/speedscope"`) {
				t.Errorf("the flame page has no Open in speedscope link to /p/%s/speedscope", id)
			}
			open := get(t, ts.URL+"/p/"+id+"/speedscope")
			link := SpeedscopeOrigin + "/#profileURL=" + url.QueryEscape(ts.URL+"/p/"+id+"/speedscope.json") + "&title="
			if open.status != http.StatusSeeOther || !strings.HasPrefix(open.header.Get("Location"), link) {
				t.Errorf("/p/ID/speedscope: status %d to %q; want a redirect to %s...", open.status, open.header.Get("Location"), link)
			}
		})
	}
	if f := get(t, ts.URL+"/p/"+strings.Repeat("a", 20)+"/speedscope.json"); f.status != http.StatusNotFound {
		t.Errorf("an unknown profile's speedscope.json: status %d, want 404", f.status)
	}
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	// Served by plain HTTP under another machine's name, the page has no
	// link, and the link's route says why: speedscope.app (HTTPS) could
	// not fetch the file.
	for _, path := range []string{"/p/" + id, "/p/" + id + "/speedscope"} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Host = "viewer.example:8080"
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "speedscope-link") || resp.StatusCode == http.StatusSeeOther ||
			path != "/p/"+id && !strings.Contains(string(body), "cannot fetch this server") {
			t.Errorf("%s served by http as viewer.example: status %d: %.200s; want no link to speedscope, and why", path, resp.StatusCode, body)
		}
	}
	if f := get(t, ts.URL+"/p/"+id+"/speedscope.json", "Origin", "https://elsewhere.example"); f.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin is let read the file: %q", f.header.Get("Access-Control-Allow-Origin"))
	}
}
