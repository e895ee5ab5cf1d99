package browsertest_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"viewer/symbolize/sampling"
	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// TestBrowserFormatterMatchesGo runs static/flame.js's formatValue and
// formatPct, as the server serves them, in chromium on every row of
// symbolize/sampling/testdata/units.json and checks each string is the one Go's
// sampling.FormatValue and sampling.Percent print for the same row (the flame
// page's tooltip and the server-rendered /top must read alike); and its
// columnUnit and formatIn write each of the table's columns as
// sampling.ColumnOf's Format does.
func TestBrowserFormatterMatchesGo(t *testing.T) {
	raw, err := os.ReadFile("../../symbolize/sampling/testdata/units.json")
	if err != nil {
		t.Fatal(err)
	}
	var tab struct {
		Values []struct {
			V    int64  `json:"v"`
			Unit string `json:"unit"`
			Want string `json:"want"`
		} `json:"values"`
		Percents []struct {
			Part  int64  `json:"part"`
			Whole int64  `json:"whole"`
			Want  string `json:"want"`
		} `json:"percents"`
	}
	if err := json.Unmarshal(raw, &tab); err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServer(t)
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the start page", chromedp.Navigate(base+"/"))
	js := eval[string](t, b, `import('/static/flame.js').then(m => JSON.stringify({
		values: `+string(raw)+`.values.map(r => m.formatValue(r.v, r.unit)),
		percents: `+string(raw)+`.percents.map(r => m.formatPct(r.part / r.whole)),
		columns: `+string(raw)+`.columns.map(c => { const col = m.columnUnit(c.unit, c.values); return c.values.map(v => m.formatIn(col, v)); }),
	}))`)
	var got struct {
		Values, Percents []string
		Columns          [][]string
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	if len(got.Values) != len(tab.Values) || len(got.Percents) != len(tab.Percents) {
		t.Fatalf("chromium formatted %d values and %d percentages of %d and %d", len(got.Values), len(got.Percents), len(tab.Values), len(tab.Percents))
	}
	for i, r := range tab.Values {
		if g := sampling.FormatValue(r.V, r.Unit); got.Values[i] != g {
			t.Errorf("formatValue(%d, %q) = %q in chromium, Go prints %q", r.V, r.Unit, got.Values[i], g)
		}
	}
	for i, r := range tab.Percents {
		if g := sampling.Percent(r.Part, r.Whole); got.Percents[i] != g {
			t.Errorf("formatPct(%d/%d) = %q in chromium, Go prints %q", r.Part, r.Whole, got.Percents[i], g)
		}
	}
	var cols struct {
		Columns []struct {
			Values []int64 `json:"values"`
			Unit   string  `json:"unit"`
		} `json:"columns"`
	}
	if err := json.Unmarshal(raw, &cols); err != nil {
		t.Fatal(err)
	}
	if len(got.Columns) != len(cols.Columns) || len(cols.Columns) == 0 {
		t.Fatalf("chromium wrote %d columns of %d", len(got.Columns), len(cols.Columns))
	}
	for i, c := range cols.Columns {
		col := sampling.ColumnOf(c.Unit, c.Values...)
		for j, v := range c.Values {
			if g := col.Format(v); got.Columns[i][j] != g {
				t.Errorf("formatIn(columnUnit(%q, %d), %d) = %q in chromium, Go writes %q", c.Unit, c.Values, v, got.Columns[i][j], g)
			}
		}
	}
	for _, p := range b.Problems() {
		t.Errorf("page problem: %s", p)
	}
}
