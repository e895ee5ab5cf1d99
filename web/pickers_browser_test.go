package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
	base := startServer(t)
	id := postProfile(t, base, "wide.pb.gz", stacksPB(t, "", nil, wideStacks(400, 3)...))
	b := startStrict(t)
	run(t, b.Browser, "open the sandwich page without a function", chromedp.Navigate(base+"/p/"+id+"/sandwich"))
	waitFor(t, b.Browser, "the picker", `document.body.dataset.ready === '1'`)
	run(t, b.Browser, "focus the picker", chromedp.Click(chromedp.CSS("#fn-find")))
	waitFor(t, b.Browser, "the list", `document.querySelectorAll('#fn-list a').length > 0`)
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
	waitFor(t, b.Browser, "main first", `document.querySelector('#fn-list a .fn-name').textContent === 'main'`)
	run(t, b.Browser, "type work3", chromedp.SendKeys(chromedp.CSS("#fn-find"), "WORK3"))
	waitFor(t, b.Browser, "the narrowed list", `[...document.querySelectorAll('#fn-list a .fn-name')].every((n) => n.textContent.toLowerCase().includes('work3'))`)
	rows = eval[[][]string](t, b.Browser, pickerRowsJS)
	names := []string{}
	for _, r := range rows {
		names = append(names, r[0])
	}
	if len(names) != 11 || !contains(names, "pkg.work3") || !contains(names, "pkg.work39") {
		t.Errorf("typing WORK3 lists %q, want pkg.work3 and pkg.work30–39", names)
	}
	run(t, b.Browser, "choose pkg.work3", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#fn-list a')].find((a) => a.querySelector('.fn-name').textContent === 'pkg.work3').click()`))
	waitFor(t, b.Browser, "the sandwich of pkg.work3", `document.body.dataset.ready === '1' && location.search.includes('fn=')`)
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
