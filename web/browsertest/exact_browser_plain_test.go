package browsertest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/testdata/bench/gen"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// exactProfile writes the benchmark profile of testdata/bench (200,000
// samples over 50,000 stacks, 20,000 functions, 20 mappings). Under the
// race detector (make test) it is a quarter of that in every dimension,
// the same generator and shape (a tenth left no … block wide enough to
// click).
func exactProfile(t *testing.T) (string, []byte) {
	t.Helper()
	var p *profile.Profile
	switch {
	case raceDetector:
		p = gen.Generate(50000, 12500, 5000, 20, 1)
	default:
		p = gen.Generate(200000, 50000, 20000, 20, 1)
	}
	t.Logf("profile: %d samples, %d functions", len(p.Sample), len(p.Function))
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bench.pb.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}

// pct normalizes a percentage to two decimals: pprof writes 0.6%, the
// page 0.60%.
func pct(s string) string {
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + "%"
}

// runLong is run with room for a big profile on a loaded machine.
func runLong(t *testing.T, b *browsertest.Browser, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 3*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// topLine is one row of a top table: flat%, cum% and the function.
type topLine struct{ Flat, Cum, Name string }

// pprofTop runs go tool pprof -top on path for the cpu sample type,
// dropping no function (pprof drops those under 0.5% cum by default),
// with its temporary files in tmp. It may run on a goroutine of its own:
// it returns what went wrong instead of failing the test.
func pprofTop(path, tmp string, n int) ([]topLine, error) {
	cmd := exec.Command("go", "tool", "pprof", "-top", "-sample_index=cpu", "-nodefraction=0", fmt.Sprintf("-nodecount=%d", n), path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -top: %v\n%s", err, out)
	}
	var rows []topLine
	header := false
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] == "flat" && f[1] == "flat%" {
			header = true
			continue
		}
		if !header || len(f) < 6 {
			continue
		}
		// flat flat% sum% cum cum% name, where pprof marks a function
		// inlined at some (or all) of its calls.
		name := strings.Join(f[5:], " ")
		name = strings.TrimSuffix(strings.TrimSuffix(name, " (partial-inline)"), " (inline)")
		rows = append(rows, topLine{Flat: f[1], Cum: f[4], Name: name})
	}
	if len(rows) < n {
		return nil, fmt.Errorf("go tool pprof -top listed %d functions, want %d:\n%s", len(rows), n, out)
	}
	return rows, nil
}

// pageTop reads the rows of the table with selector sel: flat% is cell
// flatCell, cum% cumCell, the name the td.fn cell's whole name (its title's
// first line: the flame page elides long names in the cell).
func pageTop(t *testing.T, b *browsertest.Browser, sel string, flatCell, cumCell int) []topLine {
	t.Helper()
	return eval[[]topLine](t, b, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(r => ({
		Flat: r.cells[%d].textContent.trim(), Cum: r.cells[%d].textContent.trim(), Name: (r.querySelector('td.fn').title.split('\n')[0] || r.querySelector('td.fn').textContent).trim() }))`, sel, flatCell, cumCell))
}

// compareTop checks got against want for want's rows: the same shares in
// the same order, and each function's own flat% and cum%.
func compareTop(t *testing.T, what string, got, want []topLine) {
	t.Helper()
	if len(got) < len(want) {
		t.Fatalf("%s: %d rows, want at least %d", what, len(got), len(want))
	}
	byName := map[string]topLine{}
	for i, r := range got {
		got[i].Flat, got[i].Cum = pct(r.Flat), pct(r.Cum)
		byName[r.Name] = got[i]
	}
	bad := 0
	for i, w := range want {
		w.Flat, w.Cum = pct(w.Flat), pct(w.Cum)
		g, ok := byName[w.Name]
		switch {
		case !ok:
			t.Errorf("%s: row %d %s (flat %s cum %s) is missing", what, i+1, w.Name, w.Flat, w.Cum)
		case g.Flat != w.Flat || g.Cum != w.Cum:
			t.Errorf("%s: %s flat %s cum %s, want flat %s cum %s", what, w.Name, g.Flat, g.Cum, w.Flat, w.Cum)
		case got[i].Flat != w.Flat:
			t.Errorf("%s: row %d has flat %s, want %s", what, i+1, got[i].Flat, w.Flat)
		default:
			continue
		}
		if bad++; bad > 10 {
			t.Fatalf("%s: more than 10 rows differ", what)
		}
	}
}

// TestBrowserExactTopAndZoom: on the benchmark profile, whose compacted
// tree merges a third of the self time into "…" frames, the flame page's
// top table equals /top and go tool pprof -top for the top 50 functions,
// and zooming into a merged block draws the frames it holds.
func TestBrowserExactTopAndZoom(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test on a generated 50,000-sample profile, checked against go tool pprof: skipped with -short")
	}
	path, data := exactProfile(t)
	// go tool pprof reads the file meanwhile, as a user comparing the two
	// would: it is most of the test's time, and the server and chromium
	// start beside it.
	type result struct {
		rows []topLine
		err  error
	}
	pprofDone := make(chan result, 1)
	tmp := t.TempDir()
	go func() {
		rows, err := pprofTop(path, tmp, 50)
		pprofDone <- result{rows, err}
	}()
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "bench.pb.gz", data)
	b := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})

	runLong(t, b, "open /top", chromedp.Navigate(base+"/p/"+id+"/top?si=cpu"))
	top := pageTop(t, b, "#top tbody tr", 1, 4)
	pr := <-pprofDone
	if pr.err != nil {
		t.Fatal(pr.err)
	}
	want := pr.rows
	compareTop(t, "/top", top, want)

	runLong(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id+"?si=cpu"))
	if err := b.WaitReady(2 * time.Minute); err != nil {
		t.Fatalf("flame graph never drew: %v; page problems: %q", err, b.Problems())
	}
	waitForJS(t, b, "the top table", topReady)
	compareTop(t, "flame page top table", pageTop(t, b, "#top-table tbody tr", 1, 3), want)

	// The search's share is of every sample, not of the drawn tree: the
	// hottest function's cum, as pprof gives it.
	hot := want[0]
	search(t, b, "^"+regexp.QuoteMeta(hot.Name)+"$", hot.Cum)

	// The widest drawn "…" block; its frames are not in the drawn tree.
	block := eval[[]string](t, b, `(() => {
		const v = window.viewer, t = v.tree;
		let best = -1, bw = 0;
		for (const i of v.graph.drawn) {
			if (t.label(i) !== '…') continue;
			const r = v.graph.rectOf(i);
			if (r && r.w > bw) { best = i; bw = r.w; }
		}
		return best < 0 ? null : t.path(best);
	})()`)
	if len(block) == 0 {
		t.Fatal("no merged … frame is drawn on the benchmark profile")
	}
	r := frame(t, b, block...)
	if r.Width < 2 {
		t.Fatalf("the widest … block is %.2f px wide", r.Width)
	}
	loads := eval[int](t, b, `window.viewer.zoomTimings.length`)
	run(t, b, "click the … block", chromedp.MouseClickXY(r.X+r.Width/2, r.Y+r.Height/2))
	waitForJS(t, b, "the zoomed tree", fmt.Sprintf(`window.viewer.zoomTimings.length > %d && document.body.dataset.zoom === 'ready'`, loads))
	if z := currentURL(t, b).Query()["z"]; strings.Join(z, ">") != strings.Join(block, ">") {
		t.Errorf("URL z = %q after zooming, want %q", z, block)
	}
	// Frames under the block are drawn: real functions, one level below it.
	drawn := eval[[][]string](t, b, `window.viewer.drawnFrames()`)
	var inside [][]string
	for _, p := range drawn {
		if len(p) == len(block)+1 && !strings.HasPrefix(p[len(p)-1], "…") {
			inside = append(inside, p)
		}
	}
	if len(inside) < 2 {
		t.Fatalf("zoomed into %q: %d frames of the block drawn (of %d drawn), want several", block, len(inside), len(drawn))
	}
	// Hovering one shows its name in the tooltip.
	fr := frame(t, b, inside[0]...)
	run(t, b, "hover a frame of the block", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, fr.X+fr.Width/2, fr.Y+fr.Height/2))
	waitForJS(t, b, "tooltip", `!document.getElementById('tooltip').hidden`)
	name := inside[0][len(inside[0])-1]
	if tip := eval[string](t, b, `document.getElementById('tooltip').innerText`); !strings.HasPrefix(tip, name) {
		t.Errorf("tooltip over %s reads %q", name, tip)
	}
	// The top table is the block's, with shares of it.
	waitForJS(t, b, "the block's top table", topReady)
	if got := text(t, b, "#top-scope"); !strings.HasPrefix(got, "within …") {
		t.Errorf("top table scope %q, want within …", got)
	}
	// A reload of the link shows the same zoom.
	runLong(t, b, "reload", chromedp.Reload())
	if err := b.WaitReady(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := eval[[]string](t, b, `window.viewer.graph.zoomPath`); strings.Join(got, ">") != strings.Join(block, ">") {
		t.Errorf("after a reload the zoom is %q, want %q", got, block)
	}
	if fr := eval[*rect](t, b, fmt.Sprintf("window.viewer.frameRect(%s)", jsStrings(inside[0]))); fr == nil {
		t.Errorf("after a reload %q is not drawn", inside[0])
	}
	noProblems(t, b)
}
