package browsertest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/webtest"
)

// pickerRowsJS is the sandwich picker's list as shown: each row's name and
// its self and total texts.
const pickerRowsJS = `[...document.querySelectorAll('#fn-list a')].map((a) => [...a.children].map((c) => c.textContent))`

// TestBrowserSandwichPicker opens /p/ID/sandwich without a function (issue
// 34: it was a 400 page, and a function could only be sandwiched from a
// frame's menu): the page offers a search box whose list holds the
// profile's functions by self, the largest first, then by total (main
// first); typing narrows it to the names containing the text; choosing a
// row opens that function's sandwich, drawn, with the picker still there.
func TestBrowserSandwichPicker(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "wide.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 3)...))
	b := startStrict(t)
	run(t, b.Browser, "open the sandwich page without a function", chromedp.Navigate(base+"/p/"+id+"/sandwich"))
	waitForJS(t, b.Browser, "the picker", `document.body.dataset.ready === '1'`)
	run(t, b.Browser, "focus the picker", chromedp.Click(chromedp.CSS("#fn-find")))
	waitForJS(t, b.Browser, "the list", `document.querySelectorAll('#fn-list a').length > 0`)
	rows := eval[[][]string](t, b.Browser, pickerRowsJS)
	if len(rows) != 50 {
		t.Errorf("the picker lists %d functions, want its first 50", len(rows))
	}
	if len(rows) > 0 && !strings.HasPrefix(rows[0][0], "pkg.leaf") {
		t.Errorf("by self, the first function is %q, want a leaf: %q", rows[0], rows[:min(3, len(rows))])
	}
	selfs := eval[[]float64](t, b.Browser, `[...document.querySelectorAll('#fn-list a')].map((a) => parseFloat(a.children[1].textContent.replace(/[^0-9.]/g, '')))`)
	for i := 1; i < len(selfs); i++ {
		if selfs[i] > selfs[i-1] {
			t.Errorf("by self, row %d (%v) is above row %d (%v): %q", i, selfs[i-1], i+1, selfs[i], rows[i-1:i+1])
			break
		}
	}
	run(t, b.Browser, "order by total", chromedp.SetValue(chromedp.CSS("#fn-order"), "cum"), chromedp.Evaluate[chromedp.Void](`document.getElementById('fn-order').dispatchEvent(new Event('change'))`))
	waitForJS(t, b.Browser, "main first", `document.querySelector('#fn-list a .fn-name').textContent === 'main'`)
	run(t, b.Browser, "type work3", chromedp.SendKeys(chromedp.CSS("#fn-find"), "WORK3"))
	waitForJS(t, b.Browser, "the narrowed list", `[...document.querySelectorAll('#fn-list a .fn-name')].every((n) => n.textContent.toLowerCase().includes('work3'))`)
	rows = eval[[][]string](t, b.Browser, pickerRowsJS)
	names := []string{}
	for _, r := range rows {
		names = append(names, r[0])
	}
	if len(names) != 11 || !contains(names, "pkg.work3") || !contains(names, "pkg.work39") {
		t.Errorf("typing WORK3 lists %q, want pkg.work3 and pkg.work30–39", names)
	}
	run(t, b.Browser, "choose pkg.work3", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#fn-list a')].find((a) => a.querySelector('.fn-name').textContent === 'pkg.work3').click()`))
	waitForJS(t, b.Browser, "the sandwich of pkg.work3", `document.body.dataset.ready === '1' && location.search.includes('fn=')`)
	time.Sleep(100 * time.Millisecond)
	if fn := currentURL(t, b.Browser).Query().Get("fn"); fn != "pkg.work3" {
		t.Errorf("choosing pkg.work3 opened fn=%q", fn)
	}
	if got := text(t, b.Browser, "#sandwich-fn"); got != "pkg.work3" {
		t.Errorf("the page sandwiches %q, want pkg.work3", got)
	}
	if !eval[bool](t, b.Browser, `!!window.viewer.callers.tree && window.viewer.callees.tree.length > 1 && !!document.getElementById('fn-find')`) {
		t.Errorf("the sandwich of pkg.work3 is not drawn, or the picker is gone")
	}
	b.Screenshot(t, "sandwich-picker")
	b.check(t, "sandwich picker")
}

// recentLinksJS is the compare picker's list: each link's profile ID and
// where it goes.
const recentLinksJS = `[...document.querySelectorAll('#compare-recent a[data-id]')].map((a) => a.dataset.id + ' ' + a.getAttribute('href'))`

// TestBrowserComparePicker opens the Filters box of a profile's flame page
// (issue 34: comparing needed the other profile's link pasted): it lists
// the server's other recent uploads, newest first, each linking to the
// diff with it as the base, and following one draws that diff. On a
// server with --auth-token, a visitor without the token is not shown the
// server's list (/api/recent is a listing, 401 as /services is) but only
// what this browser uploaded itself, with a line saying how to see more.
func TestBrowserComparePicker(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	base := webtest.StartServer(t)
	older := webtest.PostProfile(t, base, "older.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 3)...))
	old := webtest.PostProfile(t, base, "old.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 4)...))
	cur := webtest.PostProfile(t, base, "new.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 5)...))
	b := startStrict(t)
	// With a filter set (one that drops nothing), which the diff keeps.
	run(t, b.Browser, "open the flame page", chromedp.Navigate(base+"/p/"+cur+"?i=nomatch"))
	waitForJS(t, b.Browser, "the graph", `document.body.dataset.ready === '1'`)
	run(t, b.Browser, "open Filters", chromedp.Click(chromedp.CSS("#filters-pop summary")))
	waitForJS(t, b.Browser, "the recent profiles", `!document.getElementById('compare-recent').hidden`)
	links := eval[[]string](t, b.Browser, recentLinksJS)
	want := []string{old + " /p/" + old + "/diff/" + cur, older + " /p/" + older + "/diff/" + cur}
	if len(links) != 2 || !strings.HasPrefix(links[0], want[0]) || !strings.HasPrefix(links[1], want[1]) {
		t.Errorf("the compare picker lists %q, want %q then %q (newest first, not the profile itself)", links, want[0], want[1])
	}
	if s := text(t, b.Browser, "#compare-recent"); !strings.Contains(s, "old.pb.gz") {
		t.Errorf("the picker does not name old.pb.gz: %q", s)
	}
	run(t, b.Browser, "diff against old.pb.gz", chromedp.Evaluate[chromedp.Void](`document.querySelector('#compare-recent a[data-id="`+old+`"]').click()`))
	waitForJS(t, b.Browser, "the diff", `location.pathname.includes('/diff/') && document.body.dataset.ready === '1' && !!document.querySelector('#diff-top tbody tr')`)
	if u := currentURL(t, b.Browser); u.Path != "/p/"+old+"/diff/"+cur || u.Query().Get("i") != "nomatch" {
		t.Errorf("the picker opened %s, want /p/%s/diff/%s with the page's filter i=nomatch", u, old, cur)
	}
	b.check(t, "compare picker")

	// With a token: the server's list needs it.
	s, err := web.New(web.Config{DataDir: t.TempDir(), AuthToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	hidden, err := s.Ingest(context.Background(), webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 6)...), "hidden.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	shown, err := s.Ingest(context.Background(), webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 7)...), "shown.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := webtest.GetToken(t, ts.URL+"/api/recent", ""); code != http.StatusUnauthorized || strings.Contains(body, hidden) {
		t.Errorf("/api/recent without the token: %d %.200s, want 401 naming no profile", code, body)
	}
	if code, body := webtest.GetToken(t, ts.URL+"/api/recent", "s3cret"); code != http.StatusOK || !strings.Contains(body, hidden) {
		t.Errorf("/api/recent with the token: %d %.200s, want 200 listing %s", code, body, hidden)
	}
	b2 := startStrict(t)
	run(t, b2.Browser, "open the flame page without the token", chromedp.Navigate(ts.URL+"/p/"+shown))
	waitForJS(t, b2.Browser, "the graph", `document.body.dataset.ready === '1'`)
	run(t, b2.Browser, "open Filters", chromedp.Click(chromedp.CSS("#filters-pop summary")))
	waitForJS(t, b2.Browser, "the picker", `!document.getElementById('compare-recent').hidden`)
	if links := eval[[]string](t, b2.Browser, recentLinksJS); len(links) != 0 {
		t.Errorf("without the token the picker lists the server's profiles: %q", links)
	}
	if s := text(t, b2.Browser, "#compare-recent"); strings.Contains(s, hidden) || !strings.Contains(s, "upload token") || !strings.Contains(s, "Sign in") {
		t.Errorf("without the token the picker says %q: want no server profile and how to see them", s)
	}
	b2.Screenshot(t, "compare-picker-token")
	// The 401 of /api/recent is the one failed request the page makes.
	time.Sleep(300 * time.Millisecond)
	for _, p := range b2.Problems() {
		if !strings.Contains(p, "401") || !strings.HasSuffix(p, "/api/recent") {
			t.Errorf("compare picker with a token: page problem: %s", p)
		}
	}
	b2.mu.Lock()
	defer b2.mu.Unlock()
	for _, f := range b2.failed {
		if !strings.HasPrefix(f, "401 ") || !strings.HasSuffix(f, "/api/recent") {
			t.Errorf("compare picker with a token: %s", f)
		}
	}
}
