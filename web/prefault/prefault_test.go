package prefault

import (
	"slices"
	"testing"
)

// TestGrowKeepsContents checks that Grow is slices.Grow: the elements kept,
// room for n more, the same slice when it has room; and that Slice leaves
// an array's contents as they were.
func TestGrowKeepsContents(t *testing.T) {
	s := make([]int64, 0, 4)
	for i := range 300000 { // past minBytes, several new arrays
		if len(s) == cap(s) {
			s = Grow(s, len(s))
		}
		s = append(s, int64(i))
	}
	for i, x := range s {
		if x != int64(i) {
			t.Fatalf("s[%d] = %d after growing", i, x)
		}
	}
	if g := Grow(s, cap(s)-len(s)); &g[0] != &s[0] {
		t.Error("Grow made a new array for room s has")
	}
	if g := Grow(s, 1<<20); cap(g)-len(g) < 1<<20 || !slices.Equal(g, s) {
		t.Errorf("Grow(s, 1<<20): room %d, equal %v", cap(g)-len(g), slices.Equal(g, s))
	}
	c := slices.Clone(s)
	Slice(s)
	Slice(s[:0])
	Slice([]byte(nil))
	if !slices.Equal(c, s) {
		t.Error("Slice changed what the array holds")
	}
}
