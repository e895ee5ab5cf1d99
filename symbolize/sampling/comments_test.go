package sampling

import (
	"slices"
	"testing"

	"github.com/google/pprof/profile"
)

// TestWarnings: only the comments that start with WarningPrefix are
// warnings, listed in order without it.
func TestWarnings(t *testing.T) {
	p := &profile.Profile{Comments: []string{
		"warning: skipped 2 unreadable lines",
		CallSiteMark,
		"perf.data: unwound 10 stacks",
		"warning: 3 frame addresses fall in no recorded mapping",
		"a warning: not at the start",
	}}
	want := []string{"skipped 2 unreadable lines", "3 frame addresses fall in no recorded mapping"}
	if got := Warnings(p); !slices.Equal(got, want) {
		t.Errorf("Warnings = %q; want %q", got, want)
	}
	if got := Warnings(&profile.Profile{}); got != nil {
		t.Errorf("Warnings of a profile without comments = %q; want none", got)
	}
}
