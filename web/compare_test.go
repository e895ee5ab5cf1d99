package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"golang.org/x/net/html"

	"viewer/web"
	"viewer/web/profiles"
	"viewer/web/webtest"
)

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func fetchURL(t testing.TB, u string) (int, http.Header, string) {
	t.Helper()
	resp, err := noFollow.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// flameJSON is the part of flame.json/diff.json the tests read.
type flameJSON struct {
	Total     int64           `json:"total"`
	Names     []string        `json:"names"`
	Nodes     []int64         `json:"nodes"`
	Base      []int64         `json:"base"`
	BaseTotal int64           `json:"baseTotal"`
	Top       [][]any         `json:"top"`
	Callers   *flameJSON      `json:"callers"`
	Callees   *flameJSON      `json:"callees"`
	Cum       int64           `json:"cum"`
	Flat      int64           `json:"flat"`
	Extra     json.RawMessage `json:"-"`
}

// paths maps "a;b" paths (below the root) to "total" or "total base B".
func (f *flameJSON) paths() map[string]string {
	out := map[string]string{}
	var stack []string
	for i := 0; i*4 < len(f.Nodes); i++ {
		name, depth, total := f.Names[f.Nodes[i*4]], f.Nodes[i*4+1], f.Nodes[i*4+2]
		stack = append(stack[:depth], name)
		v := itoa(total)
		if f.Base != nil {
			v += " base " + itoa(f.Base[i])
		}
		out[strings.Join(stack, ";")] = v
	}
	return out
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

func getJSON(t testing.TB, u string) *flameJSON {
	t.Helper()
	status, _, body := fetchURL(t, u)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, status, body)
	}
	f := new(flameJSON)
	if err := json.Unmarshal([]byte(body), f); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return f
}

func samePaths(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q (all: %v)", what, k, got[k], v, got)
		}
	}
}

func TestFilterParameters(t *testing.T) {
	base := webtest.StartServerWith(t, web.Config{})
	id := webtest.PostProfile(t, base, "cpu.pb.gz", webtest.StacksPB(t, "", nil,
		"main;a;b", 10, "main;a;c", 20, "main;d", 30, "main;d;b", 5))

	f := getJSON(t, base+"/p/"+id+"/flame.json?f=%5Eb%24")
	samePaths(t, "f=^b$", f.paths(), map[string]string{"root": "15", "root;main": "15", "root;main;a": "10", "root;main;a;b": "10", "root;main;d": "5", "root;main;d;b": "5"})
	f = getJSON(t, base+"/p/"+id+"/flame.json?i=%5Ed%24&h=%5Ea%24")
	samePaths(t, "i=^d$ h=^a$", f.paths(), map[string]string{"root": "30", "root;main": "30", "root;main;b": "10", "root;main;c": "20"})
	f = getJSON(t, base+"/p/"+id+"/flame.json?s=main")
	samePaths(t, "s=main", f.paths(), map[string]string{"root": "65", "root;main": "65"})

	// The filtered and unfiltered trees have different ETags.
	_, h1, _ := fetchURL(t, base+"/p/"+id+"/flame.json")
	_, h2, _ := fetchURL(t, base+"/p/"+id+"/flame.json?f=b")
	if h1.Get("ETag") == h2.Get("ETag") {
		t.Errorf("filtered flame.json has the unfiltered ETag %s", h1.Get("ETag"))
	}
	// flame.svg and top apply them too.
	if _, _, svg := fetchURL(t, base+"/p/"+id+"/flame.svg?i=%5Ed%24"); strings.Contains(svg, ">d<") || !strings.Contains(svg, "main") {
		t.Errorf("flame.svg?i=^d$ still draws d")
	}
	if _, _, top := fetchURL(t, base+"/p/"+id+"/top?f=%5Ec%24"); strings.Contains(top, ">d<") || !strings.Contains(top, ">c<") {
		t.Errorf("top?f=^c$ lists d or misses c")
	} else if !strings.Contains(top, `id="filter-f" value="^c$"`) || !strings.Contains(top, `<input type="hidden" name="f" value="^c$">`) {
		t.Errorf("top?f=^c$ does not keep f in its filter form and sample type form")
	}
	// The flame page carries them to its data and links, and fills the form.
	_, _, page := fetchURL(t, base+"/p/"+id+"?f=b&h=a")
	for _, want := range []string{`flame.json?si=cpu\u0026f=b\u0026h=a`, `id="filter-f" value="b"`, `id="filter-h" value="a"`, `id="filter-clear"`} {
		if !strings.Contains(page, want) && !strings.Contains(page, strings.ReplaceAll(want, `\u0026`, "&amp;")) {
			t.Errorf("flame page with f=b&h=a lacks %s", want)
		}
	}
	// A bad regexp names the parameter.
	if status, _, body := fetchURL(t, base+"/p/"+id+"/flame.json?h=%28"); status != http.StatusBadRequest || !strings.Contains(body, "h=") {
		t.Errorf("h=( answered %d %s, want 400 naming h", status, body)
	}
}

func TestDiffJSON(t *testing.T) {
	base := webtest.StartServerWith(t, web.Config{})
	// Base: a 60, b 40, e 10 (110); new: a 30, b 150, c 20 (200).
	a := webtest.PostProfile(t, base, "before.pb.gz", webtest.StacksPB(t, "", nil, "main;a", 60, "main;b", 40, "main;e", 10))
	b := webtest.PostProfile(t, base, "after.pb.gz", webtest.StacksPB(t, "", nil, "main;a", 30, "main;b", 150, "main;c", 20))
	d := getJSON(t, base+"/p/"+a+"/diff/"+b+"/diff.json")
	samePaths(t, "diff", d.paths(), map[string]string{
		"root": "200 base 110", "root;main": "200 base 110", "root;main;a": "30 base 60",
		"root;main;b": "150 base 40", "root;main;c": "20 base 0", "root;main;e": "0 base 10",
	})
	if d.BaseTotal != 110 || d.Total != 200 {
		t.Errorf("totals %d base %d, want 200 base 110", d.Total, d.BaseTotal)
	}
	// a lost the most share (0.545 → 0.15), then b gained (0.364 → 0.75).
	if len(d.Top) < 2 || d.Top[0][0] != "a" || d.Top[1][0] != "b" {
		t.Errorf("diff top starts %v, want a then b", d.Top[:min(2, len(d.Top))])
	}
	// Filters apply to both.
	d = getJSON(t, base+"/p/"+a+"/diff/"+b+"/diff.json?i=%5Eb%24")
	if d.Total != 50 || d.BaseTotal != 70 {
		t.Errorf("diff with i=^b$: totals %d base %d, want 50 base 70", d.Total, d.BaseTotal)
	}

	// A base without the sample type: a 400 that lists what it has.
	mem, err := profile.ParseData(webtest.StacksPB(t, "", nil, "main;a", 1))
	if err != nil {
		t.Fatal(err)
	}
	mem.SampleType[0].Type, mem.SampleType[0].Unit = "alloc_space", "bytes"
	var buf bytes.Buffer
	mem.Write(&buf)
	m := webtest.PostProfile(t, base, "heap.pb.gz", buf.Bytes())
	if status, _, body := fetchURL(t, base+"/p/"+m+"/diff/"+b+"/diff.json"); status != http.StatusBadRequest || !strings.Contains(body, "alloc_space") || !strings.Contains(body, `\"cpu\"`) && !strings.Contains(body, "cpu") {
		t.Errorf("diff of heap against cpu: %d %s, want 400 naming both", status, body)
	}
	// The diff page of the same pair is headed by the cause, and lists
	// each side's sample types.
	if status, _, page := fetchURL(t, base+"/p/"+m+"/diff/"+b); status != http.StatusBadRequest ||
		!strings.Contains(page, "<h1>Sample types differ</h1>") || strings.Contains(page, "could not be read") ||
		!strings.Contains(page, "The base has: alloc_space") || !strings.Contains(page, "The new one has: cpu.") {
		t.Errorf("diff page of heap against cpu: %d, want the heading Sample types differ and both lists:\n%s", status, page)
	}

	// The page, and the picker's redirect from a pasted link.
	if status, _, page := fetchURL(t, base+"/p/"+a+"/diff/"+b); status != 200 || !strings.Contains(page, "diff-config") || !strings.Contains(page, "before.pb.gz") {
		t.Errorf("diff page: %d", status)
	}
	status, h, _ := fetchURL(t, base+"/p/"+b+"/compare?base="+url.QueryEscape(base+"/p/"+a+"/top?si=cpu")+"&f=x")
	if status != http.StatusSeeOther || h.Get("Location") != "/p/"+a+"/diff/"+b+"?f=x" {
		t.Errorf("compare redirect: %d to %q, want 303 to /p/%s/diff/%s?f=x", status, h.Get("Location"), a, b)
	}
	if status, _, body := fetchURL(t, base+"/p/"+b+"/compare?base=nonsense"); status != http.StatusBadRequest || !strings.Contains(body, "paste the link") {
		t.Errorf("compare with nonsense: %d %s", status, body)
	}
	if status, _, _ := fetchURL(t, base+"/p/"+b+"/compare?base=aaaaaaaaaaaaaaaaaaaa"); status != http.StatusNotFound {
		t.Errorf("compare with an unknown ID: %d, want 404", status)
	}
}

func TestSandwichJSON(t *testing.T) {
	base := webtest.StartServerWith(t, web.Config{})
	id := webtest.PostProfile(t, base, "cpu.pb.gz", webtest.StacksPB(t, "", nil,
		"main;a;f;g", 10, "main;b;f", 20, "main;f;f;h", 5, "main;c", 7))
	s := getJSON(t, base+"/p/"+id+"/sandwich.json?fn=f")
	if s.Flat != 20 || s.Cum != 35 {
		t.Errorf("f: flat %d cum %d, want 20 and 35", s.Flat, s.Cum)
	}
	samePaths(t, "callers", s.Callers.paths(), map[string]string{"f": "35", "f;a": "10", "f;a;main": "10", "f;b": "20", "f;b;main": "20", "f;f": "5", "f;f;main": "5"})
	samePaths(t, "callees", s.Callees.paths(), map[string]string{"f": "35", "f;g": "10", "f;f": "5", "f;f;h": "5"})
	s = getJSON(t, base+"/p/"+id+"/sandwich.json?fn=f&i=%5Eb%24")
	if s.Cum != 15 {
		t.Errorf("f with i=^b$: cum %d, want 15", s.Cum)
	}
	if status, _, page := fetchURL(t, base+"/p/"+id+"/sandwich?fn=f"); status != 200 || !strings.Contains(page, "sandwich-config") {
		t.Errorf("sandwich page: %d", status)
	}
	if status, _, _ := fetchURL(t, base+"/p/"+id+"/sandwich.json"); status != http.StatusBadRequest {
		t.Errorf("sandwich.json without fn: %d, want 400", status)
	}
}

// stripNames returns the profile without function names: raw addresses in
// /bin/app, as an eBPF profiler would send it.
func stripNames(t *testing.T, data []byte) []byte {
	t.Helper()
	p, err := profile.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Location {
		l.Line = nil
	}
	p.Function = nil
	for _, m := range p.Mapping {
		m.HasFunctions = false
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDiffAcrossSymbolization compares an unsymbolized base with a
// symbolized profile: the page says the base has no names and its frames
// meet nothing; once the base's symbolized copy is stored, the same diff
// link matches the functions by name.
func TestDiffAcrossSymbolization(t *testing.T) {
	dir := t.TempDir()
	named := webtest.StacksPB(t, "", nil, "main;a", 60, "main;b", 40)
	s, err := web.New(web.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	a := webtest.PostProfile(t, ts.URL, "raw.pb.gz", stripNames(t, named))
	b := webtest.PostProfile(t, ts.URL, "new.pb.gz", webtest.StacksPB(t, "", nil, "main;a", 30, "main;b", 150))

	d := getJSON(t, ts.URL+"/p/"+a+"/diff/"+b+"/diff.json")
	if got := d.paths()["root;main;a"]; got != "30 base 0" {
		t.Errorf("unsymbolized base: main;a = %q, want 30 base 0 (nothing to match by name)", got)
	}
	if _, _, page := fetchURL(t, ts.URL+"/p/"+a+"/diff/"+b); !strings.Contains(page, "1 of the base profile&#39;s 1 binaries have no names") {
		t.Errorf("diff page does not warn that the base has no names:\n%s", excerpt(page, "diff-note"))
	}

	// Symbolization stores the named copy next to the original.
	if err := s.Store().Put(t.Context(), profiles.Key(a, profiles.KeySymbolized), bytes.NewReader(named)); err != nil {
		t.Fatal(err)
	}
	s2, err := web.New(web.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewServer(s2.Handler())
	defer ts2.Close()
	d = getJSON(t, ts2.URL+"/p/"+a+"/diff/"+b+"/diff.json")
	samePaths(t, "after symbolization", d.paths(), map[string]string{
		"root": "180 base 100", "root;main": "180 base 100", "root;main;a": "30 base 60", "root;main;b": "150 base 40",
	})
	if _, _, page := fetchURL(t, ts2.URL+"/p/"+a+"/diff/"+b); strings.Contains(page, "diff-note") {
		t.Errorf("diff page still warns after symbolization")
	}
}

// formQuery is what submitting the form of page that is, or holds, the
// element with id sends: its named inputs' values and its selects'
// selected options (nil when there is no such form).
func formQuery(t *testing.T, page, id string) url.Values {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	attr := func(n *html.Node, k string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val, true
			}
		}
		return "", false
	}
	var find func(n, form *html.Node) *html.Node
	find = func(n, form *html.Node) *html.Node {
		if n.Type == html.ElementNode && n.Data == "form" {
			form = n
		}
		if v, _ := attr(n, "id"); v == id && form != nil {
			return form
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if f := find(c, form); f != nil {
				return f
			}
		}
		return nil
	}
	form := find(doc, nil)
	if form == nil {
		return nil
	}
	q := url.Values{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		name, named := attr(n, "name")
		_, disabled := attr(n, "disabled")
		switch {
		case n.Type != html.ElementNode || !named || disabled:
		case n.Data == "input":
			v, _ := attr(n, "value")
			q.Add(name, v)
		case n.Data == "select":
			for o := n.FirstChild; o != nil; o = o.NextSibling {
				if _, sel := attr(o, "selected"); sel && o.Type == html.ElementNode {
					v, _ := attr(o, "value")
					q.Add(name, v)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(form)
	return q
}

// TestTimeRangeKept: on a perf recording of two events (FlameGraph's
// cycles and instructions, with sample times), every form and link of the
// flame, top, sandwich and diff pages that shows the view again keeps its
// time range (t=) with its filters and sample type: the sample type
// selector, the Filters form and Clear filters (the diff is of the
// profile with itself).
func TestTimeRangeKept(t *testing.T) {
	data, err := os.ReadFile("../testdata/peers/flamegraph/perf-cycles-instructions-01.txt")
	if err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServerWith(t, web.Config{})
	id := webtest.PostProfile(t, base, "perf.txt", data)
	const tr = "0.2-0.4"
	page := func(path string) string {
		t.Helper()
		status, _, body := fetchURL(t, base+path)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		return body
	}
	check := func(path, id string, want url.Values) {
		t.Helper()
		got := formQuery(t, page(path), id)
		if got == nil {
			t.Errorf("%s has no form of #%s", path, id)
			return
		}
		for k := range want {
			if got.Get(k) != want.Get(k) {
				t.Errorf("%s: the form of #%s sends %s=%q, want %q (all: %v)", path, id, k, got.Get(k), want.Get(k), got)
			}
		}
	}
	kept := url.Values{"t": {tr}, "si": {"cycles_count"}, "f": {"main"}}
	for _, path := range []string{
		"/p/" + id + "?si=cycles_count&f=main&t=" + tr,
		"/p/" + id + "/top?si=cycles_count&f=main&t=" + tr,
		"/p/" + id + "/sandwich?fn=main&si=cycles_count&f=main&t=" + tr,
		"/p/" + id + "/diff/" + id + "?si=cycles_count&f=main&t=" + tr,
	} {
		check(path, "filters", kept)
		body := page(path)
		href := regexp.MustCompile(`id="filter-clear" href="([^"]*)"`).FindStringSubmatch(body)
		if href == nil {
			t.Errorf("%s has no Clear filters link", path)
			continue
		}
		u, err := url.Parse(html.UnescapeString(href[1]))
		if err != nil {
			t.Fatal(err)
		}
		if q := u.Query(); q.Get("t") != tr || q.Get("si") != "cycles_count" || q.Has("f") {
			t.Errorf("%s: Clear filters goes to %s, want the page with t=%s and si, without f", path, u, tr)
		}
	}
	// The header's links to the other views of the same samples.
	navRE := regexp.MustCompile(`<a href="([^"]*)"[^>]*data-keep="([^"]*)"`)
	for _, path := range []string{
		"/p/" + id + "?si=cycles_count&f=main&t=" + tr,
		"/p/" + id + "/top?si=cycles_count&f=main&t=" + tr,
		"/p/" + id + "/time?si=cycles_count&f=main&t=" + tr,
		"/p/" + id + "/sandwich?fn=main&si=cycles_count&f=main&t=" + tr,
		"/p/" + id + "/diff/" + id + "?si=cycles_count&f=main&t=" + tr,
	} {
		links := navRE.FindAllStringSubmatch(page(path), -1)
		if len(links) != 4 {
			t.Errorf("%s: %d header links to views, want 4", path, len(links))
		}
		for _, l := range links {
			u, err := url.Parse(html.UnescapeString(l[1]))
			if err != nil {
				t.Fatal(err)
			}
			q, want := u.Query(), kept
			if strings.HasSuffix(u.Path, "/types") {
				want = url.Values{"si": {"cycles_count"}} // reads no filters
			}
			for _, k := range []string{"si", "f", "t"} {
				if q.Get(k) != want.Get(k) {
					t.Errorf("%s: the header link %s has %s=%q, want %q", path, u, k, q.Get(k), want.Get(k))
				}
			}
		}
	}
	check("/p/"+id+"/top?si=cycles_count&f=main&t="+tr, "si-top", kept)
	check("/p/"+id+"/sandwich?fn=main&t="+tr, "filters", url.Values{"t": {tr}, "fn": {"main"}})
	// The flame page's "Compare with" form opens the diff of the same
	// filtered stacks and range; it sent only si.
	check("/p/"+id+"?si=cycles_count&f=main&t="+tr, "compare", kept)
}

// TestDiffSwapKeepsView: "Swap base and new" opens the other diff with
// the view of this one: search, zoom path, colors, sample type, filters
// and time range (static/docs/pages.md: they stay in the diff's URL).
func TestDiffSwapKeepsView(t *testing.T) {
	base := webtest.StartServerWith(t, web.Config{})
	a := webtest.PostProfile(t, base, "before.pb.gz", webtest.StacksPB(t, "", nil, "main;a", 60, "main;b", 40))
	b := webtest.PostProfile(t, base, "after.pb.gz", webtest.StacksPB(t, "", nil, "main;a", 30, "main;b", 150))
	view := url.Values{"si": {"cpu"}, "q": {"^a$"}, "z": {"main", "a"}, "color": {"heat"}, "i": {"^c$"}, "t": {"0-1"}}
	status, _, page := fetchURL(t, base+"/p/"+a+"/diff/"+b+"?"+view.Encode())
	if status != http.StatusOK {
		t.Fatalf("diff page: %d %s", status, page)
	}
	m := regexp.MustCompile(`id="swap-link" href="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the diff page has no Swap base and new link")
	}
	u, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	if want := "/p/" + b + "/diff/" + a; u.Path != want {
		t.Errorf("Swap goes to %s, want %s", u.Path, want)
	}
	if got := u.Query(); got.Encode() != view.Encode() {
		t.Errorf("Swap keeps %v, want %v", got, view)
	}
}
