package browsertest_test

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// TestBrowserFetchLiveness follows a download from Debian's debuginfod
// server that a proxy holds: before the first byte the row says how long
// it has waited, and the server keeps reporting once a second; after 64
// KiB it shows the phase, bytes of the total, speed, elapsed time and time
// left, then that it stalled. The panel names perf's s and d keys.
func TestBrowserFetchLiveness(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, webtest.PaddedDebugDir(t, debugFile, 640<<10))
	held := holdDownloads(t, dsrv.URL)
	held.Allow(0)
	_, base := webtest.SymbolizingServer(t, []string{held.URL}, 2)
	id := webtest.UploadAPI(t, base, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 7))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	odDo(t, b, "open the profile", chromedp.Navigate(base+"/p/"+id))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	row := `document.querySelector('#binaries tr')`
	live := row + `?.querySelector('.live')?.textContent || ''`
	waitForJS(t, b, "waiting for the first byte", row+`?.dataset.state === 'fetching' && (`+live+`).includes('waiting for the first byte')`)
	if !odEval[bool](t, b, `document.querySelector('#symbolization details').open`) {
		t.Error("the panel is folded while a binary is being fetched")
	}
	seconds := regexp.MustCompile(`first byte \((\d+) s\)`)
	waited := func() int {
		m := seconds.FindStringSubmatch(odEval[string](t, b, live))
		if m == nil {
			t.Fatalf("row says %q, want the seconds waited", odEval[string](t, b, live))
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	w0 := waited()
	// The server reports once a second although no byte moves.
	odEval[bool](t, b, `(() => { window.__progress = 0; const es = new EventSource(JSON.parse(document.getElementById('flame-config').textContent).eventsURL); es.addEventListener('progress', () => window.__progress++); window.__es = es; return true; })()`)
	time.Sleep(3500 * time.Millisecond)
	if n := odEval[float64](t, b, `window.__progress`); n < 3 {
		t.Errorf("%v progress events in 3.5 s of a held download, want one a second", n)
	}
	if w1 := waited(); w1 < w0+2 {
		t.Errorf("after 3.5 s the row says it waited %d s, was %d s", w1, w0)
	}
	if ph := odEval[string](t, b, row+`.dataset.phase`); ph != "downloading" {
		t.Errorf("row phase %q, want downloading (headers came, the body is held)", ph)
	}

	held.Allow(64 << 10)
	waitForJS(t, b, "64 KiB with speed and time left", `(t => /64\.0 KiB of 6\d\d KiB/.test(t) && /\/s/.test(t) && t.includes('left') && t.includes('elapsed'))(`+live+`)`)
	text := odEval[string](t, b, live)
	if !strings.HasPrefix(text, "downloading · ") {
		t.Errorf("live line %q does not start with the phase", text)
	}
	if p := odEval[float64](t, b, row+`.querySelector('progress').value`); math.Abs(p-64<<10) > 1 {
		t.Errorf("progress bar at %v, want %d", p, 64<<10)
	}
	waitForJS(t, b, "stalled", `(`+live+`).includes('stalled: no byte for')`)
	if keys := odEval[string](t, b, `document.getElementById('symbolize-keys').textContent`); !strings.Contains(keys, "perf") || !strings.Contains(keys, "s skips") || !strings.Contains(keys, "d disables") {
		t.Errorf("the panel's key note says %q", keys)
	}
	b.Screenshot(t, "fetch-liveness")
	held.Allow(math.MaxInt64)
	waitForJS(t, b, "symbolized", row+`.dataset.state === 'symbolized' && document.getElementById('symbolization').dataset.job === 'done'`)
	waitForJS(t, b, "the panel folds to one line", `!document.querySelector('#symbolization details').open`)
	for _, p := range b.Problems() {
		t.Errorf("page problem: %s", p)
	}
}
