package flame

import (
	"slices"
	"sort"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// timeIndex is a Stacks' samples by the time they were taken (their
// sampling.TimeLabel, the start of their time bucket): for each distinct
// time, which of the Stacks' stacks have samples then and their value. A
// time range (the timeline's t=) is then the stacks of the times it
// covers, summed: work in proportion to the samples in the range and the
// distinct stacks, where filtering the profile again would group, expand
// and sort every sample of it (the same Filter.Time selects either way).
type timeIndex struct {
	at  []int64 // distinct sample times, ascending
	off []int32 // the entries of at[i] are [off[i], off[i+1])
	pos []int32 // per entry: the stack's index in Stacks.ws
	val []int64 // per entry: the value of the stack's samples at that time
	n   []int64 // per entry: their sample count (samplecount.go)
}

// newTimeIndex indexes p's samples with one time each: of[k] is sample
// k's stack in the grouped stacks (-1 skipped), pos[g] that stack's index
// in the sorted Stacks.ws (-1 filtered out). Nil when no sample kept has
// a time. ct is Options.CountType.
func newTimeIndex(p *profile.Profile, si, ct int, of, pos []int32) *timeIndex {
	type entry struct {
		at   int64
		pos  int32
		v, n int64
	}
	var es []entry
	for k, s := range p.Sample {
		g := of[k]
		if g < 0 || pos[g] < 0 {
			continue
		}
		ts := s.NumLabel[sampling.TimeLabel]
		if len(ts) != 1 {
			continue // in no range (TimeRange.Has)
		}
		es = append(es, entry{ts[0], pos[g], s.Value[si], sampleCount(s, ct)})
	}
	if len(es) == 0 {
		return nil
	}
	slices.SortFunc(es, func(a, b entry) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return int(a.pos - b.pos)
	})
	ti := &timeIndex{pos: make([]int32, 0, len(es)), val: make([]int64, 0, len(es)), n: make([]int64, 0, len(es))}
	for i, e := range es {
		if i > 0 && e.at == es[i-1].at && e.pos == es[i-1].pos {
			ti.val[len(ti.val)-1] += e.v // one stack's samples of one bucket
			ti.n[len(ti.n)-1] += e.n
			continue
		}
		if i == 0 || e.at != es[i-1].at {
			ti.at = append(ti.at, e.at)
			ti.off = append(ti.off, int32(len(ti.pos)))
		}
		ti.pos = append(ti.pos, e.pos)
		ti.val = append(ti.val, e.v)
		ti.n = append(ti.n, e.n)
	}
	ti.off = append(ti.off, int32(len(ti.pos)))
	return ti
}

// InTime is the Stacks of s's samples taken in r (TimeRange.Has), cut
// from s's time index: none when s's samples have no times. The result
// shares s's frames and stacks and has no time index of its own.
func (s *Stacks) InTime(r TimeRange) *Stacks {
	out := &Stacks{SampleType: s.SampleType, Unit: s.Unit, CountType: s.CountType, fr: s.fr}
	if ti := s.times; ti != nil {
		lo := sort.Search(len(ti.at), func(i int) bool { return ti.at[i] >= r.From })
		hi := max(lo, sort.Search(len(ti.at), func(i int) bool { return ti.at[i] >= r.To }))
		v := make([]int64, len(s.ws))
		n := make([]int64, len(s.ws))
		in := make([]bool, len(s.ws))
		for e := ti.off[lo]; e < ti.off[hi]; e++ {
			v[ti.pos[e]] += ti.val[e]
			n[ti.pos[e]] += ti.n[e]
			in[ti.pos[e]] = true
		}
		for i, w := range s.ws {
			if in[i] {
				out.ws = append(out.ws, weighted{seq: w.seq, v: v[i], base: n[i]})
			}
		}
	}
	out.sumUp()
	return out
}
