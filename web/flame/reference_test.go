package flame

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/testdata/bench/gen"
)

// refTree aggregates samples the obvious way: a map from the full path of
// frame names (root first) to total and self.
func refTree(p *profile.Profile, si int) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, s := range p.Sample {
		v := s.Value[si]
		if v == 0 {
			continue
		}
		var path []string
		add := func(self bool) {
			k := strings.Join(path, ";")
			e := out[k]
			e[0] += v
			if self {
				e[1] += v
			}
			out[k] = e
		}
		path = append(path, RootName)
		add(false)
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i]
			var names []string
			if len(l.Line) == 0 {
				names = []string{addrName(l)}
			}
			for j := len(l.Line) - 1; j >= 0; j-- {
				names = append(names, lineName(l, &l.Line[j]))
			}
			for _, n := range names {
				path = append(path, n)
				add(false)
			}
		}
		k := strings.Join(path, ";")
		e := out[k]
		e[1] += v
		out[k] = e
	}
	return out
}

// treePaths converts a Tree back to path → {total, self}.
func treePaths(t *testing.T, tr *Tree) map[string][2]int64 {
	out := map[string][2]int64{}
	var stack []string
	for i, n := range tr.Nodes {
		if int(n.Depth) > len(stack) {
			t.Fatalf("node %d jumps from depth %d to %d", i, len(stack)-1, n.Depth)
		}
		stack = append(stack[:n.Depth], tr.Names[n.Name])
		k := strings.Join(stack, ";")
		if _, dup := out[k]; dup {
			t.Fatalf("path %q appears twice", k)
		}
		out[k] = [2]int64{n.Total, n.Self}
	}
	return out
}

// TestBuildMatchesReference checks the sorted-trie construction against
// the obvious map-based aggregation on a generated profile with shared
// prefixes, recursion-free random stacks and inlined frames.
func TestBuildMatchesReference(t *testing.T) {
	var buf bytes.Buffer
	if err := gen.Generate(3000, 800, 400, 5, 7).Write(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for si := range p.SampleType {
		want := refTree(p, si)
		got := treePaths(t, Build(p, si, Options{}))
		if len(got) != len(want) {
			t.Errorf("si %d: %d nodes, reference has %d", si, len(got), len(want))
		}
		for k, w := range want {
			if g, ok := got[k]; !ok || g != w {
				t.Errorf("si %d: %q = %v, reference %v", si, k, g, w)
				break
			}
		}
	}

	// Compaction keeps totals consistent: each node's children sum to at
	// most its total, merged nodes are leaves, and children are sorted.
	tr := Build(p, 1, Options{MinFraction: 0.001})
	full := Build(p, 1, Options{})
	if tr.Total() != full.Total() || len(tr.Nodes) >= len(full.Nodes) {
		t.Fatalf("compaction: total %d vs %d, nodes %d vs %d", tr.Total(), full.Total(), len(tr.Nodes), len(full.Nodes))
	}
	type open struct {
		i        int
		sum      int64
		lastName string
	}
	var stack []open
	closeTo := func(d int) {
		for len(stack) > d {
			o := stack[len(stack)-1]
			n := tr.Nodes[o.i]
			if o.sum+n.Self != n.Total {
				t.Fatalf("node %d (%s): children %d + self %d != total %d", o.i, tr.Names[n.Name], o.sum, n.Self, n.Total)
			}
			stack = stack[:len(stack)-1]
		}
	}
	thresh := int64(float64(tr.Total()) * 0.001)
	for i, n := range tr.Nodes {
		closeTo(int(n.Depth))
		name := tr.Names[n.Name]
		if len(stack) > 0 {
			parent := &stack[len(stack)-1]
			if tr.Names[tr.Nodes[parent.i].Name] == MergedName {
				t.Fatalf("merged node %d has children", parent.i)
			}
			if parent.lastName != "" && name <= parent.lastName {
				t.Fatalf("children of node %d not sorted: %q after %q", parent.i, name, parent.lastName)
			}
			parent.lastName = name
			parent.sum += n.Total
			if name != MergedName && n.Total < thresh {
				t.Fatalf("node %d (%s) total %d is under the threshold %d", i, name, n.Total, thresh)
			}
		}
		stack = append(stack, open{i: i})
	}
	closeTo(0)
}

// TestTopMatchesReference checks flat and cum against a direct count.
func TestTopMatchesReference(t *testing.T) {
	p := gen.Generate(2000, 500, 300, 5, 3)
	rows, total := Top(p, 1)
	flat, cum := map[string]int64{}, map[string]int64{}
	var sum int64
	for _, s := range p.Sample {
		v := s.Value[1]
		sum += v
		seen := map[string]bool{}
		for i, l := range s.Location {
			for j := range l.Line {
				n := lineName(l, &l.Line[j])
				if i == 0 && j == 0 {
					flat[n] += v
				}
				if !seen[n] {
					seen[n] = true
					cum[n] += v
				}
			}
		}
	}
	if total != sum || len(rows) != len(cum) {
		t.Fatalf("total %d (want %d), %d rows (want %d)", total, sum, len(rows), len(cum))
	}
	for _, r := range rows {
		if r.Flat != flat[r.Name] || r.Cum != cum[r.Name] {
			t.Fatalf("%s: flat %d cum %d, want %d %d", r.Name, r.Flat, r.Cum, flat[r.Name], cum[r.Name])
		}
	}
}
