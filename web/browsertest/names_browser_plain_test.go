package browsertest_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// alikeNames are functions whose names differ only in their middle, as a
// Go service's generic instantiations, a C++ template's and a Java
// service's classes do, each with the part a user must see to tell it
// from the others (its own name, and where it differs).
var alikeNames = []struct{ name, own string }{
	{"github.com/acme/svc/internal/api.sortOrdered[go.shape.int]", "api.sortOrdered"},
	{"github.com/acme/svc/internal/auth.sortOrdered[go.shape.int]", "auth.sortOrdered"},
	{"github.com/acme/svc/internal/cache.sortOrdered[go.shape.int]", "cache.sortOrdered"},
	{"github.com/acme/svc/internal/queue.sortOrdered[go.shape.int]", "queue.sortOrdered"},
	{"github.com/acme/svc/internal/store.sortOrdered[go.shape.int]", "store.sortOrdered"},
	{"slices.pdqsortOrdered[go.shape.int]", "pdqsortOrdered"},
	{"slices.insertionSortOrdered[go.shape.int]", "insertionSortOrdered"},
	{"sort.insertionSortOrdered[go.shape.int]", "sort.insertionSortOrdered"},
	{"std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)", "_M_realloc_insert"},
	{"std::vector<long, std::allocator<long> >::_M_realloc_insert<long const&>(__gnu_cxx::__normal_iterator<long*, std::vector<long, std::allocator<long> > >, long const&)", "_M_realloc_insert"},
	{"com.example.ingest.pipeline.BatchProcessor.flush", "BatchProcessor.flush"},
	{"com.example.export.pipeline.BatchProcessor.flush", "BatchProcessor.flush"},
}

// alikeNamesProfile is a CPU profile of main.main calling each of
// alikeNames, the acme packages' first: the legend's widest groups.
func alikeNamesProfile(t *testing.T) []byte {
	t.Helper()
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x900000, File: "/bin/svc", HasFunctions: true}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Mapping:    []*profile.Mapping{m},
	}
	loc := func(name string) *profile.Location {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: 0x401000 + uint64(len(p.Location))*0x100, Line: []profile.Line{{Function: f}}}
		p.Location = append(p.Location, l)
		return l
	}
	root := loc("main.main")
	for i, n := range alikeNames {
		v := int64(100-5*i) * 1e8 // the acme packages: 1 s to 800 ms each
		if !strings.HasPrefix(n.name, "github.com/acme/") {
			v = int64(50-2*i) * 1e6 // the others: 34 to 28 ms
		}
		p.Sample = append(p.Sample, &profile.Sample{Value: []int64{v}, Location: []*profile.Location{loc(n.name), root}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBrowserNamesIdentify: on the flame page at 1440×900 and on a
// 390×844 phone, functions whose names differ only in their middle show
// as distinct texts in the top table, each a shortening of its name (parts
// replaced by '…') whose whole name is its title; at 1440 px each shows
// its own name and where it differs (the [go.shape.int], the C++
// parameters and templates, the packages go first). The legend's five
// github.com/acme/svc packages read as five distinct, unclipped labels,
// the whole path in each title.
func TestBrowserNamesIdentify(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "alike.pb.gz", alikeNamesProfile(t))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("never drew: %v; %q", err, b.Problems())
	}
	type cell struct {
		Text    string `json:"text"`
		Title   string `json:"title"`
		Clipped bool   `json:"clipped"`
	}
	check := func(width int) {
		t.Helper()
		waitForJS(t, b, "the top table", fmt.Sprintf(`%s && document.querySelectorAll('#top-table tbody tr').length === %d`, topReady, len(alikeNames)+1))
		cells := eval[[]cell](t, b, `[...document.querySelectorAll('#top-table tbody td.fn')].map(td => ({
			text: td.textContent, title: td.title.split('\n')[0], clipped: td.scrollWidth > td.clientWidth + 1 }))`)
		seen := map[string]string{}
		for _, c := range cells {
			if c.Title == "main.main" {
				continue
			}
			if other, ok := seen[c.Text]; ok {
				t.Errorf("at %d px %q and %q both read %q", width, other, c.Title, c.Text)
			}
			seen[c.Text] = c.Title
			if c.Clipped {
				t.Errorf("at %d px %q is clipped (%q)", width, c.Title, c.Text)
			}
			if !isShortening(c.Text, c.Title) {
				t.Errorf("at %d px %q reads %q: want the name with parts of it replaced by …", width, c.Title, c.Text)
			}
			if width < 1440 {
				continue
			}
			for _, n := range alikeNames {
				if n.name == c.Title && !strings.Contains(c.Text, n.own) {
					t.Errorf("at %d px %q reads %q, without %q", width, c.Title, c.Text, n.own)
				}
			}
		}
		if len(seen) != len(alikeNames) {
			t.Errorf("at %d px the table names %d functions, want %d", width, len(seen), len(alikeNames))
		}
		waitForJS(t, b, "the legend", `document.querySelectorAll('#legend .legend-item').length > 0`)
		legend := eval[[]cell](t, b, `[...document.querySelectorAll('#legend .legend-item')].map(e => {
			const s = e.querySelector('span:last-child');
			return { text: s.textContent, title: e.title, clipped: s.scrollWidth > s.clientWidth + 1 };
		})`)
		acme := map[string]string{}
		for _, c := range legend {
			if !strings.HasPrefix(c.Title, "github.com/acme/svc/") {
				continue
			}
			if other, ok := acme[c.Text]; ok {
				t.Errorf("at %d px the legend's %q and %q both read %q", width, other, c.Title, c.Text)
			}
			acme[c.Text] = c.Title
			if c.Clipped {
				t.Errorf("at %d px the legend's %q is clipped (%q)", width, c.Title, c.Text)
			}
			if !isShortening(c.Text, c.Title) || !strings.HasSuffix(c.Text, c.Title[strings.LastIndex(c.Title, "/"):]) {
				t.Errorf("at %d px the legend's %q reads %q: want its last path elements", width, c.Title, c.Text)
			}
		}
		if len(acme) != 5 {
			t.Errorf("at %d px the legend shows %d of the 5 acme packages: %+v", width, len(acme), legend)
		}
		b.Screenshot(t, fmt.Sprintf("names-%d", width))
	}
	check(1440)
	run(t, b, "a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	waitForJS(t, b, "the phone layout", `window.innerWidth === 390`)
	eval[bool](t, b, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`) // the names refitted
	check(390)
	noProblems(t, b)
}

// isShortening says whether short is name with parts of it (none, or
// some) replaced by '…'.
func isShortening(short, name string) bool {
	parts := strings.Split(short, "…")
	at := 0
	for i, p := range parts {
		j := strings.Index(name[at:], p)
		if j < 0 || (i == 0 && j != 0) {
			return false
		}
		at += j + len(p)
	}
	if last := parts[len(parts)-1]; !strings.HasSuffix(name, last) {
		return false
	}
	return len(parts) > 1 || short == name
}
