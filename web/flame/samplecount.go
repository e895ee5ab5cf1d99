package flame

import "github.com/google/pprof/profile"

// A Stacks' trees carry, per node, how many samples are behind it
// (Tree.Samples), beside its value: the tooltip's "samples", which a
// value in nanoseconds or bytes does not give. The count is the values of
// the sample type that counts samples (Options.CountType: samples/count of
// a Go CPU profile, perf's <event>_count), or, in a profile without one,
// the number of sample records (the "stacks" the page's header counts,
// the traces of pprof -traces). Each Stacks' stack keeps its count in
// weighted.base, which only a differential tree uses otherwise, so the
// trie sums counts as it sums a base profile's values.

// sampleCount is the count of sample s for Options.CountType ct: the
// value of sample type ct-1, or 1 (one record) when ct is 0.
func sampleCount(s *profile.Sample, ct int) int64 {
	if ct <= 0 {
		return 1
	}
	if ct-1 < len(s.Value) {
		return s.Value[ct-1]
	}
	return 0
}

// countType names what Options.CountType counts in p: the sample type,
// or "" for sample records.
func countType(p *profile.Profile, ct int) string {
	if ct > 0 && ct-1 < len(p.SampleType) {
		return p.SampleType[ct-1].Type
	}
	return ""
}

// countSamples sets each stack's sample count (weighted.base) in s.ws: of[k]
// is sample k's stack in the grouped stacks (-1 skipped), pos[g] that
// stack's index in s.ws (-1 filtered out).
func (s *Stacks) countSamples(p *profile.Profile, ct int, of, pos []int32) {
	for k, smp := range p.Sample {
		if g := of[k]; g >= 0 && pos[g] >= 0 {
			s.ws[pos[g]].base += sampleCount(smp, ct)
		}
	}
}

// samples is the count of the samples of runs r (see Stacks.value).
func (s *Stacks) samples(r run) int64 { return s.nsum[r.hi] - s.nsum[r.lo] }

// setSamples fills t.Samples, two per node (total and self sample
// count), from t.Base, which the trie filled with the nodes' total counts
// (the stacks' weighted.base), and the zoom chain's counts; t.Base is
// then cleared, as t is no differential tree. A node's self count is its
// total less its children's: every child is there, kept or merged into a
// "…" node, except below the chain, whose nodes have only the next one.
func (t *Tree) setSamples(chain []chainNode) {
	n := len(t.Nodes)
	if len(t.Base) != n {
		t.Base = nil
		return
	}
	out := make([]int64, 2*n)
	var open []int32 // open ancestors, by depth
	for i, nd := range t.Nodes {
		out[2*i] = t.Base[i]
		out[2*i+1] = t.Base[i]
		d := int(nd.Depth)
		open = append(open[:d], int32(i))
		if d > 0 {
			out[2*open[d-1]+1] -= t.Base[i]
		}
	}
	for d, c := range chain[:max(len(chain)-1, 0)] {
		out[2*d+1] = c.nself
	}
	t.Samples, t.Base = out, nil
}
