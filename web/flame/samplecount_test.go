package flame

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/testdata/bench/gen"
)

// countsByPath is, per call path ("a;b;c"), the total and self value of
// sample type si in p's uncompacted tree after f: what a node's sample
// counts must be when si counts the samples.
func countsByPath(p *profile.Profile, si int, f Filter) map[string][2]int64 {
	t := Build(p, si, Options{Filter: f})
	out := map[string][2]int64{}
	var path []string
	for _, n := range t.Nodes {
		path = append(path[:n.Depth], t.Names[n.Name])
		out[strings.Join(path[1:], ";")] = [2]int64{n.Total, n.Self}
	}
	return out
}

// checkCounts compares tree's sample counts with want (countsByPath): a
// frame's, zoom chain included, are its call path's; a merged "…" node's
// total is what its parent's children left, and its self is its total.
func checkCounts(t *testing.T, what string, tree *Tree, want map[string][2]int64) {
	t.Helper()
	if len(tree.Samples) != 2*len(tree.Nodes) {
		t.Fatalf("%s: %d sample counts for %d nodes", what, len(tree.Samples), len(tree.Nodes))
	}
	var path []string
	var open []int
	kids := make([]int64, len(tree.Nodes)) // per node: its children's total counts
	merged := 0
	for i, n := range tree.Nodes {
		name := tree.Names[n.Name]
		path = append(path[:n.Depth], name)
		open = append(open[:n.Depth], i)
		total, self := tree.Samples[2*i], tree.Samples[2*i+1]
		if n.Depth > 0 {
			kids[open[n.Depth-1]] += total
		}
		if name == MergedName && i > len(tree.Zoom) {
			merged++
			if self != total {
				t.Errorf("%s: merged node %d under %q: self %d, total %d", what, i, path[:n.Depth], self, total)
			}
			continue
		}
		key := strings.Join(path[1:], ";")
		w, ok := want[key]
		if !ok {
			if strings.Contains(key, MergedName) {
				continue // below a merged block of a zoom path
			}
			t.Fatalf("%s: node %q is not in the profile", what, key)
		}
		if total != w[0] || self != w[1] {
			t.Errorf("%s: %q has %d samples (%d self), want %d (%d)", what, key, total, self, w[0], w[1])
		}
	}
	// A merged node's count is what its parent's other children left.
	for i, n := range tree.Nodes {
		if i <= len(tree.Zoom) || tree.Names[n.Name] == MergedName {
			continue
		}
		if end := tree.Samples[2*i] - tree.Samples[2*i+1]; kids[i] != end {
			t.Errorf("%s: node %d: children have %d samples, total less self is %d", what, i, kids[i], end)
		}
	}
	if merged == 0 {
		t.Errorf("%s: no merged node: pick a coarser fraction", what)
	}
}

// TestTreeSampleCounts checks the sample counts of a Stacks' trees (the
// tooltip's samples): of a CPU profile's samples/count type for its
// cpu/nanoseconds tree, whole, zoomed, in a time range and capped by
// MaxNodes; and of sample records for a profile without a counting type,
// where records of one stack add up.
func TestTreeSampleCounts(t *testing.T) {
	p := gen.Generate(4000, 900, 300, 4, 5) // samples/count, cpu/nanoseconds
	gen.AddTimes(p, 3, int64(sampling.TimeBucket(uint64(p.DurationNanos))))
	for k, s := range p.Sample {
		s.Value[0] = 1 + int64(k%3) // records of several samples, as pprof's CPU profiles have
	}
	opt := Options{MinFraction: 1.0 / 500}
	st := NewStacks(p, 1, Options{CountType: 1})
	if st.CountType != "samples" {
		t.Fatalf("CountType %q, want samples", st.CountType)
	}
	counts := countsByPath(p, 0, Filter{})
	whole := st.Tree(nil, opt)
	checkCounts(t, "whole tree", whole, counts)
	if whole.Samples[0] != st.samples(run{0, len(st.ws)}) || whole.Samples[0] <= int64(len(p.Sample)) {
		t.Errorf("root: %d samples, the profile's %d records sum to %d", whole.Samples[0], len(p.Sample), st.samples(run{0, len(st.ws)}))
	}
	// Zoomed two frames deep, then into a merged block.
	path := []string{whole.Names[whole.Nodes[1].Name], whole.Names[whole.Nodes[2].Name]}
	checkCounts(t, "zoomed", st.Tree(path, Options{MinFraction: 1.0 / 50}), counts)
	z := st.Tree(path[:1], Options{MinFraction: 1.0 / 50})
	block := false
	for i, n := range z.Nodes {
		if i > 1 && z.Names[n.Name] == MergedName && n.Depth == 2 {
			block = true
			mz := st.Tree(append(path[:1:1], MergedElement(z.MinTotal)), opt)
			if mz.Samples[4] != z.Samples[2*i] {
				t.Errorf("zoomed into the merged block: its chain node has %d samples, the block %d", mz.Samples[4], z.Samples[2*i])
			}
			break
		}
	}
	if !block {
		t.Errorf("no merged block under %q to zoom into", path[0])
	}
	// A time range, capped.
	span := p.DurationNanos
	r := TimeRange{From: span / 4, To: span / 2}
	in := st.InTime(r)
	capped := in.Tree(nil, Options{MinFraction: DefaultMinFraction, MaxNodes: 400})
	checkCounts(t, "time range", capped, countsByPath(p, 0, Filter{Time: &r}))
	if j := string(capped.JSON()); !strings.Contains(j, `"countType":"samples","counts":"`) {
		t.Errorf("flame.json lacks the counts: %.300s", j)
	}

	// No counting type: the records, as if each had the value 1.
	heap := gen.Generate(3000, 700, 300, 4, 9)
	heap.SampleType = []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}
	ones := heap.Copy()
	for i, s := range heap.Sample {
		s.Value = s.Value[1:]
		ones.Sample[i].Value = []int64{1}
	}
	heap.Sample = append(heap.Sample, &profile.Sample{Location: heap.Sample[0].Location, Value: []int64{7}}) // one stack, two records
	ones.Sample = append(ones.Sample, &profile.Sample{Location: ones.Sample[0].Location, Value: []int64{1}})
	hs := NewStacks(heap, 0, Options{})
	ht := hs.Tree(nil, opt)
	checkCounts(t, "records", ht, countsByPath(ones, 0, Filter{}))
	if ht.Samples[0] != int64(len(heap.Sample)) {
		t.Errorf("root: %d records, want %d", ht.Samples[0], len(heap.Sample))
	}
	if j := string(ht.JSON()); !strings.Contains(j, `"countType":"","counts":"`) {
		t.Errorf("flame.json of records: %.300s", j)
	}
	// Values proportional to the counts (Go's cpu: samples × the period):
	// the ratio stands for the counts.
	prop := p.Copy()
	for _, s := range prop.Sample {
		s.Value[1] = s.Value[0] * 10_000_000
	}
	pj := string(NewStacks(prop, 1, Options{CountType: 1}).Tree(nil, opt).JSON())
	if !strings.Contains(pj, `"countType":"samples","valuePerSample":10000000,`) || strings.Contains(pj, `"counts"`) {
		t.Errorf("cpu = samples × 10 ms: %.400s", pj)
	}
	// A sample type that counts is its own count: no counts in the JSON.
	if j := string(NewStacks(p, 0, Options{CountType: 1}).Tree(nil, opt).JSON()); strings.Contains(j, `"counts"`) {
		t.Errorf("samples/count tree with counts: %.300s", j)
	}
}
