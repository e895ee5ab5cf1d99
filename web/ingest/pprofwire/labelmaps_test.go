package pprofwire

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/google/pprof/profile"
)

// TestDecodedSamplesShareLabelMaps: samples of a pprof input whose label
// messages are the same get the same label maps (a converted perf.data has
// a sample per thread, time bucket and stack), and each sample's labels are
// still its own.
func TestDecodedSamplesShareLabelMaps(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	l1 := &profile.Location{ID: 1, Address: 0x10, Line: []profile.Line{{Function: fn}}}
	l2 := &profile.Location{ID: 2, Address: 0x20, Line: []profile.Line{{Function: fn}}}
	lab := func(comm string, tid, at int64) (map[string][]string, map[string][]int64, map[string][]string) {
		return map[string][]string{"comm": {comm}}, map[string][]int64{"tid": {tid}, "time": {at}}, map[string][]string{"time": {"nanoseconds"}}
	}
	in := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Location:   []*profile.Location{l1, l2},
		Function:   []*profile.Function{fn},
	}
	for _, x := range []struct {
		loc     *profile.Location
		comm    string
		tid, at int64
	}{{l1, "a", 1, 0}, {l2, "a", 1, 0}, {l1, "a", 2, 0}, {l2, "a", 1, 30}, {l2, "b", 2, 0}} {
		s := &profile.Sample{Location: []*profile.Location{x.loc}, Value: []int64{1}}
		s.Label, s.NumLabel, s.NumUnit = lab(x.comm, x.tid, x.at)
		in.Sample = append(in.Sample, s)
	}
	var b bytes.Buffer
	if err := in.WriteUncompressed(&b); err != nil {
		t.Fatal(err)
	}
	p, err := Decode(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != len(in.Sample) {
		t.Fatalf("%d samples decoded, want %d", len(p.Sample), len(in.Sample))
	}
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	for i, s := range p.Sample {
		w := in.Sample[i]
		if !reflect.DeepEqual(s.Label, w.Label) || !reflect.DeepEqual(s.NumLabel, w.NumLabel) || !reflect.DeepEqual(s.NumUnit, w.NumUnit) {
			t.Errorf("sample %d: labels %v %v %v, want %v %v %v", i, s.Label, s.NumLabel, s.NumUnit, w.Label, w.NumLabel, w.NumUnit)
		}
		if i == 0 {
			continue
		}
		prev := p.Sample[i-1]
		shares := same(s.Label, prev.Label) && same(s.NumLabel, prev.NumLabel) && same(s.NumUnit, prev.NumUnit)
		if want := i == 1; shares != want {
			t.Errorf("sample %d shares the label maps of sample %d: %v, want %v", i, i-1, shares, want)
		}
	}
}
