package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/web/browsertest"
)

// TestBrowserTopAskedWithGraph: the flame page asks for its top table
// beside the graph's data, not once it has drawn the graph, so the
// server computes the table while the page draws (on a 2M-sample profile
// the table came up to seconds after the graph).
func TestBrowserTopAskedWithGraph(t *testing.T) {
	base := startServer(t)
	id := postProfile(t, base, "cpu.pb.gz", browserProfile(t))
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("never drew: %v; %q", err, b.Problems())
	}
	waitFor(t, b, "the top table", topReady)
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
