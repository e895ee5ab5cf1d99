package browsertest_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/symbolize"
	"viewer/web/browsertest"
	"viewer/web/ondemand"
	"viewer/web/webtest"
)

// TestAnnotatePageInBrowser opens the annotate view of sum_list from the
// data-type test recording in headless chromium: the hottest instruction
// (the load of n->next, per perf annotate: mov (%rdi),%rdi) is highlighted
// with its source line and member label, the search box finds the
// instructions touching val, and clicking the loop's jump target scrolls
// to it and marks it.
func TestAnnotatePageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test; run without -short")
	}
	dir := "../../testdata/datatype"
	base, pid := serveRecording(t, dir, "datatype-dw5-pie.perf.data", "datatype.perf.data")

	// A short window, so that the listing scrolls.
	b := browsertest.Start(t, browsertest.Options{Width: 1200, Height: 500})
	run(t, b, "open the annotate view", chromedp.Navigate(base+"/p/"+pid+"/annotate?fn=sum_list&si=cpu-clock_count"))
	waitForJS(t, b, "the listing", `document.querySelector('#annotate tbody tr.insn')`)
	hot := eval[[]string](t, b, `Array.from(document.querySelectorAll('#annotate tr.insn.hot')).map(r => r.querySelector('td.asm').textContent.trim().replace(/\s+/g, ' '))`)
	if len(hot) == 0 || !strings.HasPrefix(hot[0], "mov (%rdi),%rdi") {
		t.Fatalf("highlighted rows %q, want the hottest, mov (%%rdi),%%rdi, first", hot)
	}
	label := eval[string](t, b, `document.querySelector('#annotate tr.insn.hot td.dtype').textContent.trim()`)
	if label != "struct node +0x0 next" {
		t.Errorf("hottest row's data type %q, want struct node +0x0 next", label)
	}
	src := eval[string](t, b, `(() => { let r = document.querySelector('#annotate tr.insn.hot'); while (r && !r.classList.contains('src')) r = r.previousElementSibling; return r ? r.textContent.trim() : ''; })()`)
	if !strings.Contains(src, "datatype.c:") {
		t.Errorf("the hottest row's source line is %q, want a datatype.c line", src)
	}
	// sum_list has two jumps inside it (je to the end, jne back to the loop).
	if n := eval[int](t, b, `document.querySelectorAll('svg.jump-arrows path[marker-end]').length`); n != eval[int](t, b, `document.querySelectorAll('#annotate a.target').length`) || n == 0 {
		t.Errorf("%d jump arrows, want one per in-function jump", n)
	}
	b.Screenshot(t, "annotate")

	run(t, b, "search for val", chromedp.SendKeys(chromedp.CSS("#annotate-search"), "val"))
	waitForJS(t, b, "matches", `document.querySelectorAll('#annotate tr.match').length > 0`)
	matches := eval[[]string](t, b, `Array.from(document.querySelectorAll('#annotate tr.match td.dtype')).map(td => td.textContent.trim())`)
	for _, m := range matches {
		if !strings.Contains(m, "val") {
			t.Errorf("search for val matched a row labelled %q", m)
		}
	}
	if len(matches) == 0 || !strings.Contains(text(t, b, "#annotate-matches"), "of") {
		t.Errorf("matches %q, counter %q", matches, text(t, b, "#annotate-matches"))
	}

	// The jne at the loop's end jumps back to its start, sum_list+0x10.
	eval[any](t, b, `window.scrollTo(0, 0)`)
	target := eval[string](t, b, `document.querySelector('#annotate a.target').getAttribute('href')`)
	run(t, b, "click the jump target", chromedp.Click(chromedp.CSS(`#annotate a.target`)))
	waitForJS(t, b, "the target marked", `document.querySelector('`+target+`.jumped')`)
	inView := eval[bool](t, b, `(() => { const r = document.querySelector('`+target+`').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()`)
	if !inView || eval[string](t, b, `location.hash`) != target {
		t.Errorf("after clicking %s: in view %v, location.hash %q", target, inView, eval[string](t, b, `location.hash`))
	}
	b.Screenshot(t, "annotate-jumped")
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("script problems: %q", p)
	}
}

// TestAnnotateMergeInBrowser opens the annotate view of mix, inlined into
// first and second, from a recording of testdata/annotate/inline: the page
// lists one copy and offers to merge them; after clicking the control, the
// listing says which copies it merges, each source line names its copy,
// and the rows stay a listing with a highlighted hottest instruction.
func TestAnnotateMergeInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test; run without -short")
	}
	dir := "../../testdata/annotate"
	base, pid := serveRecording(t, dir, "inline.perf.data", "inline.perf.data")

	b := browsertest.Start(t, browsertest.Options{Width: 1200, Height: 700})
	run(t, b, "open the annotate view of mix", chromedp.Navigate(base+"/p/"+pid+"/annotate?fn=mix&si=cpu-clock_count"))
	waitForJS(t, b, "the listing", `document.querySelector('#annotate tbody tr.insn')`)
	one := eval[string](t, b, `document.querySelector('.annotate-meta').textContent.replace(/\s+/g, ' ')`)
	if !strings.Contains(one, "where mix is inlined") {
		t.Errorf("one copy: the page says %q", one)
	}
	run(t, b, "merge the copies", chromedp.Click(chromedp.CSS(`#annotate-inline`)))
	waitForJS(t, b, "the merged listing", `document.querySelector('#annotate-merged')`)
	merged := eval[string](t, b, `document.querySelector('#annotate-merged').textContent.replace(/\s+/g, ' ')`)
	if !strings.Contains(merged, "first") || !strings.Contains(merged, "second") {
		t.Errorf("merged: the page says %q, want both copies named", merged)
	}
	copies := eval[[]string](t, b, `Array.from(new Set(Array.from(document.querySelectorAll('#annotate tr.src')).map(r => (r.textContent.match(/in (first|second)/) || [''])[0])))`)
	if strings.Join(copies, ",") != "in first,in second" && strings.Join(copies, ",") != "in second,in first" {
		t.Errorf("source lines name copies %q, want first and second", copies)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#annotate tr.insn.hot').length`); n == 0 {
		t.Error("no hottest instruction highlighted in the merged listing")
	}
	if !strings.Contains(eval[string](t, b, `location.search`), "inline=merge") {
		t.Errorf("the merged view's address %q has no inline=merge", eval[string](t, b, `location.search`))
	}
	b.Screenshot(t, "annotate-merged")
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("script problems: %q", p)
	}
}

// TestBrowserAnnotateWithoutExecutable: the data-type recording
// symbolized from its separate debug file alone (--debug-dir holds
// datatype-dw5-pie.debug, which has the symbols and lines but no code), so
// and the path the recording names ignored (IgnoreMappingPaths, as on a
// server for other machines' uploads), so the flame graph names sum_list
// but its instructions cannot be listed
// (issue 34: a bare 404 page). The annotate page stays the page: one line
// says which executable is missing and how to provide it, and a table
// gives sum_list's self samples per address as the profile records them,
// each with its source line, the counts adding up to the function's self
// samples.
func TestBrowserAnnotateWithoutExecutable(t *testing.T) {
	dir := t.TempDir()
	debug, err := os.ReadFile(filepath.Join("../../testdata/datatype", "datatype-dw5-pie.debug"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "datatype-dw5-pie.debug"), debug, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("../../testdata/datatype", "datatype-dw5-pie.perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	_, base := webtest.SymbolizingServer(t, nil, 1, func(c *symbolize.Config) {
		c.DebugDirs = []string{dir}
		c.IgnoreMappingPaths = true // as a server for uploads from other machines: the recorded path is not this machine's binary
	})
	id := webtest.UploadAPI(t, base, "", data)

	waitRun(t, base, id, ondemand.RunDone)

	b := browsertest.Start(t, browsertest.Options{Width: 1200, Height: 800})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	waitForJS(t, b, "sum_list named in the top table", `[...document.querySelectorAll('#top-table tbody td.fn')].some((td) => td.textContent.trim() === 'sum_list')`)

	run(t, b, "open the annotate view of sum_list", chromedp.Navigate(base+"/p/"+id+"/annotate?fn=sum_list&si=cpu-clock_count"))
	waitForJS(t, b, "the page", `document.readyState === 'complete'`)
	if h := eval[string](t, b, `document.querySelector('h1')?.textContent.trim() ?? ''`); !strings.Contains(h, "sum_list") {
		t.Fatalf("the annotate page's heading is %q, want the annotate page of sum_list; page:\n%s", h, eval[string](t, b, `document.body.innerText`))
	}
	msg := eval[string](t, b, `document.getElementById('annotate-missing')?.textContent.replace(/\s+/g, ' ').trim() ?? ''`)
	for _, want := range []string{"datatype-dw5-pie", "--debug-dir", "debuginfod", "viewer upload-debuginfo"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the missing-executable line %q does not say %q", msg, want)
		}
	}
	if n := eval[int](t, b, `(() => { const r = document.getElementById('annotate-missing')?.getClientRects(); return r ? r.length : 0; })()`); n == 0 {
		t.Fatalf("the missing-executable line is not shown; the page says:\n%s", eval[string](t, b, `document.body.innerText`))
	}
	type addrRow struct {
		Addr    string `json:"addr"`
		Samples string `json:"samples"`
		Source  string `json:"source"`
	}
	rows := eval[[]addrRow](t, b, `[...document.querySelectorAll('#annotate-addrs tbody tr')].map((r) => ({addr: r.querySelector('td.addr')?.textContent.trim() ?? '', samples: r.querySelector('td.samples')?.textContent.trim() ?? '', source: r.querySelector('td.where')?.textContent.trim() ?? ''}))`)
	if len(rows) < 2 {
		t.Fatalf("the address table has %d rows %+v, want sum_list's sampled addresses", len(rows), rows)
	}
	var sum int64
	for _, r := range rows {
		if _, err := strconv.ParseUint(r.Addr, 16, 64); err != nil {
			t.Errorf("row %+v: the address is not hex", r)
		}
		n, err := strconv.ParseInt(r.Samples, 10, 64)
		if err != nil || n <= 0 {
			t.Errorf("row %+v: the samples are not a positive count", r)
		}
		sum += n
		if !strings.Contains(r.Source, "datatype.c:") {
			t.Errorf("row %+v: no source line from the debug file", r)
		}
	}
	total := eval[string](t, b, `document.getElementById('annotate-total')?.textContent.trim() ?? ''`)
	if strconv.FormatInt(sum, 10) != total {
		t.Errorf("the rows add up to %d samples, the page says sum_list has %q", sum, total)
	}
	b.Screenshot(t, "annotate-without-executable")
	noProblems(t, b)
}

// waitRun polls /p/ID/symbolization until the job reaches state.
func waitRun(t testing.TB, base, id string, state ondemand.RunState) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last ondemand.Status
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/p/" + id + "/symbolization")
		if err != nil {
			t.Fatal(err)
		}
		last = ondemand.Status{}
		json.NewDecoder(resp.Body).Decode(&last)
		resp.Body.Close()
		if last.State == state {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s's symbolization never reached %s: %+v", id, state, last)
}
