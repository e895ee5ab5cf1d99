package flame

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// stacksProfile builds a profile from "main;a;b" stacks (root first) and
// their values; every function lives in /bin/app at its own line of app.c.
func stacksProfile(t testing.TB, stacks ...any) *profile.Profile {
	t.Helper()
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", HasFunctions: true}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}, Mapping: []*profile.Mapping{m}}
	locs := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		id := uint64(len(locs) + 1)
		f := &profile.Function{ID: id, Name: name, Filename: "app.c"}
		l := &profile.Location{ID: id, Mapping: m, Address: 0x400000 + id*16, Line: []profile.Line{{Function: f, Line: int64(id)}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		locs[name] = l
		return l
	}
	for i := 0; i < len(stacks); i += 2 {
		names := strings.Split(stacks[i].(string), ";")
		s := &profile.Sample{Value: []int64{int64(stacks[i+1].(int))}}
		for j := len(names) - 1; j >= 0; j-- {
			s.Location = append(s.Location, loc(names[j]))
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

// paths maps "main;a;b" paths (root excluded) of t to "total/self".
func paths(t *Tree) map[string]string {
	out := map[string]string{}
	var stack []string
	for i, n := range t.Nodes {
		stack = append(stack[:n.Depth], t.Names[n.Name])
		if i == 0 {
			continue
		}
		out[strings.Join(stack[1:], ";")] = itoa(n.Total) + "/" + itoa(n.Self)
	}
	return out
}

func itoa(v int64) string { return formatInt(v) }

func formatInt(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func filterProfile(t *testing.T) *profile.Profile {
	return stacksProfile(t,
		"main;a;b", 10,
		"main;a;c", 20,
		"main;d", 30,
		"main;d;b", 5,
	)
}

func TestFilters(t *testing.T) {
	for _, tc := range []struct {
		name       string
		f, i, h, s string
		want       map[string]string
		wantTotal  int64
		wantTop    map[string][2]int64 // flat, cum
	}{
		{name: "focus keeps stacks through b", f: "^b$", wantTotal: 15,
			want:    map[string]string{"main": "15/0", "main;a": "10/0", "main;a;b": "10/10", "main;d": "5/0", "main;d;b": "5/5"},
			wantTop: map[string][2]int64{"b": {15, 15}, "main": {0, 15}, "a": {0, 10}, "d": {0, 5}}},
		{name: "ignore drops stacks through d", i: "^d$", wantTotal: 30,
			want: map[string]string{"main": "30/0", "main;a": "30/0", "main;a;b": "10/10", "main;a;c": "20/20"}},
		{name: "hide removes a", h: "^a$", wantTotal: 65,
			want: map[string]string{"main": "65/0", "main;b": "10/10", "main;c": "20/20", "main;d": "35/30", "main;d;b": "5/5"}},
		{name: "show keeps main and b", s: "^(main|b)$", wantTotal: 65,
			want:    map[string]string{"main": "65/50", "main;b": "15/15"},
			wantTop: map[string][2]int64{"main": {50, 65}, "b": {15, 15}}},
		{name: "focus and hide", f: "c", h: "^main$", wantTotal: 20,
			want: map[string]string{"a": "20/0", "a;c": "20/20"}},
		{name: "mapping path matches", i: "^/bin/app$", wantTotal: 0, want: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFilter(tc.f, tc.i, tc.h, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			tr := Build(filterProfile(t), 0, Options{Filter: f})
			if got := paths(tr); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tree = %v, want %v", got, tc.want)
			}
			if tr.Total() != tc.wantTotal {
				t.Errorf("total = %d, want %d", tr.Total(), tc.wantTotal)
			}
			rows, total := TopFiltered(filterProfile(t), 0, f)
			if total != tc.wantTotal {
				t.Errorf("top total = %d, want %d", total, tc.wantTotal)
			}
			for _, r := range rows {
				if w, ok := tc.wantTop[r.Name]; ok && (w[0] != r.Flat || w[1] != r.Cum) {
					t.Errorf("top %s = flat %d cum %d, want %v", r.Name, r.Flat, r.Cum, w)
				}
			}
		})
	}
}

func TestFilterBadRegexpNamesParameter(t *testing.T) {
	_, err := ParseFilter("", "", "(", "")
	if err == nil || !strings.Contains(err.Error(), `h="("`) {
		t.Fatalf("err = %v, want one naming h=\"(\"", err)
	}
}

func TestFilterOffMatchesBuild(t *testing.T) {
	p := filterProfile(t)
	f, _ := ParseFilter("", "", "", "")
	if f.Active() {
		t.Fatal("empty filter is active")
	}
	a := string(Build(p, 0, Options{}).JSON())
	// A filter that keeps everything takes the other path; same tree.
	keep, _ := ParseFilter(".", "", "", "")
	if b := string(Build(p, 0, Options{Filter: keep}).JSON()); a != b {
		t.Errorf("focus . changed the tree:\n%s\n%s", a, b)
	}
}

// Base: main→a 60, main→b 40, main→e 10 (total 110).
// New:  main→a 30, main→b 150, main→c 20 (total 200).
func diffProfiles(t *testing.T) (base, cur *profile.Profile) {
	base = stacksProfile(t, "main;a", 60, "main;b", 40, "main;e", 10)
	cur = stacksProfile(t, "main;c", 20, "main;b", 150, "main;a", 30)
	return base, cur
}

func TestDiff(t *testing.T) {
	base, cur := diffProfiles(t)
	d := Diff(base, 0, cur, 0, Options{})
	got := map[string]string{}
	var stack []string
	for i, n := range d.Nodes {
		stack = append(stack[:n.Depth], d.Names[n.Name])
		got[strings.Join(stack, ";")] = formatInt(n.Total) + " base " + formatInt(d.Base[i])
	}
	want := map[string]string{
		"root": "200 base 110", "root;main": "200 base 110",
		"root;main;a": "30 base 60", "root;main;b": "150 base 40",
		"root;main;c": "20 base 0", "root;main;e": "0 base 10",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("diff tree = %v\nwant %v", got, want)
	}
	if d.BaseTotal != 110 || d.Total() != 200 {
		t.Errorf("totals = %d base %d, want 200 base 110", d.Total(), d.BaseTotal)
	}
	// Largest change of share first: b 0.75-0.364=+0.386, a 0.15-0.545=-0.395,
	// c +0.1, e -0.091, main 0.
	var order []string
	for _, r := range d.Top {
		order = append(order, r.Name)
	}
	if w := []string{"a", "b", "c", "e", "main"}; !reflect.DeepEqual(order, w) {
		t.Errorf("top order = %v, want %v", order, w)
	}
	if r := d.Top[1]; r.Flat != 150 || r.Cum != 150 || r.BaseFlat != 40 || r.BaseCum != 40 {
		t.Errorf("b row = %+v", r)
	}

	var j struct {
		Nodes     []int64             `json:"nodes"`
		Base      []int64             `json:"base"`
		BaseTotal int64               `json:"baseTotal"`
		Top       [][]json.RawMessage `json:"top"`
	}
	if err := json.Unmarshal(d.DiffJSON(2), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Base)*4 != len(j.Nodes) || j.BaseTotal != 110 || len(j.Top) != 2 || string(j.Top[0][0]) != `"a"` {
		t.Errorf("diff.json: %d base values for %d nodes, baseTotal %d, top %d rows", len(j.Base), len(j.Nodes)/4, j.BaseTotal, len(j.Top))
	}
}

func TestDiffMergesBaseOfSmallFrames(t *testing.T) {
	base, cur := diffProfiles(t)
	// c (20 of 200) and a (30) fall under 1/5; e has no width at all.
	d := Diff(base, 0, cur, 0, Options{MinFraction: 0.2})
	got := map[string]string{}
	for i, n := range d.Nodes {
		got[d.Names[n.Name]] = formatInt(n.Total) + " base " + formatInt(d.Base[i])
	}
	if got[MergedName] != "50 base 70" || got["b"] != "150 base 40" {
		t.Errorf("compacted diff = %v, want … 50 base 70 (a+c, a+e) and b 150 base 40", got)
	}
}

func TestDiffMatchesUnsymbolizedAgainstSymbolizedByName(t *testing.T) {
	base, cur := diffProfiles(t)
	// The base has no names for a: its frame is app+0x..., so a in the new
	// profile has no base and the base's address frame has no width.
	for _, l := range base.Location {
		if l.Line[0].Function.Name == "a" {
			l.Line = nil
		}
	}
	d := Diff(base, 0, cur, 0, Options{})
	for i, n := range d.Nodes {
		if d.Names[n.Name] == "a" && d.Base[i] != 0 {
			t.Errorf("a matched the unsymbolized base frame")
		}
	}
}

func TestSandwich(t *testing.T) {
	p := stacksProfile(t,
		"main;a;f;g", 10,
		"main;b;f", 20,
		"main;f;f;h", 5,
		"main;c", 7,
	)
	s := BuildSandwich(p, 0, "f", Options{})
	if s.Flat != 20 || s.Cum != 35 || s.Total != 42 {
		t.Errorf("flat %d cum %d total %d, want 20 35 42", s.Flat, s.Cum, s.Total)
	}
	tree := func(t *Tree) map[string]string {
		out := map[string]string{}
		var stack []string
		for _, n := range t.Nodes {
			stack = append(stack[:n.Depth], t.Names[n.Name])
			out[strings.Join(stack, ";")] = formatInt(n.Total) + "/" + formatInt(n.Self)
		}
		return out
	}
	wantCallees := map[string]string{"f": "35/20", "f;g": "10/10", "f;f": "5/0", "f;f;h": "5/5"}
	if got := tree(s.Callees); !reflect.DeepEqual(got, wantCallees) {
		t.Errorf("callees = %v, want %v", got, wantCallees)
	}
	wantCallers := map[string]string{"f": "35/0", "f;a": "10/0", "f;a;main": "10/10", "f;b": "20/0", "f;b;main": "20/20", "f;f": "5/0", "f;f;main": "5/5"}
	if got := tree(s.Callers); !reflect.DeepEqual(got, wantCallers) {
		t.Errorf("callers = %v, want %v", got, wantCallers)
	}
	var j map[string]json.RawMessage
	if err := json.Unmarshal(s.JSON(), &j); err != nil {
		t.Fatalf("sandwich.json: %v", err)
	}
	if string(j["cum"]) != "35" || len(j["callers"]) == 0 {
		t.Errorf("sandwich.json = %s", s.JSON())
	}
}

func TestSandwichUnknownFunction(t *testing.T) {
	s := BuildSandwich(filterProfile(t), 0, "nope", Options{})
	if s.Cum != 0 || s.Total != 65 || len(s.Callers.Nodes) != 1 {
		t.Errorf("unknown function: cum %d total %d, %d caller nodes", s.Cum, s.Total, len(s.Callers.Nodes))
	}
}

// TestSandwichExactWhereFlameMerges: a function spread thinly under many
// callers disappears into "…" nodes in the compacted flame graph, but its
// sandwich, built from every sample, counts all of it.
func TestSandwichExactWhereFlameMerges(t *testing.T) {
	stacks := []any{"main;big", 100000}
	for i := range 30 {
		stacks = append(stacks, "main;caller"+string(rune('A'+i%26))+formatInt(int64(i))+";tiny", 1)
	}
	p := stacksProfile(t, stacks...)
	tr := Build(p, 0, Options{MinFraction: DefaultMinFraction})
	for _, n := range tr.Nodes {
		if tr.Names[n.Name] == "tiny" {
			t.Fatalf("tiny is drawn in the compacted tree; the test needs it merged")
		}
	}
	s := BuildSandwich(p, 0, "tiny", Options{MinFraction: DefaultMinFraction})
	if s.Cum != 30 || s.Flat != 30 || s.Callers.Total() != 30 {
		t.Errorf("tiny: flat %d cum %d callers total %d, want 30 each", s.Flat, s.Cum, s.Callers.Total())
	}
	if got := len(s.Callers.Nodes); got != 1+30+30 {
		t.Errorf("callers tree has %d nodes, want tiny, its 30 callers and main above each", got)
	}
}
