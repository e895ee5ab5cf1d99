package symbolize

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// stackAddrs renders each sample's stack as "addr,addr,..." (leaf first).
func stackAddrs(p *profile.Profile) []string {
	var out []string
	for _, s := range p.Sample {
		var a []string
		for _, l := range s.Location {
			a = append(a, fmt.Sprintf("%x", l.Address))
		}
		out = append(out, strings.Join(a, ","))
	}
	return out
}

func TestCallSites(t *testing.T) {
	exe := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000, File: "/bin/prog"}
	kern := &profile.Mapping{ID: 2, Start: 0xffffffff81000000, Limit: 0xffffffff82000000, File: "[kernel.kallsyms]"}
	gofn := &profile.Mapping{ID: 3, Start: 0x10000, Limit: 0x20000, File: "/bin/goprog", HasFunctions: true}
	fn := &profile.Function{ID: 1, Name: "named"}
	loc := func(id uint64, m *profile.Mapping, addr uint64) *profile.Location {
		return &profile.Location{ID: id, Mapping: m, Address: addr}
	}
	leaf := loc(1, exe, 0x1100)            // only a leaf
	caller := loc(2, exe, 0x1205)          // only a caller
	both := loc(3, exe, 0x1305)            // a leaf in one sample, a caller in another
	k1 := loc(4, kern, 0xffffffff81000105) // kernel leaf
	k2 := loc(5, kern, 0xffffffff81000205) // kernel caller
	user := loc(6, exe, 0x1405)            // the user pc a syscall stopped
	named := loc(7, exe, 0x1505)           // already has lines
	named.Line = []profile.Line{{Function: fn, Line: 3}}
	goloc := loc(8, gofn, 0x10105) // in a mapping with functions
	site := loc(9, exe, 0x1604)    // a leaf at the call site of atSite
	atSite := loc(10, exe, 0x1605) // a caller whose call site is site
	unmapped := loc(11, nil, 0x1705)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Mapping:    []*profile.Mapping{exe, kern, gofn},
		Function:   []*profile.Function{fn},
		Location:   []*profile.Location{leaf, caller, both, k1, k2, user, named, goloc, site, atSite, unmapped},
		Comments:   []string{"hostname: x"},
	}
	add := func(ls ...*profile.Location) {
		p.Sample = append(p.Sample, &profile.Sample{Location: ls, Value: []int64{1}})
	}
	add(leaf, caller, both)
	add(both, caller)
	add(k1, k2, user, caller)
	add(leaf, named, goloc, unmapped)
	add(site)
	add(leaf, atSite)
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if !CallSites(p) {
		t.Fatal("CallSites changed nothing")
	}
	want := []string{
		"1100,1204,1304",
		"1305,1204",
		"ffffffff81000105,ffffffff81000204,1405,1204",
		"1100,1505,10105,1705",
		"1604",
		"1100,1604",
	}
	got := stackAddrs(p)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stacks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("after CallSites: %v", err)
	}
	// The split: "both" stays the leaf, its callers get a new location.
	if p.Sample[1].Location[0] != both || p.Sample[0].Location[2] == both || p.Sample[0].Location[2].Mapping != exe {
		t.Errorf("a location used as leaf and caller was not split")
	}
	if p.Sample[5].Location[1] != site {
		t.Errorf("the caller whose call site is a leaf's address does not share that location")
	}
	if !sampling.HasCallSites(p) || p.Comments[0] != "hostname: x" {
		t.Errorf("comments %q: want the mark added", p.Comments)
	}
	n := len(p.Location)
	// Idempotent: a second pass, or a re-read of what was written, shifts nothing.
	if CallSites(p) {
		t.Error("a second CallSites changed addresses")
	}
	var b strings.Builder
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	q, err := profile.Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if CallSites(q) || strings.Join(stackAddrs(q), "\n") != strings.Join(want, "\n") || len(p.Location) != n {
		t.Errorf("after a round trip, CallSites shifted again: %v", stackAddrs(q))
	}
	if strings.Count(strings.Join(q.Comments, "\n"), sampling.CallSiteMark) != 1 {
		t.Errorf("comments after round trip: %q", q.Comments)
	}
}
