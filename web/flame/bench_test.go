package flame

import (
	"bytes"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/testdata/bench/gen"
	"viewer/web/ingest"
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

// benchZoom is a zoom path into the benchmark profile: the widest frame
// at depth 3, then the widest child on down to depth 5.
func benchZoom(p *profile.Profile) []string {
	tr := Build(p, 1, Options{MinFraction: DefaultMinFraction})
	var path []string
	best := make([]int64, 6)
	var stack []string
	var out []string
	for _, n := range tr.Nodes {
		stack = append(stack[:n.Depth], tr.Names[n.Name])
		d := int(n.Depth)
		if d == 0 || d > 5 || tr.Names[n.Name] == MergedName {
			continue
		}
		if slices.Equal(stack[1:d], path[:min(d-1, len(path))]) && len(path) >= d-1 && n.Total > best[d] {
			best[d] = n.Total
			path = append(path[:d-1], tr.Names[n.Name])
			for k := d + 1; k < len(best); k++ {
				best[k] = 0
			}
		}
	}
	out = append(out, path...)
	return out
}

// BenchmarkNewStacks measures sorting the benchmark profile's stacks, done
// once per profile for every zoom and top table.
func BenchmarkNewStacks(b *testing.B) {
	p := benchProfile(b)
	b.ReportAllocs()
	for b.Loop() {
		NewStacks(p, 1, Options{})
	}
}

// BenchmarkZoomTree measures flame.json?z= on the server side: the tree
// zoomed five frames deep and its JSON, from the sorted stacks.
func BenchmarkZoomTree(b *testing.B) {
	p := benchProfile(b)
	s := NewStacks(p, 1, Options{})
	z := benchZoom(p)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(s.Tree(z, Options{MinFraction: DefaultMinFraction}).JSON())
	}
	b.ReportMetric(float64(n), "json-bytes")
	b.ReportMetric(float64(len(z)), "depth")
}

// BenchmarkStacksTop measures top.json's table: the whole profile's, and
// zoomed as BenchmarkZoomTree is.
func BenchmarkStacksTop(b *testing.B) {
	p := benchProfile(b)
	s := NewStacks(p, 1, Options{})
	for _, z := range [][]string{nil, benchZoom(p)} {
		b.Run(fmt.Sprintf("depth=%d", len(z)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Top(z, Options{})
			}
		})
	}
}

// BenchmarkFirstView2M is an upload's first view (web/upload.go's
// buildFirstView): the default sample type's stacks and the whole
// flame.json, of the profile in $VIEWER_BENCH_PROFILE, by default the
// 2M-sample profile that testdata/bench/growth.sh 2m generates, read by
// viewer's own parser. cpu-ms/op is the process's CPU time (both
// goroutines), what to compare on a shared machine.
//
//	go test -run '^$' -bench FirstView2M -benchtime 3x -benchmem ./web/flame
func BenchmarkFirstView2M(b *testing.B) {
	p, si, opt := profile2M(b)
	cpuLoop(b, func() {
		st := NewStacks(p, si, opt)
		st.Tree(nil, Options{MinFraction: DefaultMinFraction}).JSON()
	})
}

// profile2M is the profile the 2M benchmarks read ($VIEWER_BENCH_PROFILE,
// gen.Profile2M), its default sample type and the first view's options.
func profile2M(b *testing.B) (*profile.Profile, int, Options) {
	p, _, err := ingest.Parse(gen.Profile2M(b), ingest.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	si, err := SampleIndex(p, "")
	if err != nil {
		b.Fatal(err)
	}
	return p, si, Options{CountType: ingest.CountIndex(p.SampleType, si) + 1}
}

// cpuLoop runs f in b's loop and reports the process's CPU time (all its
// goroutines) per op as cpu-ms/op, what to compare on a shared machine.
func cpuLoop(b *testing.B, f func()) {
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		f()
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkGroupStacks2M is the grouping of the 2M-sample profile's
// samples by stack (groupStacksOf), the one pass of the first view before
// its stacks are expanded on two goroutines.
//
//	go test -run '^$' -bench GroupStacks2M -benchtime 5x ./web/flame
func BenchmarkGroupStacks2M(b *testing.B) {
	p, _, err := ingest.Parse(gen.Profile2M(b), ingest.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	of := make([]int32, len(p.Sample))
	for b.Loop() {
		groupStacksOf(p, 0, of)
	}
}

// BenchmarkStacksTop2M is the whole profile's top table (the page's, and
// top.json's without a zoom) of the profile BenchmarkFirstView2M reads,
// from its stacks: a pass over every frame of every distinct stack.
//
//	VIEWER_BENCH_PROFILE=/tmp/viewer-bench/bench-2m-all.pb.gz \
//	  go test -run '^$' -bench StacksTop2M -benchtime 5x ./web/flame
func BenchmarkStacksTop2M(b *testing.B) {
	p, si, opt := profile2M(b)
	s := NewStacks(p, si, opt)
	cpuLoop(b, func() { s.Top(nil, Options{}) })
}
