package browsertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"viewer/symbolize"
	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/ingest"
	"viewer/web/webtest"
)

// hostileWarning is a warning whose text is markup: a pprof's comments
// are the uploader's text.
const hostileWarning = `<img src=x onerror="window.__xss='warning'"> skipped <b>3</b> & more`

// TestBrowserWarningsOnEveryPage opens, in headless chromium, every page of
// a profile with warnings (the data-type recording converted to pprof, a
// hostile warning added, so that its annotate and types pages have
// something to show) and checks each has the quiet "N warnings" line that
// opens to the list, each warning as text, as warnings.json lists them;
// that folded stacks with bad lines and a perf.data whose dummy event was
// dropped show theirs; and that the clean recording's pages have no line.
func TestBrowserWarningsOnEveryPage(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test; run without -short")
	}
	dir := "../../testdata/datatype"
	data, err := os.ReadFile(filepath.Join(dir, "datatype-dw5-pie.perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{dir}}))
	ctx := context.Background()
	clean, err := s.Ingest(ctx, data, "datatype.perf.data")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := ingest.Parse(data, ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p.Comments = append(p.Comments, "warning: "+hostileWarning, "warning: the kernel dropped 7 samples (LOST records); the profile undercounts")
	var pb bytes.Buffer
	if err := p.Write(&pb); err != nil {
		t.Fatal(err)
	}
	warned, err := s.Ingest(ctx, pb.Bytes(), "warned.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	var folded strings.Builder
	for i := range 20 {
		folded.WriteString("main;work;leaf" + string(rune('a'+i)) + " 10\n")
	}
	folded.WriteString("main;<script>window.__xss='folded'</script> many\n") // a count that is not a number
	foldedID, err := s.Ingest(ctx, []byte(folded.String()), "bad.folded")
	if err != nil {
		t.Fatal(err)
	}
	system, err := os.ReadFile("../../testdata/perf/system.data")
	if err != nil {
		t.Fatal(err)
	}
	systemID, err := s.Ingest(ctx, system, "system.data")
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)

	// warnings.json, which the pages must agree with.
	listed := func(id string) []string {
		t.Helper()
		resp, err := http.Get(ts.URL + "/p/" + id + "/warnings.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var w struct {
			Count    int
			Warnings []string
		}
		if err := json.NewDecoder(resp.Body).Decode(&w); err != nil || resp.StatusCode != 200 || w.Count != len(w.Warnings) {
			t.Fatalf("warnings.json of %s: %d %+v %v", id, resp.StatusCode, w, err)
		}
		return w.Warnings
	}
	want := listed(warned)
	if len(want) != 2 || want[0] != hostileWarning {
		t.Fatalf("warnings.json lists %q, want the hostile warning then the LOST one", want)
	}
	if w := listed(clean); len(w) != 0 {
		t.Fatalf("the clean recording's warnings.json lists %q", w)
	}

	// The sandwich and source pages of the hottest function, by the
	// name the profile gives it.
	resp, err := http.Get(ts.URL + "/p/" + warned + "/top.json?n=1")
	if err != nil {
		t.Fatal(err)
	}
	var top struct{ Rows [][3]any }
	json.NewDecoder(resp.Body).Decode(&top)
	resp.Body.Close()
	if len(top.Rows) == 0 {
		t.Fatal("top.json has no rows")
	}
	hot := url.QueryEscape(top.Rows[0][0].(string))

	b := browsertest.Start(t, browsertest.Options{})
	// shown opens path, opens its warnings line when it has one, and
	// returns the line's text and the list's items as the page shows them.
	shown := func(path string) (string, []string) {
		t.Helper()
		run(t, b, "open "+path, chromedp.Navigate(ts.URL+path))
		waitForJS(t, b, path+" loaded", `document.readyState === 'complete'`)
		if !eval[bool](t, b, `!!document.querySelector('#warnings summary')`) {
			return "", nil
		}
		line := eval[string](t, b, `document.querySelector('#warnings summary').innerText.trim()`)
		if eval[bool](t, b, `document.querySelector('#warnings li').checkVisibility()`) {
			t.Errorf("%s: the list is shown before the line is opened", path)
		}
		run(t, b, "open the warnings of "+path, chromedp.Click(chromedp.CSS(`#warnings summary`)))
		waitForJS(t, b, "the list", `document.querySelector('#warnings li').checkVisibility()`)
		items := eval[[]string](t, b, `[...document.querySelectorAll('#warnings li')].map(li => li.textContent)`)
		if n := eval[int](t, b, `document.querySelectorAll('#warnings li *').length`); n != 0 {
			t.Errorf("%s: %d elements inside the warnings, want text only", path, n)
		}
		if v := eval[string](t, b, `String(window.__xss ?? "")`); v != "" {
			t.Errorf("%s: a warning's markup ran (window.__xss = %q)", path, v)
		}
		return line, items
	}

	pages := []string{
		"/p/" + warned,
		"/p/" + warned + "/top",
		"/p/" + warned + "/time",
		"/p/" + warned + "/types",
		"/p/" + warned + "/types/flame",
		"/p/" + warned + "/sandwich?fn=" + hot,
		"/p/" + warned + "/source?fn=" + hot,
		"/p/" + warned + "/annotate?fn=sum_list&si=cpu-clock_count",
	}
	for i, path := range pages {
		line, items := shown(path)
		if line != "2 warnings" || !slices.Equal(items, want) {
			t.Errorf("%s: line %q and list %q, want \"2 warnings\" and %q", path, line, items, want)
		}
		if i == 0 {
			b.Screenshot(t, "warnings")
		}
	}
	// A diff lists each side's warnings, named by its profile.
	line, items := shown("/p/" + clean + "/diff/" + warned)
	if line != "2 warnings" || len(items) != 2 || !strings.HasSuffix(items[0], ": "+hostileWarning) || !strings.Contains(items[0], "warned.pb.gz") {
		t.Errorf("diff: line %q and list %q, want the new profile's 2 warnings, named", line, items)
	}

	if line, items := shown("/p/" + foldedID); line != "1 warning" || len(items) != 1 ||
		!strings.Contains(items[0], "skipped 1 unreadable line") || !strings.Contains(items[0], "<script>window.__xss='folded'</script>") {
		t.Errorf("folded stacks with a bad line: line %q and list %q, want the skipped line, as text", line, items)
	}
	if line, items := shown("/p/" + systemID + "/top"); line != "1 warning" || len(items) != 1 || !strings.Contains(items[0], "dummy") {
		t.Errorf("perf.data with a dummy event: line %q and list %q, want the dropped dummy event", line, items)
	}

	for _, path := range []string{"/p/" + clean, "/p/" + clean + "/top", "/p/" + clean + "/annotate?fn=sum_list&si=cpu-clock_count"} {
		if line, items := shown(path); line != "" || items != nil {
			t.Errorf("%s of the clean recording: line %q and list %q, want none", path, line, items)
		}
	}
	for _, p := range b.Problems() {
		if strings.HasPrefix(p, "exception") || strings.Contains(p, "Content Security Policy") || strings.Contains(p, "Refused to") {
			t.Errorf("page problem: %s", p)
		}
	}
}
