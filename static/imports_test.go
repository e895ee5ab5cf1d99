package static

import (
	"slices"
	"testing"
)

// TestImports reads the flame page's entry modules' imports from the
// scripts themselves: page.js imports flame.js and common.js (the second
// across several lines), flamestate.js and pagetimings.js, and no entry
// is listed as an import.
func TestImports(t *testing.T) {
	got := Imports("page.js", "framemenu.js", "timeline.js", "symbolize.js")
	for _, want := range []string{"flame.js", "common.js", "flamestate.js", "pagetimings.js"} {
		if !slices.Contains(got, want) {
			t.Errorf("Imports = %q, lacks %s", got, want)
		}
	}
	for _, e := range []string{"page.js", "framemenu.js", "timeline.js", "symbolize.js"} {
		if slices.Contains(got, e) {
			t.Errorf("Imports = %q lists the entry %s", got, e)
		}
	}
	if len(Imports("uploadchoice.js")) != 0 {
		t.Errorf("uploadchoice.js imports nothing, got %q", Imports("uploadchoice.js"))
	}
}
