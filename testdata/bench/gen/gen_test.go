package gen

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"
)

// TestWriteStreamIsGenerate checks that the streamed profile, read back by
// pprof's own parser, is Generate's sample for sample.
func TestWriteStreamIsGenerate(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteStream(&buf, 3000, 700, 300, 4, 5); err != nil {
		t.Fatal(err)
	}
	got, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := Generate(3000, 700, 300, 4, 5)
	if len(got.Sample) != len(want.Sample) || len(got.Location) != len(want.Location) || len(got.Function) != len(want.Function) {
		t.Fatalf("streamed: %d samples, %d locations, %d functions; Generate: %d, %d, %d",
			len(got.Sample), len(got.Location), len(got.Function), len(want.Sample), len(want.Location), len(want.Function))
	}
	for i, s := range want.Sample {
		g := got.Sample[i]
		if len(g.Location) != len(s.Location) || g.Value[0] != s.Value[0] || g.Value[1] != s.Value[1] {
			t.Fatalf("sample %d: %d locations %v, want %d %v", i, len(g.Location), g.Value, len(s.Location), s.Value)
		}
		for j, l := range s.Location {
			if g.Location[j].ID != l.ID || g.Location[j].Line[len(l.Line)-1].Function.Name != l.Line[len(l.Line)-1].Function.Name {
				t.Fatalf("sample %d frame %d: location %d, want %d", i, j, g.Location[j].ID, l.ID)
			}
		}
	}
}
