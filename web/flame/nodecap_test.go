package flame

import (
	"testing"

	"viewer/symbolize/sampling"
	"viewer/testdata/bench/gen"
)

// TestMaxNodesCapsARangeTree checks Options.MaxNodes on the time ranges of
// a generated profile: the tree has at most MaxNodes nodes, at the finest
// doubling of the merge fraction that fits (half of it would not), with
// the same totals as the uncapped tree, and its counts of each level's
// nodes are those of the compacted trees.
func TestMaxNodesCapsARangeTree(t *testing.T) {
	p := gen.Generate(20000, 5000, 2000, 10, 3)
	gen.AddTimes(p, 4, int64(sampling.TimeBucket(uint64(p.DurationNanos))))
	base := NewStacks(p, 1, Options{})
	span := float64(p.DurationNanos) / 1e9
	for _, c := range []struct {
		from, to float64
		maxNodes int
	}{
		{0, span / 12, 2000},
		{0, span / 12, 5000},
		{span / 3, span / 2, 3000},
		{0, span, 4000},
		{0, span, 1}, // not reachable: the coarsest level
	} {
		st := base.InTime(TimeRange{From: int64(c.from * 1e9), To: int64(c.to * 1e9)})
		full := st.Tree(nil, Options{MinFraction: DefaultMinFraction})
		capped := st.Tree(nil, Options{MinFraction: DefaultMinFraction, MaxNodes: c.maxNodes})
		if capped.Total() != full.Total() || capped.Nodes[0].Self != full.Nodes[0].Self {
			t.Errorf("%v-%v: total %d self %d, uncapped %d %d", c.from, c.to, capped.Total(), capped.Nodes[0].Self, full.Total(), full.Nodes[0].Self)
		}
		frac := float64(capped.MinTotal) / float64(capped.Total())
		if len(full.Nodes) <= c.maxNodes {
			if capped.MinTotal != full.MinTotal {
				t.Errorf("%v-%v: %d nodes fit %d, but the threshold rose from %d to %d", c.from, c.to, len(full.Nodes), c.maxNodes, full.MinTotal, capped.MinTotal)
			}
			continue
		}
		t.Logf("%v-%v: %d nodes capped to %d at 1/%.0f (MaxNodes %d)", c.from, c.to, len(full.Nodes), len(capped.Nodes), 1/frac, c.maxNodes)
		if c.maxNodes == 1 {
			if frac < maxWidthFraction/2 {
				t.Errorf("MaxNodes 1: fraction 1/%.0f, want the coarsest level", 1/frac)
			}
			continue
		}
		if len(capped.Nodes) > c.maxNodes {
			t.Errorf("%v-%v: %d nodes, MaxNodes %d", c.from, c.to, len(capped.Nodes), c.maxNodes)
		}
		finer := st.Tree(nil, Options{MinFraction: frac / 2})
		if len(finer.Nodes) <= c.maxNodes {
			t.Errorf("%v-%v: half the fraction (1/%.0f) has %d nodes, also within %d", c.from, c.to, 2/frac, len(finer.Nodes), c.maxNodes)
		}
	}
}

// TestFractionForCountsTheCompactedTree checks fractionFor's count of each
// level against compacting the tree there.
func TestFractionForCountsTheCompactedTree(t *testing.T) {
	p := gen.Generate(5000, 2000, 800, 5, 7)
	st := NewStacks(p, 1, Options{})
	fr := st.withWork(nil)
	ft := buildSortedTrie(st.below(st.resolve(nil, nil), 0, nil), false, nil)
	for k := 0; k < maxNodesLevels; k++ {
		frac := DefaultMinFraction * float64(int(1)<<k)
		n := len(compact(ft, fr, frac).Nodes)
		// The cap n is met at this level; one node fewer is not (unless a
		// coarser level has as many nodes).
		if got := ft.fractionFor(DefaultMinFraction, n); got > frac {
			t.Errorf("level %d (%d nodes): fractionFor(%d) = 1/%.0f, want at most 1/%.0f", k, n, n, 1/got, 1/frac)
		}
		if k > 0 {
			prev := len(compact(ft, fr, frac/2).Nodes)
			if prev > n {
				if got := ft.fractionFor(DefaultMinFraction, prev-1); got < frac {
					t.Errorf("level %d: fractionFor(%d) = 1/%.0f, but level %d has %d nodes", k, prev-1, 1/got, k-1, prev)
				}
			}
		}
	}
}
