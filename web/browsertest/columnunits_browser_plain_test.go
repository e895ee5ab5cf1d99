package browsertest_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// spreadProfile is a CPU profile (samples and cpu nanoseconds) whose
// functions' times span three units: 2.5 s, 40 ms, 900 µs and 0 self.
func spreadProfile(t *testing.T) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     100_000,
	}
	loc := func(name string) *profile.Location {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Address: 0x1000 + uint64(len(p.Location))*16, Line: []profile.Line{{Function: f}}}
		p.Location = append(p.Location, l)
		return l
	}
	root := loc("main.main")
	for _, s := range []struct {
		name string
		ns   int64
	}{{"main.crunch", 2_500_000_000}, {"main.parse", 40_000_000}, {"main.log", 900_000}} {
		p.Sample = append(p.Sample, &profile.Sample{Value: []int64{s.ns / 100_000, s.ns}, Location: []*profile.Location{loc(s.name), root}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBrowserOneUnitPerColumn: as pprof writes a report in one unit, the
// flame page's top table and /top write each column of times in one unit
// (2.5 s, 40 ms and 900 µs as 2,500 ms, 40.0 ms and 0.900 ms; they
// read 2.50 s, 40.0 ms, 900 µs), and the value columns' headers say what
// they hold: CPU time for cpu, samples for the samples type.
func TestBrowserOneUnitPerColumn(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "spread.pb.gz", spreadProfile(t))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	unitOf := regexp.MustCompile(`^-?[0-9,.]+ ?(.*)$`)
	// check reads columns cols of the rows of table sel and their headers.
	check := func(page, sel string, cols []int, wantHead, wantUnit string) {
		t.Helper()
		cells := eval[[][]string](t, b, `[...document.querySelectorAll('`+sel+` tbody tr')].filter(r => !r.hidden).map(r => [...r.cells].map(c => c.textContent.trim()))`)
		heads := eval[[]string](t, b, `[...document.querySelectorAll('`+sel+` thead th')].map(th => th.title)`)
		if len(cells) < 4 {
			t.Fatalf("%s: %d rows", page, len(cells))
		}
		for _, c := range cols {
			units := map[string]bool{}
			var col []string
			for _, r := range cells {
				col = append(col, r[c])
				if r[c] == "0" {
					continue
				}
				m := unitOf.FindStringSubmatch(r[c])
				if m == nil {
					t.Errorf("%s: %q is not a number", page, r[c])
					continue
				}
				units[m[1]] = true
			}
			if len(units) != 1 || !units[wantUnit] {
				t.Errorf("%s: column %d reads %q: want every value in %s", page, c, col, wantUnit)
			}
			if !strings.Contains(heads[c], wantHead) || !strings.HasSuffix(heads[c], wantUnit) {
				t.Errorf("%s: column %d's header says %q, want %s in %s", page, c, heads[c], wantHead, wantUnit)
			}
		}
	}
	run(t, b, "open the flame page", chromedp.Navigate(base+"/p/"+id+"?si=cpu"))
	if err := b.WaitReady(20 * time.Second); err != nil {
		t.Fatalf("never drew: %v; %q", err, b.Problems())
	}
	waitForJS(t, b, "the top table", topReady)
	check("flame page", "#top-table", []int{0, 2}, "CPU time", "ms")
	if got := eval[string](t, b, `[...document.querySelectorAll('#top-table tbody tr')].find(r => r.dataset.name === 'main.crunch').cells[0].textContent`); got != "2,500 ms" {
		t.Errorf("main.crunch's flat reads %q, want 2,500 ms", got)
	}
	run(t, b, "open /top", chromedp.Navigate(base+"/p/"+id+"/top?si=cpu"))
	waitForJS(t, b, "the table", `document.body.dataset.ready === '1'`)
	check("/top", "#top", []int{0, 3}, "CPU time", "ms")
	run(t, b, "open /top of samples", chromedp.Navigate(base+"/p/"+id+"/top?si=samples"))
	waitForJS(t, b, "the table", `document.body.dataset.ready === '1'`)
	check("/top of samples", "#top", []int{0, 3}, "samples", "")
	noProblems(t, b)
}
