package flame

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/testdata/bench/gen"
)

// zoomProfile: main;big holds nearly everything; main;small (100,000 of
// 1,100,000) has a child x of 40, under the root's threshold (55) but
// far over small's own (5), and y of 3, under both.
func zoomProfile(t testing.TB) *Stacks {
	return NewStacks(zoomSamples(t), 0, Options{})
}

func zoomSamples(t testing.TB) *profile.Profile {
	return stacksProfile(t,
		"main;big", 1_000_000,
		"main;small", 99_957,
		"main;small;x", 30,
		"main;small;x;leaf", 10,
		"main;small;y", 3,
	)
}

// TestZoomedTreeCompactsAtTheZoomedTotal: x is merged away in the whole
// tree and visible once zoomed into small, whose chain keeps the real
// totals; y is merged in both.
func TestZoomedTreeCompactsAtTheZoomedTotal(t *testing.T) {
	s := zoomProfile(t)
	root := s.Tree(nil, Options{MinFraction: DefaultMinFraction})
	if got := paths(root); got["main;small;x"] != "" || got["main;small;…"] != "43/43" {
		t.Fatalf("whole tree: want x and y merged into a 43 … under small: %v", got)
	}
	if root.MinTotal != 55 {
		t.Errorf("whole tree MinTotal %d, want 1,100,000/20000 = 55", root.MinTotal)
	}
	z := s.Tree([]string{"main", "small"}, Options{MinFraction: DefaultMinFraction})
	want := map[string]string{
		"main": "1100000/0", "main;small": "100000/99957",
		"main;small;x": "40/30", "main;small;x;leaf": "10/10", "main;small;…": "3/3",
	}
	if got := paths(z); !reflect.DeepEqual(got, want) {
		t.Errorf("zoomed into small:\n got %v\nwant %v", got, want)
	}
	if z.Total() != 1_100_000 || z.MinTotal != 5 || !slices.Equal(z.Zoom, []string{"main", "small"}) {
		t.Errorf("zoomed: total %d MinTotal %d zoom %q; want the root's total, 100000/20000 and the path", z.Total(), z.MinTotal, z.Zoom)
	}

	// Opening the … block the whole tree drew under small: x and y,
	// under a … frame as wide as the block.
	m := MergedElement(root.MinTotal)
	z = s.Tree([]string{"main", "small", m}, Options{MinFraction: DefaultMinFraction})
	want = map[string]string{
		"main": "1100000/0", "main;small": "100000/99957", "main;small;…": "43/0",
		"main;small;…;x": "40/30", "main;small;…;x;leaf": "10/10", "main;small;…;y": "3/3",
	}
	if got := paths(z); !reflect.DeepEqual(got, want) {
		t.Errorf("zoomed into small's … block:\n got %v\nwant %v", got, want)
	}
	// And on into x, a frame of the block.
	z = s.Tree([]string{"main", "small", m, "x"}, Options{MinFraction: DefaultMinFraction})
	if got := paths(z); got["main;small;…;x;leaf"] != "10/10" || len(got) != 5 {
		t.Errorf("zoomed into x in the block: %v", got)
	}

	// A path that no longer exists resolves as far as it goes.
	z = s.Tree([]string{"main", "small", "gone", "x"}, Options{MinFraction: DefaultMinFraction})
	if !slices.Equal(z.Zoom, []string{"main", "small"}) {
		t.Errorf("zoom path %q resolved to %q, want [main small]", "main small gone x", z.Zoom)
	}
	if z = s.Tree([]string{"main", MergedElement(2)}, Options{MinFraction: DefaultMinFraction}); !slices.Equal(z.Zoom, []string{"main"}) {
		t.Errorf("a … block with no child under 2 resolved to %q, want [main]", z.Zoom)
	}
}

// TestStacksTreeMatchesBuild: unzoomed, the tree from Stacks is Build's.
func TestStacksTreeMatchesBuild(t *testing.T) {
	p := gen.Generate(3000, 800, 400, 5, 7)
	f, _ := ParseFilter("", "", "compress", "")
	for _, f := range []Filter{{}, f} {
		want := Build(p, 1, Options{MinFraction: DefaultMinFraction, Filter: f})
		got := NewStacks(p, 1, Options{Filter: f}).Tree(nil, Options{MinFraction: DefaultMinFraction})
		if !reflect.DeepEqual(paths(got), paths(want)) || !slices.Equal(got.Names, want.Names) {
			t.Errorf("filter %q: the Stacks tree differs from Build's", f.Key())
		}
	}
}

// TestZoomedTreeIsTheFullSubtree: zoomed anywhere with no compaction, a
// tree has exactly the full tree's nodes below the zoomed frame.
func TestZoomedTreeIsTheFullSubtree(t *testing.T) {
	p := gen.Generate(3000, 800, 400, 5, 7)
	full := paths(Build(p, 1, Options{}))
	s := NewStacks(p, 1, Options{})
	n := 0
	for k := range full {
		path := strings.Split(k, ";")
		if len(path) != 4 || n > 20 {
			continue
		}
		n++
		got := paths(s.Tree(path, Options{}))
		for fk, fv := range full {
			if strings.HasPrefix(fk+";", k+";") && got[fk] != fv {
				t.Fatalf("zoomed at %q: %q = %q, full tree %q", k, fk, got[fk], fv)
			}
		}
	}
	if n == 0 {
		t.Fatal("no path of depth 4 in the generated profile")
	}
}

// refTop counts flat and cum directly from the samples whose frames (root
// first) start with path, from the path's last frame down.
func refTop(p []stackNames, path []string) (flat, cum map[string]int64, total int64) {
	flat, cum = map[string]int64{}, map[string]int64{}
	for _, s := range p {
		if len(s.names) < len(path) || !slices.Equal(s.names[:len(path)], path) {
			continue
		}
		total += s.v
		below := s.names[max(len(path)-1, 0):]
		seen := map[string]bool{}
		for _, n := range below {
			if !seen[n] {
				seen[n] = true
				cum[n] += s.v
			}
		}
		if len(below) > 0 {
			flat[below[len(below)-1]] += s.v
		}
	}
	return flat, cum, total
}

type stackNames struct {
	names []string
	v     int64
}

// TestStacksTop: unzoomed, Stacks.Top is Top (what /top showed); zoomed,
// it is a direct count over the samples below the zoomed frame.
func TestStacksTop(t *testing.T) {
	p := gen.Generate(2000, 500, 300, 5, 3)
	s := NewStacks(p, 1, Options{})
	rows, total := Top(p, 1)
	tt := s.Top(nil, Options{})
	if !reflect.DeepEqual(tt.Rows, rows) || tt.Total != total || tt.ZoomTotal != total {
		t.Fatalf("unzoomed Stacks.Top differs from Top: %d rows total %d, want %d rows %d", len(tt.Rows), tt.Total, len(rows), total)
	}
	var all []stackNames
	for _, smp := range p.Sample {
		var names []string
		for i := len(smp.Location) - 1; i >= 0; i-- {
			l := smp.Location[i]
			for j := len(l.Line) - 1; j >= 0; j-- {
				names = append(names, lineName(l, &l.Line[j]))
			}
		}
		all = append(all, stackNames{names, smp.Value[1]})
	}
	// Zoom into the three frames at depth 2 with the most samples.
	full := Build(p, 1, Options{})
	var deep [][]string
	var stack []string
	for _, n := range full.Nodes {
		stack = append(stack[:n.Depth], full.Names[n.Name])
		if n.Depth == 2 && n.Total > full.Total()/50 {
			deep = append(deep, slices.Clone(stack[1:]))
		}
	}
	if len(deep) == 0 {
		t.Fatal("no frame at depth 2 with 2% of the samples")
	}
	for _, path := range deep[:min(3, len(deep))] {
		flat, cum, ztotal := refTop(all, path)
		tt := s.Top(path, Options{})
		if tt.ZoomTotal != ztotal || tt.Total != total || len(tt.Rows) != len(cum) {
			t.Fatalf("zoom %q: zoom total %d total %d rows %d, want %d %d %d", path, tt.ZoomTotal, tt.Total, len(tt.Rows), ztotal, total, len(cum))
		}
		for _, r := range tt.Rows {
			if r.Flat != flat[r.Name] || r.Cum != cum[r.Name] {
				t.Fatalf("zoom %q: %s flat %d cum %d, want %d %d", path, r.Name, r.Flat, r.Cum, flat[r.Name], cum[r.Name])
			}
		}
	}
}

// TestStacksTopFilteredAndMerged: a filter applies before the zoom, and a
// … block's table counts its frames only.
func TestStacksTopFilteredAndMerged(t *testing.T) {
	s := zoomProfile(t)
	tt := s.Top([]string{"main", "small", MergedElement(55)}, Options{})
	got := map[string][2]int64{}
	for _, r := range tt.Rows {
		got[r.Name] = [2]int64{r.Flat, r.Cum}
	}
	if want := map[string][2]int64{"x": {30, 40}, "leaf": {10, 10}, "y": {3, 3}}; !reflect.DeepEqual(got, want) || tt.ZoomTotal != 43 {
		t.Errorf("top of small's … block: %v zoom total %d, want %v and 43", got, tt.ZoomTotal, want)
	}

	f, err := ParseFilter("", "", "^small$", "") // hide small: x hangs off main
	if err != nil {
		t.Fatal(err)
	}
	fs := NewStacks(zoomSamples(t), 0, Options{Filter: f})
	tt = fs.Top([]string{"main", "x"}, Options{})
	if len(tt.Rows) != 2 || tt.Rows[0].Name != "x" || tt.Rows[0].Cum != 40 || tt.ZoomTotal != 40 || tt.Total != 1_100_000 {
		t.Errorf("hidden small, zoomed into main;x: %+v zoom total %d total %d", tt.Rows, tt.ZoomTotal, tt.Total)
	}
}

func TestStacksMatched(t *testing.T) {
	s := zoomProfile(t)
	for re, want := range map[string]int64{"^x$": 40, "x|leaf": 40, "(?i)^(BIG|y)$": 1_000_003, "^main$": 1_100_000, "nothing": 0} {
		if got := s.Matched(regexp.MustCompile(re), Options{}); got != want {
			t.Errorf("Matched(%s) = %d, want %d", re, got, want)
		}
	}
}

// TestStacksBudget: a zoomed tree is fitted to the node and byte budget as
// Build's is, keeping its zoom chain, and the sorted stacks, zoomed trees,
// top tables and search shares stop with ErrBudget past their time limit.
func TestStacksBudget(t *testing.T) {
	p := gen.Generate(3000, 800, 400, 5, 7)
	s := NewStacks(p, 1, Options{})
	whole := s.Tree(nil, Options{})
	path := []string{whole.Names[whole.Nodes[1].Name]}
	full := s.Tree(path, Options{})
	if len(full.Nodes) < 400 {
		t.Fatalf("zoomed at %q: %d nodes, want a few hundred to compact", path, len(full.Nodes))
	}
	for _, b := range []Budget{{Nodes: len(full.Nodes) / 4}, {Bytes: encodedSize(full) / 2}} {
		var z *Tree
		if err := Guard(func() { z = s.Tree(path, Options{Budget: b}.WithContext(context.Background())) }); err != nil {
			t.Fatalf("budget %+v: %v", b, err)
		}
		if b.Nodes > 0 && len(z.Nodes) > b.Nodes {
			t.Errorf("budget %+v: %d nodes", b, len(z.Nodes))
		}
		if n := len(z.JSON()); b.Bytes > 0 && n > b.Bytes {
			t.Errorf("budget %+v: %d bytes of JSON", b, n)
		}
		if z.Compaction == nil || z.Compaction.Nodes != len(full.Nodes) {
			t.Errorf("budget %+v: compaction %+v, want one from %d nodes", b, z.Compaction, len(full.Nodes))
		}
		if !slices.Equal(z.Zoom, path) || z.Names[z.Nodes[1].Name] != path[0] || z.Nodes[1].Total != full.Nodes[1].Total {
			t.Errorf("budget %+v: zoom %q, node 1 %q total %d; want the chain of %q (total %d)", b, z.Zoom, z.Names[z.Nodes[1].Name], z.Nodes[1].Total, path, full.Nodes[1].Total)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), -1)
	defer cancel()
	for what, build := range map[string]func(Options){
		"NewStacks":   func(opt Options) { NewStacks(p, 1, opt) },
		"zoomed tree": func(opt Options) { s.Tree(path, opt) },
		"top":         func(opt Options) { s.Top(path, opt) },
		"search":      func(opt Options) { s.Matched(regexp.MustCompile("f"), opt) },
	} {
		if err := Guard(func() { build(Options{}.WithContext(ctx)) }); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "rendering time limit") {
			t.Errorf("%s past its deadline: %v, want ErrBudget naming the time limit", what, err)
		}
	}
}

// TestBudgetRows: a top table's rows are cut where their encoding passes
// the byte budget, and at most one per node of the node budget.
func TestBudgetRows(t *testing.T) {
	rows := sameRows(100, "function_name") // 13-byte names
	per := 48 + nameBytes("function_name")
	for _, c := range []struct {
		b       Budget
		n, want int
	}{
		{Budget{}, 50, 50},
		{Budget{}, 500, 100},
		{Budget{Nodes: 10}, 50, 10},
		{Budget{Bytes: 1536 + 20*per}, 50, 20},
		{Budget{Bytes: 1536 + 20*per - 1}, 50, 19},
		{Budget{Bytes: 100}, 50, 0},
	} {
		if got := c.b.Rows(rows, c.n, 48, 1); got != c.want {
			t.Errorf("%+v.Rows(100 rows, n=%d) = %d, want %d", c.b, c.n, got, c.want)
		}
	}
}

func sameRows(n int, name string) []TopRow {
	rows := make([]TopRow, n)
	for i := range rows {
		rows[i] = TopRow{Name: name, Flat: int64(n - i), Cum: int64(n - i)}
	}
	return rows
}
