package elfsym

import "testing"

func TestDemangle(t *testing.T) {
	for _, tc := range []struct {
		in, short, full string
	}{
		{"main", "main", "main"},
		{"__GI__exit", "__GI__exit", "__GI__exit"},
		{"_ZN6shapes11AccumulatorIiE3addEi", "shapes::Accumulator<int>::add", "shapes::Accumulator<int>::add(int)"},
		{"_ZNK6shapes5Point9manhattanEv.isra.0", "shapes::Point::manhattan", "shapes::Point::manhattan() const [clone .isra.0]"},
		// Rust, legacy and v0 mangling.
		{"_ZN4core3fmt5write17h01234567890abcdeE", "core::fmt::write", "core::fmt::write"},
		{"_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example", "mycrate::example"},
	} {
		if got := Demangle(tc.in, false); got != tc.short {
			t.Errorf("Demangle(%q, false) = %q, want %q", tc.in, got, tc.short)
		}
		if got := Demangle(tc.in, true); got != tc.full {
			t.Errorf("Demangle(%q, true) = %q, want %q", tc.in, got, tc.full)
		}
	}
}
