package browsertest_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/web/browsertest"
)

// TestTypesPageInBrowser opens the data-type page of a recorded perf.data in
// headless chromium: expanding struct node shows its layout with the
// accessed member's share, the table sorts, and a function links to the
// flame graph searched for it.
func TestTypesPageInBrowser(t *testing.T) {
	dir := "../../testdata/datatype"
	base, pid := serveRecording(t, dir, "datatype-dw5-pie.perf.data", "datatype.perf.data")

	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the types page", chromedp.Navigate(base+"/p/"+pid+"/types"))
	waitForJS(t, b, "the types table", `document.querySelector('#types > tbody > tr')`)
	if got := text(t, b, "#types > tbody > tr:first-child summary"); got != "struct node" {
		t.Fatalf("first type = %q, want struct node", got)
	}
	run(t, b, "expand struct node", chromedp.Click(chromedp.CSS("#types > tbody > tr:first-child summary")))
	waitForJS(t, b, "the member layout", `document.querySelector('#types > tbody > tr:first-child details[open] .layout-table')`)
	members := eval[[]string](t, b, `Array.from(document.querySelectorAll('#types > tbody > tr:first-child .layout-table tbody tr')).map(r => r.cells[2].textContent.trim() + '=' + r.cells[4].textContent.trim())`)
	byName := map[string]string{}
	for _, m := range members {
		for i := range m {
			if m[i] == '=' {
				byName[m[:i]] = m[i+1:]
				break
			}
		}
	}
	for _, f := range []string{"next", "key", "val"} {
		if _, ok := byName[f]; !ok {
			t.Errorf("struct node layout lacks %s: %q", f, members)
		}
	}
	if byName["next"] == "" || byName["struct node"] == "" {
		t.Errorf("layout shares: %q; want shares on the type and on next (the loops' loads)", members)
	}
	if eval[bool](t, b, `document.querySelector('#types > tbody > tr:first-child details').hasAttribute('open')`) != true {
		t.Errorf("details did not open")
	}

	b.Screenshot(t, "types-expanded")
	run(t, b, "sort by type name", chromedp.Click(chromedp.CSS(`#types [data-sort="name"]`)))
	var names []string
	names = eval[[]string](t, b, `Array.from(document.querySelectorAll('#types > tbody > tr')).map(r => r.dataset.name)`)
	for i := 1; i < len(names); i++ {
		if names[i-1] > names[i] && !(names[i-1][0] == '(' || names[i][0] == '(') {
			t.Errorf("not sorted by name: %q", names)
			break
		}
	}
	run(t, b, "sort by share", chromedp.Click(chromedp.CSS(`#types [data-sort="share"]`)))
	first := eval[string](t, b, `document.querySelector('#types > tbody > tr').dataset.name`)
	if first != "struct node" {
		t.Errorf("after sorting by share the first type is %q, want struct node", first)
	}

	run(t, b, "follow sum_list to the flame graph", chromedp.Click(chromedp.CSS(`#type-funcs a[href*="q=sum_list"]`)))
	waitForJS(t, b, "the flame page", `location.pathname === '/p/`+pid+`' && new URLSearchParams(location.search).get('q') === 'sum_list'`)

	run(t, b, "open the data-type flame graph", chromedp.Navigate(base+"/p/"+pid+"/types"),
		chromedp.Click(chromedp.CSS("#types-flame-link")))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("types flame graph: %v (%q)", err, b.Problems())
	}
	names = eval[[]string](t, b, `window.viewer.tree.names`)
	found := false
	for _, n := range names {
		found = found || n == "struct node.next"
	}
	if !found {
		t.Errorf("types flame graph names %q lack struct node.next", names)
	}
	// Its top table is the server's (types/top.json, every sample), not
	// one computed from the compacted tree drawn.
	waitForJS(t, b, "the top table", `document.getElementById('top-table').dataset.state === 'ready'`)
	if !eval[bool](t, b, `performance.getEntriesByType('resource').some((e) => new URL(e.name).pathname === '/p/`+pid+`/types/top.json')`) {
		t.Errorf("the data-type flame graph's table was not read from types/top.json")
	}
	if rows := eval[[]string](t, b, `[...document.querySelectorAll('#top-table tbody tr')].map((r) => r.textContent)`); !strings.Contains(strings.Join(rows, "\n"), "struct node") {
		t.Errorf("the data-type flame graph's table lacks struct node: %q", rows)
	}
	// The frame menu's links of a data type: the data-type page and the
	// filters, where sandwich, source and annotate of the type's name went
	// to /p/ID/types/flame/sandwich, a 404; focus filters this graph.
	path := eval[[]string](t, b, `window.viewer.drawnFrames().find((p) => p[p.length - 1] === 'struct node')`)
	if len(path) == 0 || !eval[bool](t, b, fmt.Sprintf(`window.viewerFrameMenu.open(%s)`, jsStrings(path))) {
		t.Fatalf("no frame menu for struct node (%q); drawn: %q", path, eval[[][]string](t, b, `window.viewer.drawnFrames()`))
	}
	links := eval[[]string](t, b, `[...document.querySelectorAll('#frame-menu a')].map((a) => a.href)`)
	if len(links) != 4 || !strings.HasSuffix(links[0], "/p/"+pid+"/types") {
		t.Errorf("the frame menu of struct node has %q, want the data-type page, focus, ignore and hide", links)
	}
	for _, l := range links {
		if code := eval[int](t, b, fmt.Sprintf(`fetch(%q).then((r) => r.status)`, l)); code != 200 {
			t.Errorf("the frame menu's %s answers %d", l, code)
		}
	}
	// A function's frame there links to the profile's pages about it.
	run(t, b, "close the menu", chromedp.KeyEvent("\x1b"))
	fn := path[:len(path)-1]
	if !eval[bool](t, b, fmt.Sprintf(`window.viewerFrameMenu.open(%s)`, jsStrings(fn))) {
		t.Fatalf("no frame menu for %q", fn)
	}
	fnLinks := eval[[]string](t, b, `[...document.querySelectorAll('#frame-menu a')].map((a) => new URL(a.href).pathname)`)
	if want := []string{"/p/" + pid + "/sandwich", "/p/" + pid + "/source", "/p/" + pid + "/annotate", "/p/" + pid + "/types/flame"}; len(fnLinks) != 6 || fnLinks[0] != want[0] || fnLinks[1] != want[1] || fnLinks[2] != want[2] || fnLinks[3] != want[3] {
		t.Errorf("the frame menu of %q goes to %q, want the profile's sandwich, source and annotate, then this graph's filters", fn, fnLinks)
	}
	focus := links[len(links)-3]
	run(t, b, "focus on struct node", chromedp.Navigate(focus))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("focused types flame graph: %v (%q)", err, b.Problems())
	}
	if u := currentURL(t, b); u.Path != "/p/"+pid+"/types/flame" || u.Query().Get("f") != "^struct node$" {
		t.Errorf("Focus went to %s, want the data-type flame graph with f=^struct node$", u)
	}
	// The focused graph's whole is struct node's cum in the unfocused table.
	focused := eval[float64](t, b, `window.viewer.tree.total[0]`)
	want := eval[float64](t, b, `fetch('/p/`+pid+`/types/top.json?n=100000').then((r) => r.json()).then((j) => j.rows.find((r) => r[0] === 'struct node')[2])`)
	if focused != want || want == 0 {
		t.Errorf("focused on struct node, the graph holds %v, want its cum %v", focused, want)
	}
	b.Screenshot(t, "types-flame")

	// The skid choice: picking "their own instruction" reloads the page
	// with ?skid=0, which attributes less, and keeps the choice in its links.
	run(t, b, "back to the types page", chromedp.Navigate(base+"/p/"+pid+"/types"))
	waitForJS(t, b, "the types table", `document.querySelector('#types > tbody > tr')`)
	withSkid := text(t, b, "#attributed")
	// SetValue fires change, which submits the toolbar form.
	run(t, b, "attribute to the sampled instruction", chromedp.SetValue(chromedp.CSS("#skid-types"), "0"))
	waitForJS(t, b, "the page without skid correction", `new URLSearchParams(location.search).get('skid') === '0' && document.querySelector('#types > tbody > tr')`)
	without := text(t, b, "#attributed")
	if withSkid == without || withSkid == "" {
		t.Errorf("attributed share %q with skid correction and %q without; want them to differ", withSkid, without)
	}
	if eval[bool](t, b, `!!document.getElementById('skid-share')`) {
		t.Errorf("the page without skid correction still says how much it moved")
	}
	if href := eval[string](t, b, `document.getElementById('types-flame-link').href`); !eval[bool](t, b, `new URL(document.getElementById('types-flame-link').href).searchParams.get('skid') === '0'`) {
		t.Errorf("data-type flame graph link without skid correction = %q, want skid=0 kept", href)
	}
	noProblems(t, b)
}

// TestTypesFlameMenuKeepsSamples: on the data-type flame graph focused on
// a type with skid=0, a function's frame menu leads to the profile's
// pages without the type's focus (the profile has no such frame: its
// sandwich and annotate were empty) and to annotate with skid=0 kept.
func TestTypesFlameMenuKeepsSamples(t *testing.T) {
	dir := "../../testdata/datatype"
	base, pid := serveRecording(t, dir, "datatype-dw5-pie.perf.data", "datatype.perf.data")

	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the focused data-type flame graph", chromedp.Navigate(base+"/p/"+pid+"/types/flame?skid=0&t=0-100&f=%5Estruct+node%24"))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// A function's frame (named or not: this server does not symbolize).
	path := eval[[]string](t, b, `window.viewer.drawnFrames().find((p) => p.length === 1)`)
	if len(path) == 0 || !eval[bool](t, b, fmt.Sprintf(`window.viewerFrameMenu.open(%s)`, jsStrings(path))) {
		t.Fatalf("no frame menu for a function (%q)", path)
	}
	type link struct{ Path, F, T, Skid, Fn string }
	links := eval[[]link](t, b, `[...document.querySelectorAll('#frame-menu a')].map((a) => { const u = new URL(a.href), q = u.searchParams; return {Path: u.pathname, F: q.get('f') || '', T: q.get('t') || '', Skid: q.get('skid') || '', Fn: q.get('fn') || ''}; })`)
	fn := path[0]
	want := []link{
		{"/p/" + pid + "/sandwich", "", "0-100", "", fn},
		{"/p/" + pid + "/source", "", "0-100", "", fn},
		{"/p/" + pid + "/annotate", "", "0-100", "0", fn},
		{"/p/" + pid + "/types/flame", "^" + regexp.QuoteMeta(fn) + "$", "0-100", "0", ""},
	}
	if len(links) < len(want) {
		t.Fatalf("the frame menu of %s has %v", fn, links)
	}
	for i, w := range want {
		if links[i] != w {
			t.Errorf("frame menu link %d = %+v, want %+v", i, links[i], w)
		}
	}
	noProblems(t, b)
}
