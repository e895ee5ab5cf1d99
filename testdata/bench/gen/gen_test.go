package gen

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/pprof/profile"
)

// TestWriteStreamIsGenerate checks that the streamed profile, read back by
// pprof's own parser, is Generate's sample for sample, for the benchmark
// shape and the shapes of issue 36 (labels, sample types, merged records).
func TestWriteStreamIsGenerate(t *testing.T) {
	base := Shape{Samples: 3000, Stacks: 700, Functions: 300, Mappings: 4, Seed: 5}
	labels, merged := base, base
	labels.Labels, labels.Types, labels.Inline, labels.NameLen = 3, 4, 2, 200
	merged.Merged, merged.MinDepth, merged.MaxDepth, merged.Locations = true, 5, 200, 3000
	for i, sh := range []Shape{base, labels, merged} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var buf bytes.Buffer
			if err := sh.WriteStream(&buf); err != nil {
				t.Fatal(err)
			}
			got, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			want := sh.Generate()
			if len(got.Sample) != len(want.Sample) || len(got.Location) != len(want.Location) || len(got.Function) != len(want.Function) {
				t.Fatalf("streamed: %d samples, %d locations, %d functions; Generate: %d, %d, %d",
					len(got.Sample), len(got.Location), len(got.Function), len(want.Sample), len(want.Location), len(want.Function))
			}
			for i, s := range want.Sample {
				g := got.Sample[i]
				if len(g.Location) != len(s.Location) || fmt.Sprint(g.Value) != fmt.Sprint(s.Value) ||
					fmt.Sprint(g.Label) != fmt.Sprint(s.Label) || fmt.Sprint(g.NumLabel) != fmt.Sprint(s.NumLabel) {
					t.Fatalf("sample %d: %d locations %v %v %v, want %d %v %v %v", i, len(g.Location), g.Value, g.Label, g.NumLabel, len(s.Location), s.Value, s.Label, s.NumLabel)
				}
				for j, l := range s.Location {
					if g.Location[j].ID != l.ID || g.Location[j].Line[len(l.Line)-1].Function.Name != l.Line[len(l.Line)-1].Function.Name {
						t.Fatalf("sample %d frame %d: location %d, want %d", i, j, g.Location[j].ID, l.ID)
					}
				}
			}
		})
	}
	if n := len(merged.Generate().Sample); n != merged.Stacks {
		t.Errorf("merged shape: %d records, want one per stack (%d)", n, merged.Stacks)
	}
}
