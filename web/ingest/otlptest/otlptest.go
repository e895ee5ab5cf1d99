// Package otlptest builds OpenTelemetry profiles requests for tests, the
// way an OTLP exporter (the OTel eBPF profiler, a collector) writes them:
// one dictionary shared by the request, index 0 of each table the empty
// entry, GNU build IDs as mapping attributes.
package otlptest

import (
	"fmt"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// BuildIDAttr is the mapping attribute holding a GNU build ID.
const BuildIDAttr = "process.executable.build_id.gnu"

// FromPprof writes p as an OTLP profiles request: one resource with the
// attributes res, and one OTLP profile per sample type of p (OTLP profiles
// have one each), whose samples carry p's values of that type, p's string
// labels as string attributes and its numeric labels as int attributes.
// It is written independently of viewer's reader so a round trip checks it.
func FromPprof(p *profile.Profile, res map[string]string) pprofile.Profiles {
	ps := pprofile.NewProfiles()
	d := newDict(ps.Dictionary())
	rp := ps.ResourceProfiles().AppendEmpty()
	for k, v := range res {
		rp.Resource().Attributes().PutStr(k, v)
	}
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("otlptest")
	for ti, st := range p.SampleType {
		pr := sp.Profiles().AppendEmpty()
		pr.SampleType().SetTypeStrindex(d.str(st.Type))
		pr.SampleType().SetUnitStrindex(d.str(st.Unit))
		if p.PeriodType != nil {
			pr.PeriodType().SetTypeStrindex(d.str(p.PeriodType.Type))
			pr.PeriodType().SetUnitStrindex(d.str(p.PeriodType.Unit))
		}
		pr.SetPeriod(p.Period)
		pr.SetTime(pcommon.Timestamp(p.TimeNanos))
		pr.SetDurationNano(uint64(p.DurationNanos))
		for _, s := range p.Sample {
			os := pr.Samples().AppendEmpty()
			os.Values().Append(s.Value[ti])
			locs := make([]int32, len(s.Location))
			for i, l := range s.Location {
				locs[i] = d.location(l)
			}
			os.SetStackIndex(d.stack(locs))
			for k, vs := range s.Label {
				for _, v := range vs {
					os.AttributeIndices().Append(d.attr(k, "", func(val pcommon.Value) { val.SetStr(v) }))
				}
			}
			for k, vs := range s.NumLabel {
				for i, v := range vs {
					unit := ""
					if i < len(s.NumUnit[k]) {
						unit = s.NumUnit[k][i]
					}
					os.AttributeIndices().Append(d.attr(k, unit, func(val pcommon.Value) { val.SetInt(v) }))
				}
			}
		}
	}
	return ps
}

// dict fills a request's dictionary, each entry once.
type dict struct {
	d         pprofile.ProfilesDictionary
	strs      map[string]int32
	mappings  map[uint64]int32
	functions map[uint64]int32
	locations map[uint64]int32
}

func newDict(d pprofile.ProfilesDictionary) *dict {
	x := &dict{d: d, strs: map[string]int32{}, mappings: map[uint64]int32{}, functions: map[uint64]int32{}, locations: map[uint64]int32{}}
	x.str("")
	d.MappingTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()
	return x
}

func (x *dict) str(s string) int32 {
	if i, ok := x.strs[s]; ok {
		return i
	}
	i := int32(x.d.StringTable().Len())
	x.d.StringTable().Append(s)
	x.strs[s] = i
	return i
}

func (x *dict) attr(key, unit string, set func(pcommon.Value)) int32 {
	kv := x.d.AttributeTable().AppendEmpty()
	kv.SetKeyStrindex(x.str(key))
	kv.SetUnitStrindex(x.str(unit))
	set(kv.Value())
	return int32(x.d.AttributeTable().Len() - 1)
}

func (x *dict) mapping(m *profile.Mapping) int32 {
	if i, ok := x.mappings[m.ID]; ok {
		return i
	}
	om := x.d.MappingTable().AppendEmpty()
	om.SetMemoryStart(m.Start)
	om.SetMemoryLimit(m.Limit)
	om.SetFileOffset(m.Offset)
	om.SetFilenameStrindex(x.str(m.File))
	if m.BuildID != "" {
		om.AttributeIndices().Append(x.attr(BuildIDAttr, "", func(v pcommon.Value) { v.SetStr(m.BuildID) }))
	}
	i := int32(x.d.MappingTable().Len() - 1)
	x.mappings[m.ID] = i
	return i
}

func (x *dict) function(f *profile.Function) int32 {
	if i, ok := x.functions[f.ID]; ok {
		return i
	}
	of := x.d.FunctionTable().AppendEmpty()
	of.SetNameStrindex(x.str(f.Name))
	of.SetSystemNameStrindex(x.str(f.SystemName))
	of.SetFilenameStrindex(x.str(f.Filename))
	of.SetStartLine(f.StartLine)
	i := int32(x.d.FunctionTable().Len() - 1)
	x.functions[f.ID] = i
	return i
}

func (x *dict) location(l *profile.Location) int32 {
	if i, ok := x.locations[l.ID]; ok {
		return i
	}
	var mi int32
	if l.Mapping != nil {
		mi = x.mapping(l.Mapping)
	}
	var fis []int32
	for _, ln := range l.Line {
		fis = append(fis, x.function(ln.Function))
	}
	ol := x.d.LocationTable().AppendEmpty()
	ol.SetMappingIndex(mi)
	ol.SetAddress(l.Address)
	for j, ln := range l.Line {
		line := ol.Lines().AppendEmpty()
		line.SetFunctionIndex(fis[j])
		line.SetLine(ln.Line)
		line.SetColumn(ln.Column)
	}
	i := int32(x.d.LocationTable().Len() - 1)
	x.locations[l.ID] = i
	return i
}

func (x *dict) stack(locs []int32) int32 {
	st := x.d.StackTable().AppendEmpty()
	st.LocationIndices().Append(locs...)
	return int32(x.d.StackTable().Len() - 1)
}

// EBPFLike is what an eBPF profiler sends for one process every
// few seconds: n samples over n/10 distinct stacks 24 frames deep, in an
// executable and libc with build IDs; seed makes its bytes unique.
func EBPFLike(n, seed int) *profile.Profile {
	exe := &profile.Mapping{ID: 1, Start: 0x555555554000, Limit: 0x555555600000, File: "/usr/bin/app", BuildID: "8e44c8b0040d3a4162b62bffc2fb28e2c2b8fecc"}
	libc := &profile.Mapping{ID: 2, Start: 0x7ffff7d80000, Limit: 0x7ffff7f00000, Offset: 0x26000, File: "/usr/lib/x86_64-linux-gnu/libc.so.6", BuildID: "1fb24b73998e656025af695f4b950cb2315278df"}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 50_000_000,
		TimeNanos: int64(seed) * 1e9, Mapping: []*profile.Mapping{exe, libc},
	}
	for i := range 2000 {
		m := exe
		if i%5 == 0 {
			m = libc
		}
		p.Location = append(p.Location, &profile.Location{ID: uint64(i + 1), Mapping: m, Address: m.Start + uint64(i*37+seed%7)})
	}
	stacks := n / 10
	for i := range stacks {
		s := &profile.Sample{Value: []int64{10}, Label: map[string][]string{"thread.name": {fmt.Sprintf("worker-%d", i%16)}}}
		for d := range 24 {
			s.Location = append(s.Location, p.Location[(i*31+d*97)%len(p.Location)])
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}
