package symbolize

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/pprof/profile"
)

// TestCallSitesParts: CallSites on 2, 3 and 4 goroutines moves a profile
// as on one. The profile is random but made alike each time: user and
// kernel frames, addresses one apart (a caller's call site is often some
// leaf's address), and stacks shared by several samples, as perf.data's
// converter shares them.
func TestCallSitesParts(t *testing.T) {
	defer func(f func(int) int) { callSiteParts = f }(callSiteParts)
	want := ""
	for _, parts := range []int{1, 2, 3, 4} {
		callSiteParts = func(int) int { return parts }
		p := randomStacks()
		CallSites(p)
		got := p.String()
		if parts == 1 {
			want = got
			continue
		}
		if got != want {
			t.Errorf("%d parts: the profile differs from one part's", parts)
		}
	}
}

func randomStacks() *profile.Profile {
	r := rand.New(rand.NewPCG(1, 2))
	exe := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000, File: "/bin/prog"}
	kern := &profile.Mapping{ID: 2, Start: 0xffffffff81000000, Limit: 0xffffffff82000000, File: "[kernel.kallsyms]"}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Mapping:    []*profile.Mapping{exe, kern},
	}
	at := map[uint64]*profile.Location{}
	loc := func(m *profile.Mapping, addr uint64) *profile.Location {
		if l := at[addr]; l != nil {
			return l
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: addr}
		p.Location = append(p.Location, l)
		at[addr] = l
		return l
	}
	for range 2000 {
		var st []*profile.Location
		for range r.IntN(4) {
			st = append(st, loc(kern, kern.Start+uint64(r.IntN(200))))
		}
		for range 1 + r.IntN(8) {
			st = append(st, loc(exe, exe.Start+uint64(r.IntN(300))))
		}
		st = slices.Clip(st)
		for range 1 + r.IntN(3) {
			p.Sample = append(p.Sample, &profile.Sample{Location: st, Value: []int64{1}})
		}
	}
	return p
}
