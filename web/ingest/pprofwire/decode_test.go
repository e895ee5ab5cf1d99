package pprofwire

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"viewer/testdata/bench/gen"
	"viewer/testdata/peers"
)

// sameAsPprof checks that Decode reads raw as profile.ParseUncompressed
// does: equal once each is merged by pprof (profile.Merge folds samples of
// equal stacks and labels, which Decode has done already), with no
// more samples than pprof's and the same value totals.
func sameAsPprof(t testing.TB, raw []byte) {
	t.Helper()
	want, wantErr := profile.ParseUncompressed(raw)
	got, err := Decode(raw)
	if err != nil {
		return // the caller falls back to ParseUncompressed: nothing to compare
	}
	if wantErr != nil {
		t.Fatalf("Decode read what pprof rejects (%v)", wantErr)
	}
	if len(got.Sample) > len(want.Sample) {
		t.Fatalf("%d samples, pprof has %d", len(got.Sample), len(want.Sample))
	}
	if len(got.Location) != len(want.Location) || len(got.Function) != len(want.Function) || len(got.Mapping) != len(want.Mapping) {
		t.Fatalf("locations/functions/mappings %d/%d/%d, pprof %d/%d/%d",
			len(got.Location), len(got.Function), len(got.Mapping), len(want.Location), len(want.Function), len(want.Mapping))
	}
	total := func(p *profile.Profile) []int64 {
		out := make([]int64, len(p.SampleType))
		for _, s := range p.Sample {
			for i := range min(len(out), len(s.Value)) {
				out[i] += s.Value[i]
			}
		}
		return out
	}
	gt, wt := total(got), total(want)
	for i := range wt {
		if gt[i] != wt[i] {
			t.Fatalf("sample type %d totals %d, pprof %d", i, gt[i], wt[i])
		}
	}
	if (got.CheckValid() == nil) != (want.CheckValid() == nil) {
		t.Fatalf("CheckValid: %v, pprof's: %v", got.CheckValid(), want.CheckValid())
	}
	if want.CheckValid() != nil {
		return // Merge needs a valid profile
	}
	gm, err := profile.Merge([]*profile.Profile{got})
	if err != nil {
		t.Fatal(err)
	}
	wm, err := profile.Merge([]*profile.Profile{want})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := gm.String(), wm.String(); g != w {
		t.Fatalf("decoded profile differs from pprof's:\n got %.2000s\nwant %.2000s", g, w)
	}
}

func rawProfile(t testing.TB, p *profile.Profile) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.WriteUncompressed(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDecodePprof compares Decode with pprof's decoder on every
// legacy peer profile written as profile.proto (labels, inlined lines,
// kernel mappings, comments), on the benchmark generator's profile with
// labels added, and on a profile whose repeated stacks it merges.
func TestDecodePprof(t *testing.T) {
	peers := peers.Pprofs(t)
	for _, name := range slices.Sorted(maps.Keys(peers)) {
		raw := peers[name]
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(raw); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			sameAsPprof(t, raw)
		})
	}
	t.Run("generated with labels", func(t *testing.T) {
		p := gen.Generate(20000, 2000, 500, 4, 7)
		for i, s := range p.Sample {
			switch i % 4 {
			case 1:
				s.Label = map[string][]string{"thread": {"a"}, "x": {"1", "2"}}
			case 2:
				s.NumLabel = map[string][]int64{"bytes": {int64(i % 3)}, "n": {1, 2}}
				s.NumUnit = map[string][]string{"bytes": {"bytes"}}
			case 3:
				s.Label = map[string][]string{"thread": {"b"}}
				s.NumLabel = map[string][]int64{"n": {7}}
			}
		}
		p.Comments = []string{"one", "two"}
		p.DropFrames, p.KeepFrames, p.DocURL = "runtime\\..*", "main", "https://example.com/doc"
		p.Mapping[0].File = "[kernel.kallsyms]_text"
		raw := rawProfile(t, p)
		sameAsPprof(t, raw)
		got, err := Decode(raw)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if got.Mapping[0].KernelRelocationSymbol != "_text" || got.DocURL != p.DocURL || len(got.Comments) != 2 {
			t.Errorf("kernel symbol %q, doc %q, comments %q", got.Mapping[0].KernelRelocationSymbol, got.DocURL, got.Comments)
		}
	})
	t.Run("repeated stacks merge", func(t *testing.T) {
		p := gen.Generate(1000, 10, 50, 2, 1)
		raw := rawProfile(t, p)
		got, err := Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Sample) <= 10 || len(got.Sample) > 10 {
			t.Fatalf("%d records over 10 stacks decoded to %d samples", len(p.Sample), len(got.Sample))
		}
		sameAsPprof(t, raw)
	})
	t.Run("merged on two goroutines", func(t *testing.T) {
		p := gen.Generate(20000, 2000, 500, 4, 7)
		for i, s := range p.Sample {
			if i%3 == 1 {
				s.Label = map[string][]string{"thread": {"a"}}
			}
		}
		raw := rawProfile(t, p)
		one, err := Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		was := parallelMergeMin
		parallelMergeMin = 2
		defer func() { parallelMergeMin = was }()
		two, err := Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		// The same samples in the same order: each at its first record.
		if g, w := two.String(), one.String(); g != w {
			t.Fatalf("merged on two goroutines:\n%.2000s\non one:\n%.2000s", g, w)
		}
		sameAsPprof(t, raw)
	})
}

// FuzzDecodePprof checks, on arbitrary bytes, that whatever Decode
// accepts pprof reads the same way: go test -fuzz FuzzDecodePprof ./web/ingest/pprofwire.
func FuzzDecodePprof(f *testing.F) {
	f.Add(rawProfile(f, gen.Generate(200, 40, 30, 2, 1)))
	b, err := os.ReadFile(filepath.Join("../../../testdata/peers", "pprof", "cppbench.heap"))
	if err != nil {
		f.Fatal(err)
	}
	if p, err := profile.ParseData(b); err == nil {
		f.Add(rawProfile(f, p))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { sameAsPprof(t, raw) })
}

// BenchmarkDecodePprof compares pprof's decoder with Decode on the
// benchmark generator's profile (VIEWER_BENCH_SAMPLES samples, default
// 200,000, over a quarter as many stacks), uncompressed, in one run:
//
//	go test -run '^$' -bench DecodePprof -benchtime 3x -benchmem ./web/ingest/pprofwire/
func BenchmarkDecodePprof(b *testing.B) {
	n := 200000
	if s := os.Getenv("VIEWER_BENCH_SAMPLES"); s != "" {
		fmt.Sscan(s, &n)
	}
	raw := rawProfile(b, gen.Generate(n, n/4, n/10, 20, 1))
	for _, d := range []struct {
		name   string
		decode func([]byte) (*profile.Profile, error)
	}{{"pprof", profile.ParseUncompressed}, {"protowire", Decode}} {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeShapes is Decode of each of issue 36's profile
// shapes (gen.Variants, as testdata/bench/growth.sh's 2m-NAME writes them:
// the tables, then the samples), uncompressed, at the benchmark profile's
// counts (VIEWER_BENCH_SAMPLES samples, default 200,000, over a quarter
// as many stacks): a decoder cost that grows with one shape's option
// (depth, locations, names, labels...) shows beside the others. cpu-ms/op
// is the process's CPU time (the merge and build run on two goroutines),
// what to compare on a shared machine.
//
//	go test -run '^$' -bench DecodeShapes -benchtime 5x ./web/ingest/pprofwire/
func BenchmarkDecodeShapes(b *testing.B) {
	n := 200000
	if s := os.Getenv("VIEWER_BENCH_SAMPLES"); s != "" {
		fmt.Sscan(s, &n)
	}
	for _, v := range gen.Variants {
		b.Run(v.Name, func(b *testing.B) {
			sh, _ := gen.Variant(v.Name, n, n/4, n/10, 20, 1)
			var gz bytes.Buffer
			if err := sh.WriteStream(&gz); err != nil {
				b.Fatal(err)
			}
			zr, err := gzip.NewReader(&gz)
			if err != nil {
				b.Fatal(err)
			}
			raw, err := io.ReadAll(zr)
			if err != nil {
				b.Fatal(err)
			}
			cpu := func() time.Duration {
				var ru syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
				return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			}
			b.SetBytes(int64(len(raw)))
			c0 := cpu()
			for b.Loop() {
				if _, err := Decode(raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpu()-c0).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// TestDecodeLocationIDLayouts checks Decode against pprof's decoder
// on each way locIndex finds a sample's locations: IDs 1..n in order (an
// offset in the array), the same IDs out of order or with gaps (a dense
// slice), and IDs far apart (a map); and that an ID no location has is
// refused as pprof refuses it.
func TestDecodeLocationIDLayouts(t *testing.T) {
	for _, c := range []struct {
		name string
		id   func(i int) uint64
	}{
		{"ordered", func(i int) uint64 { return uint64(i + 1) }},
		{"reversed", func(i int) uint64 { return uint64(1000 - i) }},
		{"gaps", func(i int) uint64 { return uint64(2*i + 3) }},
		{"sparse", func(i int) uint64 { return uint64(i+1) << 40 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := gen.Generate(3000, 300, 200, 4, 3)
			for i, l := range p.Location {
				l.ID = c.id(i)
			}
			raw := rawProfile(t, p)
			got, err := Decode(raw)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			for _, s := range got.Sample {
				for _, l := range s.Location {
					if l == nil {
						t.Fatal("a sample's location was not found")
					}
				}
			}
			sameAsPprof(t, raw)
			// A sample naming an ID no location has: pprof fails it.
			p.Sample[0].Location = append(p.Sample[0].Location, &profile.Location{ID: c.id(len(p.Location)) + 1<<41})
			sameAsPprof(t, rawProfile(t, p))
		})
	}
}
