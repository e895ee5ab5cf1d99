package browsertest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/web"
	"viewer/web/webtest"
)

// TestBrowserServices opens /services in chromium after three OTLP
// profiles of one service and one of another arrived: one section per
// service.name, each profile's time and sample count newest first, its
// link opening its flame page; the merge form, submitted with its
// defaults (the service's whole range), lands on a /p/ID whose graph
// totals the members' samples.
func TestBrowserServices(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	s, err := web.New(web.Config{DataDir: t.TempDir(), OTLP: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	ids := []string{
		webtest.SendService(t, ts.URL, "checkout", 1000, 100),
		webtest.SendService(t, ts.URL, "checkout", 2000, 200),
		webtest.SendService(t, ts.URL, "checkout", 3000, 300),
	}
	webtest.SendService(t, ts.URL, "cart", 500, 150)

	b := startStrict(t)
	run(t, b.Browser, "open /services", chromedp.Navigate(ts.URL+"/services"))
	waitForJS(t, b.Browser, "the service sections", `document.querySelectorAll('section.service').length === 2`)
	names := eval[[]string](t, b.Browser, `[...document.querySelectorAll('section.service')].map(s => s.dataset.service)`)
	if strings.Join(names, ",") != "cart,checkout" {
		t.Errorf("services %q, want cart and checkout", names)
	}
	rows := eval[[][]string](t, b.Browser, `[...document.querySelectorAll('section.service[data-service="checkout"] tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()))`)
	want := [][]string{
		{"1970-01-01 00:05:00", "3,000", ids[2]},
		{"1970-01-01 00:03:20", "2,000", ids[1]},
		{"1970-01-01 00:01:40", "1,000", ids[0]},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("checkout's rows %q, want %q", rows, want)
	}
	run(t, b.Browser, "open the newest profile", chromedp.Click(chromedp.CSS(`section.service[data-service="checkout"] tbody tr a`)))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p := currentURL(t, b.Browser).Path; p != "/p/"+ids[2] {
		t.Errorf("the link opened %s, want /p/%s", p, ids[2])
	}
	waitForJS(t, b.Browser, "its graph", `window.viewer && window.viewer.tree && window.viewer.tree.rootTotal === 3000`)

	run(t, b.Browser, "back to /services", chromedp.Navigate(ts.URL+"/services"))
	waitForJS(t, b.Browser, "the merge form", `document.querySelector('section.service[data-service="checkout"] form.merge')`)
	run(t, b.Browser, "merge checkout's whole range", chromedp.Click(chromedp.CSS(`section.service[data-service="checkout"] form.merge button`)))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForJS(t, b.Browser, "the merged graph", `location.pathname.startsWith('/p/') && window.viewer && window.viewer.tree`)
	if got := eval[float64](t, b.Browser, `window.viewer.tree.rootTotal`); got != 6000 {
		t.Errorf("the merged graph totals %v samples, want the members' 1000+2000+3000", got)
	}
	if p := currentURL(t, b.Browser).Path; p == "/p/"+ids[0] || p == "/p/"+ids[1] || p == "/p/"+ids[2] {
		t.Errorf("the merge opened a member, %s", p)
	}
	noProblems(t, b.Browser)
}
