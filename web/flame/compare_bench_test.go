package flame

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/testdata/bench/gen"
)

// benchPair is the benchmark profile and another of the same shape drawn
// with another seed, as a base to compare with.
func benchPair(b *testing.B) (base, cur *profile.Profile) {
	b.Helper()
	var buf bytes.Buffer
	if err := gen.Generate(200000, 50000, 20000, 20, 2).Write(&buf); err != nil {
		b.Fatal(err)
	}
	base, err := profile.Parse(&buf)
	if err != nil {
		b.Fatal(err)
	}
	return base, benchProfile(b)
}

// BenchmarkDiff builds diff.json for two 200,000-sample profiles.
// Compare with BenchmarkDiffPprofMerge, pprof's way of diffing (-diff_base:
// merge the base scaled by -1 into the profile) followed by building the
// same tree.
func BenchmarkDiff(b *testing.B) {
	base, cur := benchPair(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Diff(base, 1, cur, 1, Options{MinFraction: DefaultMinFraction}).DiffJSON(500)
	}
}

func BenchmarkDiffPprofMerge(b *testing.B) {
	base, cur := benchPair(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		neg := base.Copy()
		neg.Scale(-1)
		m, err := profile.Merge([]*profile.Profile{cur, neg})
		if err != nil {
			b.Fatal(err)
		}
		Build(m, 1, Options{MinFraction: DefaultMinFraction}).JSON()
	}
}

// BenchmarkFilter builds flame.json with a focus and a hide filter; compare
// with BenchmarkFilterPprof: pprof's FilterSamplesByName on a copy of the
// profile, then the same tree.
func BenchmarkFilter(b *testing.B) {
	p := benchProfile(b)
	f, _ := ParseFilter("serve", "", "read", "")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Build(p, 1, Options{MinFraction: DefaultMinFraction, Filter: f}).JSON()
	}
}

func BenchmarkFilterPprof(b *testing.B) {
	p := benchProfile(b)
	focus, hide := regexp.MustCompile("serve"), regexp.MustCompile("read")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		q := p.Copy()
		q.FilterSamplesByName(focus, nil, hide, nil)
		Build(q, 1, Options{MinFraction: DefaultMinFraction}).JSON()
	}
}

// BenchmarkSandwich builds sandwich.json for the hottest function; compare
// with BenchmarkFlameTree (the whole tree).
func BenchmarkSandwich(b *testing.B) {
	p := benchProfile(b)
	rows, _ := Top(p, 1)
	fn := rows[0].Name
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		BuildSandwich(p, 1, fn, Options{MinFraction: DefaultMinFraction}).JSON()
	}
}
