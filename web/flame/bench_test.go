package flame

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/testdata/bench/gen"
)

// benchProfile is the testdata/bench profile (200,000 samples, 50,000
// stacks), round-tripped through its encoding as the server would see it.
func benchProfile(b *testing.B) *profile.Profile {
	b.Helper()
	var buf bytes.Buffer
	if err := gen.Generate(200000, 50000, 20000, 20, 1).Write(&buf); err != nil {
		b.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkFlameTree measures building the compact tree and its flame.json
// for the benchmark profile.
func BenchmarkFlameTree(b *testing.B) {
	p := benchProfile(b)
	b.ReportAllocs()
	b.ResetTimer()
	var n int
	for b.Loop() {
		n = len(Build(p, 1, Options{MinFraction: DefaultMinFraction}).JSON())
	}
	b.ReportMetric(float64(n), "json-bytes")
}

func BenchmarkTop(b *testing.B) {
	p := benchProfile(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Top(p, 1)
	}
}
