package ingest

import (
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
)

// dropEmptySampleTypes removes the sample types whose every value is zero,
// such as the dummy:HG event `perf record -a` adds for side-band records,
// and says so in a warning comment: a sample type with nothing in it is
// only an empty page to pick. It keeps them all when every type is empty
// (a profile with no samples stays as it came).
func dropEmptySampleTypes(p *profile.Profile) {
	n := len(p.SampleType)
	used := make([]bool, n)
	for _, s := range p.Sample {
		for i, v := range s.Value[:min(len(s.Value), n)] {
			if v != 0 {
				used[i] = true
			}
		}
	}
	var keep []int
	var dropped []string
	for i, st := range p.SampleType {
		if used[i] {
			keep = append(keep, i)
		} else {
			dropped = append(dropped, st.Type)
		}
	}
	if len(dropped) == 0 || len(keep) == 0 {
		return
	}
	types := make([]*profile.ValueType, len(keep))
	for j, i := range keep {
		types[j] = p.SampleType[i]
	}
	for _, s := range p.Sample {
		v := make([]int64, len(keep))
		for j, i := range keep {
			if i < len(s.Value) {
				v[j] = s.Value[i]
			}
		}
		s.Value = v
	}
	p.SampleType = types
	for _, d := range dropped {
		if d == p.DefaultSampleType {
			p.DefaultSampleType = ""
		}
	}
	p.Comments = append(p.Comments, fmt.Sprintf("warning: dropped %d sample type(s) with no samples (every value zero): %s",
		len(dropped), strings.Join(dropped, ", ")))
}
