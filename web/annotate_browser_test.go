package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"viewer/symbolize"

	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/browsertest"
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
	dir := "../testdata/datatype"
	data, err := os.ReadFile(filepath.Join(dir, "datatype-dw5-pie.perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{dir}})) // finds datatype-dw5-pie by its name and build ID
	pid, err := s.Ingest(context.Background(), data, "datatype.perf.data")
	if err != nil {
		t.Fatal(err)
	}
	ts := loopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)

	// A short window, so that the listing scrolls.
	b := browsertest.Start(t, browsertest.Options{Width: 1200, Height: 500})
	run(t, b, "open the annotate view", chromedp.Navigate(ts.URL+"/p/"+pid+"/annotate?fn=sum_list&si=cpu-clock_count"))
	waitFor(t, b, "the listing", `document.querySelector('#annotate tbody tr.insn')`)
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
	waitFor(t, b, "matches", `document.querySelectorAll('#annotate tr.match').length > 0`)
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
	waitFor(t, b, "the target marked", `document.querySelector('`+target+`.jumped')`)
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
	dir := "../testdata/annotate"
	data, err := os.ReadFile(filepath.Join(dir, "inline.perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{dir}}))
	pid, err := s.Ingest(context.Background(), data, "inline.perf.data")
	if err != nil {
		t.Fatal(err)
	}
	ts := loopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)

	b := browsertest.Start(t, browsertest.Options{Width: 1200, Height: 700})
	run(t, b, "open the annotate view of mix", chromedp.Navigate(ts.URL+"/p/"+pid+"/annotate?fn=mix&si=cpu-clock_count"))
	waitFor(t, b, "the listing", `document.querySelector('#annotate tbody tr.insn')`)
	one := eval[string](t, b, `document.querySelector('.annotate-meta').textContent.replace(/\s+/g, ' ')`)
	if !strings.Contains(one, "where mix is inlined") {
		t.Errorf("one copy: the page says %q", one)
	}
	run(t, b, "merge the copies", chromedp.Click(chromedp.CSS(`#annotate-inline`)))
	waitFor(t, b, "the merged listing", `document.querySelector('#annotate-merged')`)
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
