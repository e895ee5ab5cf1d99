package sampling

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// UnitsTable is testdata/units.json: values and percentages with the text a
// user should read for them.
type UnitsTable struct {
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
	Columns []struct {
		Values []int64  `json:"values"`
		Unit   string   `json:"unit"`
		Want   []string `json:"want"`
	} `json:"columns"`
}

func TestFormatValue(t *testing.T) {
	b, err := os.ReadFile("testdata/units.json")
	if err != nil {
		t.Fatal(err)
	}
	var tab UnitsTable
	if err := json.Unmarshal(b, &tab); err != nil {
		t.Fatal(err)
	}
	if len(tab.Values) == 0 || len(tab.Percents) == 0 {
		t.Fatal("testdata/units.json has no rows")
	}
	for _, r := range tab.Values {
		if got := FormatValue(r.V, r.Unit); got != r.Want {
			t.Errorf("FormatValue(%d, %q) = %q, want %q", r.V, r.Unit, got, r.Want)
		}
	}
	for _, r := range tab.Percents {
		if got := Percent(r.Part, r.Whole); got != r.Want {
			t.Errorf("Percent(%d, %d) = %q, want %q", r.Part, r.Whole, got, r.Want)
		}
	}
}

// TestFormatValueNeverCarriesOver walks the values around each unit
// boundary: the number shown never reaches the next unit's size in this one
// ("1000 µs", "1024 KiB", "120 s", the old "99 min 60 s").
func TestFormatValueNeverCarriesOver(t *testing.T) {
	limit := map[string]float64{"ns": 1000, "µs": 1000, "ms": 1000, "s": 120, "B": 1024, "KiB": 1024, "MiB": 1024, "GiB": 1024}
	scaled := regexp.MustCompile(`^([0-9,]+(?:\.[0-9]+)?) (ns|µs|ms|s|B|KiB|MiB|GiB|TiB)$`)
	minutes := regexp.MustCompile(`^([0-9]+) min ([0-9]+) s$`)
	check := func(v int64, unit string) {
		s := FormatValue(v, unit)
		if m := minutes.FindStringSubmatch(s); m != nil {
			min, _ := strconv.Atoi(m[1])
			sec, _ := strconv.Atoi(m[2])
			if min < 2 || min >= 120 || sec >= 60 {
				t.Errorf("FormatValue(%d, %q) = %q", v, unit, s)
			}
			return
		}
		m := scaled.FindStringSubmatch(s)
		if m == nil {
			if !strings.HasSuffix(s, " h") {
				t.Errorf("FormatValue(%d, %q) = %q: not a number and a unit", v, unit, s)
			}
			return
		}
		n, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
		if l, ok := limit[m[2]]; ok && n >= l {
			t.Errorf("FormatValue(%d, %q) = %q: %g %s is the next unit", v, unit, s, n, m[2])
		}
	}
	for _, edge := range []int64{1e3, 1e6, 1e9, 120e9, 3600e9, 7200e9} {
		for d := int64(-2e7); d <= 2e7; d += 997 {
			if v := edge + d; v >= 0 {
				check(v, "nanoseconds")
			}
		}
	}
	for _, edge := range []int64{1 << 10, 1 << 20, 1 << 30, 1 << 40} {
		for d := int64(-1 << 14); d <= 1<<14; d += 7 {
			if v := edge + d; v >= 0 {
				check(v, "bytes")
			}
		}
	}
	for v := int64(5990e9); v <= 6001e9; v += 1e8 { // 99 min 50 s .. 100 min 1 s
		check(v, "nanoseconds")
	}
}

// BenchmarkFormatValue is the cost of one duration as the SVG and /top
// format each row.
func BenchmarkFormatValue(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		_ = FormatValue(int64(i)*7919, "nanoseconds")
	}
}

// TestColumn: a column of values is written in one unit, the largest its
// biggest value reaches that keeps its smallest at 1/1000 or more, as
// testdata/units.json's columns say.
func TestColumn(t *testing.T) {
	b, err := os.ReadFile("testdata/units.json")
	if err != nil {
		t.Fatal(err)
	}
	var tab UnitsTable
	if err := json.Unmarshal(b, &tab); err != nil {
		t.Fatal(err)
	}
	if len(tab.Columns) == 0 {
		t.Fatal("testdata/units.json has no columns")
	}
	for _, c := range tab.Columns {
		col := ColumnOf(c.Unit, c.Values...)
		for i, v := range c.Values {
			if got := col.Format(v); got != c.Want[i] {
				t.Errorf("column %d %s: %d reads %q, want %q", c.Values, c.Unit, v, got, c.Want[i])
			}
		}
	}
}
