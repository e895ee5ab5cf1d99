package profiles

import (
	"slices"

	"github.com/google/pprof/profile"
)

// cloneProfile is a copy of p that work changing it (symbolization adds
// lines and functions to locations, mappings' flags) may change without
// touching p: its own mappings, functions, locations and samples. The
// samples' values are copied too; their label maps, which nothing changes
// once a profile is parsed, are shared. Reading the converted copy back
// instead (gunzip, decode) took a 428k-sample perf.data profile's
// symbolization job 5 s of CPU and 650 MB more than the profile the
// upload kept, a label map per sample where the upload's samples share
// theirs, while the upload's first view was being built.
func cloneProfile(p *profile.Profile) *profile.Profile {
	q := &profile.Profile{
		DefaultSampleType: p.DefaultSampleType,
		Comments:          slices.Clone(p.Comments),
		DocURL:            p.DocURL,
		DropFrames:        p.DropFrames,
		KeepFrames:        p.KeepFrames,
		TimeNanos:         p.TimeNanos,
		DurationNanos:     p.DurationNanos,
		Period:            p.Period,
	}
	valueType := func(v *profile.ValueType) *profile.ValueType {
		if v == nil {
			return nil
		}
		c := *v
		return &c
	}
	for _, v := range p.SampleType {
		q.SampleType = append(q.SampleType, valueType(v))
	}
	q.PeriodType = valueType(p.PeriodType)

	maps := make(map[*profile.Mapping]*profile.Mapping, len(p.Mapping))
	q.Mapping = make([]*profile.Mapping, len(p.Mapping))
	for i, m := range p.Mapping {
		c := *m
		q.Mapping[i], maps[m] = &c, &c
	}
	funcs := make(map[*profile.Function]*profile.Function, len(p.Function))
	q.Function = make([]*profile.Function, len(p.Function))
	fs := make([]profile.Function, len(p.Function)) // one allocation for all
	for i, f := range p.Function {
		fs[i] = *f
		q.Function[i], funcs[f] = &fs[i], &fs[i]
	}
	locs := make(map[*profile.Location]*profile.Location, len(p.Location))
	q.Location = make([]*profile.Location, len(p.Location))
	ls := make([]profile.Location, len(p.Location))
	for i, l := range p.Location {
		c := &ls[i]
		*c = *l
		c.Mapping = maps[l.Mapping]
		c.Line = slices.Clone(l.Line)
		for j := range c.Line {
			c.Line[j].Function = funcs[l.Line[j].Function]
		}
		q.Location[i], locs[l] = c, c
	}
	// Samples, their location slices and values in a few large blocks:
	// a profile has far more samples than anything else.
	nv := 0
	for _, s := range p.Sample {
		nv += len(s.Value)
	}
	ss := make([]profile.Sample, len(p.Sample))
	sv := make([]int64, nv)
	var sl []*profile.Location // location slices are cut from blocks of 64k
	take := func(n int) []*profile.Location {
		if len(sl) < n {
			sl = make([]*profile.Location, max(n, 1<<16))
		}
		r := sl[:n:n]
		sl = sl[n:]
		return r
	}
	q.Sample = make([]*profile.Sample, len(p.Sample))
	// Samples that share a location slice (perf.data's converter gives a
	// stack's samples one) share their copy of it.
	sharedLocs := map[**profile.Location][]*profile.Location{}
	for i, s := range p.Sample {
		c := &ss[i]
		q.Sample[i] = c
		c.Value, sv = sv[:len(s.Value):len(s.Value)], sv[len(s.Value):]
		copy(c.Value, s.Value)
		c.Label, c.NumLabel, c.NumUnit = s.Label, s.NumLabel, s.NumUnit
		if len(s.Location) == 0 {
			continue
		}
		if o, ok := sharedLocs[&s.Location[0]]; ok && len(o) == len(s.Location) {
			c.Location = o
			continue
		}
		c.Location = take(len(s.Location))
		sharedLocs[&s.Location[0]] = c.Location
		for j, l := range s.Location {
			// Locations are numbered by position as a rule: no map lookup per frame.
			if k := l.ID - 1; k < uint64(len(p.Location)) && p.Location[k] == l {
				c.Location[j] = &ls[k]
			} else {
				c.Location[j] = locs[l]
			}
		}
	}
	return q
}
