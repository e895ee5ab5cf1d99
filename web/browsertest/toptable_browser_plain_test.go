package browsertest_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// Long names as a profiler shows them: demangled C++ templates and Go
// methods of deep module paths, with a short one beside them.
var longNames = []string{
	"std::_Hashtable<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, unsigned long>, std::allocator<std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, unsigned long> > >::_M_find_before_node(unsigned long, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, unsigned long) const",
	"github.com/example-org/observability-platform/internal/ingestion/pipeline.(*BatchingSpanProcessor).flushPendingBatchesWithRetry.func3",
	"absl::lts_20230802::container_internal::raw_hash_set<absl::lts_20230802::container_internal::FlatHashMapPolicy<int, std::string>, absl::lts_20230802::hash_internal::Hash<int>, std::equal_to<int>, std::allocator<std::pair<int const, std::string> > >::resize(unsigned long)",
	"runtime.mallocgc",
}

// ownNames is the part of each long name that says which function it is,
// which the table must show however it shortens the rest.
var ownNames = map[string]string{
	longNames[0]: "find_before_node(",
	longNames[1]: "WithRetry.func3",
	longNames[2]: "::resize(",
}

// longNamesProfile is a CPU profile of main.main calling each of
// longNames, with values whose cells are among the widest the table shows
// (2 min 5 s, 100.00%).
func longNamesProfile(t *testing.T) []byte {
	t.Helper()
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x900000, File: "/bin/app", HasFunctions: true}
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
	for i, name := range longNames {
		p.Sample = append(p.Sample, &profile.Sample{Value: []int64{int64(125-20*i) * 1e9}, Location: []*profile.Location{loc(name), root}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// topCell is what a user sees of one cell of the flame page's top table.
type topCell struct {
	Text  string `json:"text"`
	Title string `json:"title"`
	Lines int    `json:"lines"` // line boxes of its text
	// Clipped: its text is wider than the cell shows.
	Clipped bool    `json:"clipped"`
	Right   float64 `json:"right"` // the right edge of its text
}

const topCells = `[...document.querySelectorAll('#top-table tr')].map(tr => [...tr.cells].map(td => {
	const rects = [];
	const texts = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
	for (let n = texts.nextNode(); n; n = texts.nextNode()) {
		const r = document.createRange();
		r.selectNodeContents(n);
		rects.push(...[...r.getClientRects()].filter(x => x.width > 0));
	}
	return { text: td.textContent, title: td.title, lines: new Set(rects.map(x => Math.round(x.top))).size,
		clipped: td.scrollWidth > td.clientWidth + 1 || rects.some(x => x.right > td.getBoundingClientRect().right - parseFloat(getComputedStyle(td).paddingRight) + 1), right: Math.max(0, ...rects.map(x => x.right)) };
}))`

// TestBrowserTopTableNames opens a profile of long C++ and Go names at
// 1440×900 (the table beside the graph) and 1024×900 (below it): every
// row is one line; a name too long for its column is elided in the middle
// with its end (the method) shown and the whole name in its title, a
// short one is whole; the numbers are whole, unwrapped and right-aligned
// in their columns.
func TestBrowserTopTableNames(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "names.pb.gz", longNamesProfile(t))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("never drew: %v; %q", err, b.Problems())
	}
	check := func(width int) {
		t.Helper()
		waitForJS(t, b, "the top table", topReady+` && document.querySelectorAll('#top-table tbody tr').length === 5`)
		rows := eval[[][]topCell](t, b, topCells)
		head, body := rows[0], rows[1:]
		for i, c := range head {
			if c.Lines != 1 || c.Clipped {
				t.Errorf("at %d px the header %q takes %d lines (clipped %v)", width, c.Text, c.Lines, c.Clipped)
			}
			if i == 4 {
				continue
			}
			for _, r := range body {
				if d := r[i].Right - body[0][i].Right; d > 1 || d < -1 {
					t.Errorf("at %d px column %s: %q ends at x=%.0f, %q at %.0f: not aligned", width, head[i].Text, r[i].Text, r[i].Right, body[0][i].Text, body[0][i].Right)
				}
			}
		}
		elided := 0
		for _, r := range body {
			for _, c := range r[:4] {
				if c.Lines != 1 || c.Clipped || strings.Contains(c.Text, "…") {
					t.Errorf("at %d px the number %q takes %d lines (clipped %v)", width, c.Text, c.Lines, c.Clipped)
				}
			}
			fn := r[4]
			name, _, _ := strings.Cut(fn.Title, "\n")
			if fn.Lines != 1 || fn.Clipped {
				t.Errorf("at %d px the name %q takes %d lines (clipped %v)", width, fn.Text, fn.Lines, fn.Clipped)
			}
			if fn.Text == name {
				continue
			}
			elided++
			parts := strings.Split(fn.Text, "…")
			for i, p := range parts {
				parts[i] = regexp.QuoteMeta(p)
			}
			if !regexp.MustCompile("^"+strings.Join(parts, ".+")+"$").MatchString(name) || len(parts) < 2 {
				t.Errorf("at %d px %q shows as %q: want the name with parts of it replaced by …", width, name, fn.Text)
			}
			if own := ownNames[name]; !strings.Contains(fn.Text, own) {
				t.Errorf("at %d px %q shows as %q, without its own name %q", width, name, fn.Text, own)
			}
			if len(name) < 60 {
				t.Errorf("at %d px the %d-character name %q is elided to %q", width, len(name), name, fn.Text)
			}
		}
		if width == 1440 && elided == 0 {
			t.Errorf("at %d px no name is elided; the test's names should not fit", width)
		}
		b.Screenshot(t, fmt.Sprintf("top-names-%d", width))
	}
	check(1440)
	run(t, b, "a 1024 px window", chromedp.EmulateViewport(1024, 900))
	waitForJS(t, b, "the narrower layout", `window.innerWidth === 1024`)
	eval[bool](t, b, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`) // the names refitted
	check(1024)
	noProblems(t, b)
}

// TestBrowserTopAskedWithGraph: the flame page asks for its top table
// beside the graph's data, not once it has drawn the graph, so the
// server computes the table while the page draws (on a 2M-sample profile
// the table came up to seconds after the graph).
func TestBrowserTopAskedWithGraph(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "cpu.pb.gz", webtest.BrowserProfile(t))
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("never drew: %v; %q", err, b.Problems())
	}
	waitForJS(t, b, "the top table", topReady)
	got := eval[map[string]float64](t, b, `(() => {
		const top = performance.getEntriesByType('resource').filter(e => e.name.includes('/top.json'));
		const t = window.viewer.timings;
		return { asked: top.length ? top[0].startTime : -1, requests: top.length, inHand: t.startMs + t.fetchMs };
	})()`)
	if got["asked"] < 0 || got["asked"] >= got["inHand"] {
		t.Errorf("top.json asked for at %.1f ms, the graph's data in hand at %.1f ms: want it asked for before", got["asked"], got["inHand"])
	}
	if got["requests"] != 1 {
		t.Errorf("the page asked for top.json %v times, want once", got["requests"])
	}
	noProblems(t, b)
}
