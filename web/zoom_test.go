package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/web/webtest"
)

// topJSON is top.json as the page reads it.
type topJSON struct {
	Version    int      `json:"version"`
	Unit       string   `json:"unit"`
	Total      int64    `json:"total"`
	ZoomTotal  int64    `json:"zoomTotal"`
	Zoom       []string `json:"zoom"`
	Functions  int      `json:"functions"`
	Sort       string   `json:"sort"`
	Rows       [][3]any `json:"rows"`
	Matched    *int64   `json:"matched"`
	SampleType string   `json:"sampleType"`
}

func getTop(t *testing.T, base, id string, q url.Values) (int, topJSON, string) {
	t.Helper()
	resp, err := http.Get(base + "/p/" + id + "/top.json?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var top topJSON
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("top.json?%s: %v in %s", q.Encode(), err, body)
		}
	}
	return resp.StatusCode, top, string(body)
}

// rowsOf turns rows into "name flat cum" strings, in ms.
func rowsOf(top topJSON) []string {
	var out []string
	for _, r := range top.Rows {
		out = append(out, r[0].(string)+" "+webtest.Millis(r[1])+" "+webtest.Millis(r[2]))
	}
	return out
}

// TestTopJSON: top.json is the top table of the view the page shows, with
// pprof's filters, a zoom path, a sort, a row count and a search, and a
// 400 naming the parameter for what it cannot read.
func TestTopJSON(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "cpu.pb", webtest.BrowserProfile(t))
	cpu := func(kv ...string) url.Values {
		q := url.Values{"si": {"cpu"}}
		for i := 0; i < len(kv); i += 2 {
			q.Add(kv[i], kv[i+1])
		}
		return q
	}
	for _, tc := range []struct {
		name       string
		q          url.Values
		rows       []string
		total, zt  int64
		zoom       []string
		functions  int
		matched    int64 // -1: not asked
		wantStatus int
		wantError  string
	}{
		{name: "whole profile", q: cpu(),
			rows:  []string{"main.parse 40 65", "runtime.mallocgc 40 40", "main.render 20 45", "main.main 0 100", "main.work 0 50"},
			total: 100e6, zt: 100e6, zoom: []string{}, functions: 5, matched: -1},
		{name: "focus", q: cpu("f", "main.work"),
			rows:  []string{"main.parse 30 30", "main.render 20 20", "main.main 0 50", "main.work 0 50"},
			total: 50e6, zt: 50e6, zoom: []string{}, functions: 4, matched: -1},
		{name: "ignore", q: cpu("i", "mallocgc"),
			rows:  []string{"main.parse 40 40", "main.render 20 20", "main.main 0 60", "main.work 0 50"},
			total: 60e6, zt: 60e6, zoom: []string{}, functions: 4, matched: -1},
		{name: "hide: flat moves to the caller", q: cpu("h", "mallocgc"),
			rows:  []string{"main.parse 65 65", "main.render 20 45", "main.main 15 100", "main.work 0 50"},
			total: 100e6, zt: 100e6, zoom: []string{}, functions: 4, matched: -1},
		{name: "zoomed, by cum, two rows, with a search", q: cpu("z", "main.main", "z", "main.render", "sort", "cum", "n", "2", "q", "MALLOC"),
			rows:  []string{"runtime.mallocgc 25 25", "main.parse 0 25"}, // of the 3 with cum 25: by flat, then name
			total: 100e6, zt: 25e6, zoom: []string{"main.main", "main.render"}, functions: 3, matched: 40e6},
		{name: "filtered and zoomed", q: cpu("h", "main.work", "z", "main.main", "z", "main.parse"),
			rows:  []string{"main.parse 40 40"},
			total: 100e6, zt: 40e6, zoom: []string{"main.main", "main.parse"}, functions: 1, matched: -1},
		{name: "a zoom path that ends early", q: cpu("z", "main.main", "z", "gone", "z", "main.parse", "sort", "name"),
			rows:  []string{"main.main 0 100", "main.parse 40 65", "main.render 20 45", "main.work 0 50", "runtime.mallocgc 40 40"},
			total: 100e6, zt: 100e6, zoom: []string{"main.main"}, functions: 5, matched: -1},
		{name: "search nested matches once", q: cpu("q", "parse|render", "n", "1"),
			rows: []string{"main.parse 40 65"}, total: 100e6, zt: 100e6, zoom: []string{}, functions: 5, matched: 85e6},
		{name: "bad sort", q: cpu("sort", "size"), wantStatus: 400, wantError: "sort="},
		{name: "bad n", q: cpu("n", "0"), wantStatus: 400, wantError: "n="},
		{name: "bad filter", q: cpu("h", "("), wantStatus: 400, wantError: "h="},
		{name: "bad sample type", q: url.Values{"si": {"wall"}}, wantStatus: 400, wantError: "wall"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, top, body := getTop(t, base, id, tc.q)
			if tc.wantStatus != 0 {
				if status != tc.wantStatus || !strings.Contains(body, tc.wantError) {
					t.Errorf("HTTP %d %s, want %d naming %q", status, body, tc.wantStatus, tc.wantError)
				}
				return
			}
			if status != http.StatusOK {
				t.Fatalf("HTTP %d %s", status, body)
			}
			if got := rowsOf(top); !reflect.DeepEqual(got, tc.rows) {
				t.Errorf("rows %q, want %q", got, tc.rows)
			}
			if top.Total != tc.total || top.ZoomTotal != tc.zt || !reflect.DeepEqual(top.Zoom, tc.zoom) || top.Functions != tc.functions {
				t.Errorf("total %d zoomTotal %d zoom %q functions %d, want %d %d %q %d", top.Total, top.ZoomTotal, top.Zoom, top.Functions, tc.total, tc.zt, tc.zoom, tc.functions)
			}
			if tc.matched < 0 && top.Matched != nil || tc.matched >= 0 && (top.Matched == nil || *top.Matched != tc.matched) {
				t.Errorf("matched %v, want %d", top.Matched, tc.matched)
			}
			if top.Unit != "nanoseconds" || top.SampleType != "cpu" || top.Version != 1 {
				t.Errorf("sample type %q unit %q version %d", top.SampleType, top.Unit, top.Version)
			}
		})
	}
}

// smallUnderBig is a profile where main;small;x (40 of 1,100,000) is under
// the whole tree's threshold (55) and over small's (5).
func smallUnderBig(t *testing.T) []byte {
	t.Helper()
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	locs := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		id := uint64(len(locs) + 1)
		f := &profile.Function{ID: id, Name: name}
		l := &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
		p.Function, p.Location, locs[name] = append(p.Function, f), append(p.Location, l), l
		return l
	}
	for _, s := range []struct {
		stack string
		v     int64
	}{{"main;big", 1_000_000}, {"main;small", 99_960}, {"main;small;x", 30}, {"main;small;x;leaf", 10}} {
		names := strings.Split(s.stack, ";")
		smp := &profile.Sample{Value: []int64{s.v}}
		for i := len(names) - 1; i >= 0; i-- {
			smp.Location = append(smp.Location, loc(names[i]))
		}
		p.Sample = append(p.Sample, smp)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// zoomedJSON is flame.json as the page reads it.
type zoomedJSON struct {
	Total    int64    `json:"total"`
	MinTotal int64    `json:"minTotal"`
	Zoom     []string `json:"zoom"`
	Names    []string `json:"names"`
	Nodes    []int64  `json:"nodes"`
}

// paths maps the node paths of a flame.json ("main;small;x") to totals.
func (f zoomedJSON) paths() map[string]int64 {
	out := map[string]int64{}
	var stack []string
	for i := 0; i+3 < len(f.Nodes); i += 4 {
		stack = append(stack[:f.Nodes[i+1]], f.Names[f.Nodes[i]])
		out[strings.Join(stack[1:], ";")] = f.Nodes[i+2]
	}
	return out
}

// TestFlameJSONZoom: flame.json?z= compacts at the zoomed frame's total,
// so x, merged in the whole tree, is a frame; the "…" block of the whole
// tree opens with its element; answers are cached with their own ETag,
// gzipped once.
func TestFlameJSONZoom(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "cpu.pb", smallUnderBig(t))
	get := func(q string, gz bool) (zoomedJSON, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/p/"+id+"/flame.json"+q, nil)
		if !gz {
			// Else Go's client asks for gzip and decodes the body once.
			req.Header.Set("Accept-Encoding", "identity")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var f zoomedJSON
		if err := json.NewDecoder(resp.Body).Decode(&f); err != nil || resp.StatusCode != 200 {
			t.Fatalf("flame.json%s: HTTP %d, %v", q, resp.StatusCode, err)
		}
		return f, resp.Header
	}
	whole, wh := get("", false)
	if p := whole.paths(); p["main;small;x"] != 0 || p["main;small;…"] != 40 || whole.MinTotal != 55 {
		t.Fatalf("whole tree: want x merged into a … of 40 under small, minTotal 55: %v, minTotal %d", p, whole.MinTotal)
	}
	z, zh := get("?z=main&z=small", false)
	want := map[string]int64{"": 1_100_000, "main": 1_100_000, "main;small": 100_000, "main;small;x": 40, "main;small;x;leaf": 10}
	if got := z.paths(); !reflect.DeepEqual(got, want) || z.MinTotal != 5 || strings.Join(z.Zoom, ";") != "main;small" {
		t.Errorf("zoomed into small: %v minTotal %d zoom %q, want %v, 5, main;small", got, z.MinTotal, z.Zoom, want)
	}
	if wh.Get("ETag") == zh.Get("ETag") || zh.Get("ETag") == "" {
		t.Errorf("ETags: whole %s, zoomed %s; want two", wh.Get("ETag"), zh.Get("ETag"))
	}
	block, _ := get("?"+url.Values{"z": {"main", "small", "…<55"}}.Encode(), true)
	if got := block.paths(); got["main;small;…;x;leaf"] != 10 || got["main;small;…"] != 40 {
		t.Errorf("small's … block opened: %v", got)
	}
	again, _ := get("?z=main&z=small", true)
	if !reflect.DeepEqual(again, z) {
		t.Errorf("the cached, gzipped answer differs from the first")
	}
}
