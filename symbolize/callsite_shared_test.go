package symbolize

import (
	"testing"

	"github.com/google/pprof/profile"
)

// TestCallSitesSharedSlice: samples that share one location slice (as
// perf.data's converter gives a stack's samples of other threads) are moved
// once. Here the call site of X (0x1001) is Y (0x1000), itself a caller
// elsewhere, whose own call site is new: moving the shared slice twice
// would take X to 0xfff.
func TestCallSitesSharedSlice(t *testing.T) {
	m := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x3000, File: "/bin/prog"}
	y := &profile.Location{ID: 1, Mapping: m, Address: 0x1000}
	x := &profile.Location{ID: 2, Mapping: m, Address: 0x1001}
	z := &profile.Location{ID: 3, Mapping: m, Address: 0x2000}
	shared := []*profile.Location{z, x}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Mapping:    []*profile.Mapping{m},
		Location:   []*profile.Location{y, x, z},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{y}, Value: []int64{1}},
			{Location: shared, Value: []int64{1}},
			{Location: []*profile.Location{z, y}, Value: []int64{1}},
			{Location: shared, Value: []int64{1}},
		},
	}
	CallSites(p)
	for _, i := range []int{1, 3} {
		if got := p.Sample[i].Location[1]; got != y {
			t.Errorf("sample %d's caller is at %#x, want %#x (X's call site, Y)", i, got.Address, y.Address)
		}
	}
	if got := p.Sample[2].Location[1].Address; got != 0xfff {
		t.Errorf("sample 2's caller is at %#x, want 0xfff (Y's call site)", got)
	}
}
