package flame

import (
	"bytes"
	"regexp"
	"testing"

	"viewer/testdata/bench/gen"
)

// TestStacksWholeTreeIsBuild checks that the whole tree cut from a
// profile's sorted stacks (what flame.json serves, sharing the stacks
// with top tables and zooms) is byte for byte the tree Build makes from
// the profile, filtered or not, under a tight budget or none.
func TestStacksWholeTreeIsBuild(t *testing.T) {
	p := gen.Generate(20000, 5000, 2000, 5, 3)
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"default", Options{MinFraction: DefaultMinFraction}},
		{"every frame", Options{}},
		{"svg fraction", Options{MinFraction: SVGMinFraction}},
		{"budget", Options{MinFraction: DefaultMinFraction, Budget: Budget{Nodes: 500}}},
		{"filter", Options{MinFraction: DefaultMinFraction, Filter: Filter{Focus: regexp.MustCompile("7"), Hide: regexp.MustCompile("3$")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for si := range p.SampleType {
				want := Build(p, si, tc.opt).JSON()
				if tc.opt.Filter.Active() && bytes.Equal(want, Build(p, si, Options{MinFraction: DefaultMinFraction}).JSON()) {
					t.Fatal("the filter changes nothing: pick one that matches")
				}
				tr := NewStacks(p, si, tc.opt).Tree(nil, tc.opt)
				tr.Samples = nil // Build's trees have no sample counts (samplecount_test.go checks them)
				got := tr.JSON()
				if !bytes.Equal(got, want) {
					t.Fatalf("si %d: the stacks' whole tree differs from Build's:\n got %.300s\nwant %.300s", si, got, want)
				}
				// The same, expanded and sorted in two halves on two goroutines, as
				// profiles with many stacks are.
				was := parallelSortMin
				parallelSortMin = 2
				tr = NewStacks(p, si, tc.opt).Tree(nil, tc.opt)
				parallelSortMin = was
				tr.Samples = nil
				got = tr.JSON()
				if !bytes.Equal(got, want) {
					t.Fatalf("si %d, sorted in two halves: the stacks' whole tree differs from Build's:\n got %.300s\nwant %.300s", si, got, want)
				}
			}
		})
	}
}
