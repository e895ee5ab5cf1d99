package views

import "strconv"

// FilterBar is the pprof-style filter form of a profile's pages: focus (f),
// ignore (i), hide (h) and show (s) regexps, kept in the URL, and the
// compare picker that opens a diff against another profile.
type FilterBar struct {
	Action     string // the page the form reloads (GET)
	SI         string // kept as a hidden field when set
	F, I, H, S string
	// CompareAction is the /p/ID/compare URL; empty hides the picker.
	CompareAction string
	// Keep are other query parameters the form must carry (name, value).
	Keep [][2]string
}

// Active reports whether any filter is set.
func (f FilterBar) Active() bool { return f.F != "" || f.I != "" || f.H != "" || f.S != "" }

// Count is how many of the four filters are set (the Filters button says it).
func (f FilterBar) Count() int {
	n := 0
	for _, v := range []string{f.F, f.I, f.H, f.S} {
		if v != "" {
			n++
		}
	}
	return n
}

// DiffPage is the differential flame graph at /p/A/diff/B.
type DiffPage struct {
	Page
	BaseID, ID     string
	BaseName, Name string
	BaseURL, URL   string // the two profiles' own pages
	SwapURL        string // the diff the other way round
	DataURL        string // diff.json
	SampleTypes    []SampleType
	SI             string
	Filter         FilterBar
	// Notes warn about a side without names (Label), linking its page.
	Notes []NavLink
}

// diffConfig is what static/diff.js reads from the "diff-config" element.
type diffConfig struct {
	DataURL  string `json:"dataURL"`
	BaseID   string `json:"baseID"`
	ID       string `json:"id"`
	BaseName string `json:"baseName"`
	Name     string `json:"name"`
}

func newDiffConfig(m DiffPage) diffConfig {
	return diffConfig{DataURL: m.DataURL, BaseID: m.BaseID, ID: m.ID, BaseName: m.BaseName, Name: m.Name}
}

// SandwichPage shows one function's callers above and callees below.
type SandwichPage struct {
	Page
	ID      string
	Fn      string
	DataURL string // sandwich.json; empty until a function is chosen
	// TopURL is top.json of the same view, every row: the function
	// picker's list, by self or total.
	TopURL      string
	FlameURL    string
	SourceURL   string
	SampleTypes []SampleType
	SI          string
	Filter      FilterBar
}

type sandwichConfig struct {
	DataURL string `json:"dataURL"`
	TopURL  string `json:"topURL"`
	Fn      string `json:"fn"`
}

// SourcePage is one function's source with per-line sample values.
type SourcePage struct {
	Page
	ID       string
	Fn       string
	File     string
	BuildID  string
	Origin   string // where the source came from, e.g. "debuginfod https://…"
	Problem  string // why the source is not shown; empty when it is
	Unit     string
	Total    string // the function's cum
	Lines    []SourceLine
	FlameURL string
	// SandwichURL and AnnotateURL are the function's callers and
	// callees, and its disassembly with per-instruction values.
	SandwichURL, AnnotateURL string
	// Others lists other files the function's samples fall in (inlined
	// code), as links.
	Others []NavLink
}

// SourceLine is one line of source with its values (empty when none).
type SourceLine struct {
	N         int
	Text      string
	Flat, Cum string
	CumFrac   float64 // 0..1 of the function's cum, for the bar
	Hot       bool
}

// hottestLine is the line with the largest cum (0 when no line has any).
func hottestLine(lines []SourceLine) int {
	best, n := 0.0, 0
	for _, l := range lines {
		if l.CumFrac > best {
			best, n = l.CumFrac, l.N
		}
	}
	return n
}

// fracPct is a 0..1 share as the tables print it ("12.34%"), "" for none.
func fracPct(f float64) string {
	if f <= 0 {
		return ""
	}
	return strconv.FormatFloat(f*100, 'f', 2, 64) + "%"
}

// Carried are the filters and kept parameters (the time range) a form
// that opens another view of the profile passes on, as name and value:
// the diff a flame page opens is of the same filtered stacks.
func (f FilterBar) Carried() [][2]string {
	var out [][2]string
	for _, kv := range [][2]string{{"f", f.F}, {"i", f.I}, {"h", f.H}, {"s", f.S}} {
		if kv[1] != "" {
			out = append(out, kv)
		}
	}
	return append(out, f.Keep...)
}
