package browsertest_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// TestBrowserUploadProgress uploads a perf.data through the upload page in
// chromium with its POST throttled to 100 kB/s: the page must show the
// bytes sent rising (the browser's own upload events), then the server's
// conversion phases from its event stream to 100%, then open the profile.
// What the status line said is recorded in sessionStorage, which outlives
// the page's navigation to the profile.
func TestBrowserUploadProgress(t *testing.T) {
	base := webtest.StartServer(t)
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "throttle uploads", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{URLPattern: base + "/api/profiles", DownloadThroughput: -1, UploadThroughput: 100_000}},
		})
		return err
	}))
	run(t, b, "open the upload page", chromedp.Navigate(base+"/"))
	run(t, b, "record the status line", chromedp.Evaluate[chromedp.Void](`(() => {
		const el = document.getElementById('upload-status');
		sessionStorage.setItem('said', '[]');
		new MutationObserver(() => {
			const said = JSON.parse(sessionStorage.getItem('said'));
			const bar = document.getElementById('upload-progress');
			said.push({text: el.textContent, bar: bar ? [bar.value, bar.max] : null});
			sessionStorage.setItem('said', JSON.stringify(said));
		}).observe(el, {childList: true, characterData: true, subtree: true});
	})()`))
	in, err := filepath.Abs("../../testdata/perf/dwarf.data")
	if err != nil {
		t.Fatal(err)
	}
	run(t, b, "choose dwarf.data", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{in}, chromedp.NodeReady))
	waitForJS(t, b, "the profile page", `location.pathname.startsWith('/p/')`)
	var said []struct {
		Text string    `json:"text"`
		Bar  []float64 `json:"bar"`
	}
	if err := json.Unmarshal([]byte(eval[string](t, b, `sessionStorage.getItem('said')`)), &said); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range said {
		texts = append(texts, s.Text)
	}
	all := strings.Join(texts, "\n")
	sending := regexp.MustCompile(`^Uploading dwarf\.data: .+ of .+ \((\d+)%\)$`)
	partial, lastSent := 0, -1
	for i, s := range said {
		m := sending.FindStringSubmatch(s.Text)
		if m == nil {
			continue
		}
		lastSent = i
		if pct, _ := strconv.Atoi(m[1]); pct > 0 && pct < 100 {
			partial++
			if len(s.Bar) != 2 || s.Bar[0] <= 0 || s.Bar[0] >= s.Bar[1] {
				t.Errorf("at %q the progress bar is %v", s.Text, s.Bar)
			}
		}
	}
	if partial < 2 {
		t.Errorf("the page showed %d partial upload counts; want the bytes sent rising:\n%s", partial, all)
	}
	server := regexp.MustCompile(`^dwarf\.data: Aggregating its stacks: ([\d,]+) of ([\d,]+) \(100%\)$`)
	done := -1
	for i, s := range texts {
		if m := server.FindStringSubmatch(s); m != nil && m[1] == m[2] {
			done = i
		}
	}
	if done < 0 || done < lastSent || !strings.Contains(all, "dwarf.data: Reading its records: ") {
		t.Errorf("the page did not show the server reading the records, then aggregating them to 100%%, after the upload:\n%s", all)
	}
	if !strings.HasPrefix(texts[len(texts)-1], "Uploaded; opening /p/") {
		t.Errorf("the last status was %q", texts[len(texts)-1])
	}
	noProblems(t, b)
}
