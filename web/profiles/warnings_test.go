package profiles

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/pprof/profile"
)

// TestMetaWarningsBounded: a profile's "warning: " comments become its
// meta's warnings, at most MaxMetaWarnings of them, each cut to
// MaxWarningBytes on a character boundary, the rest counted; other
// comments are not warnings; a meta.json from before warnings were kept
// reads as nil, a profile without warnings as empty.
func TestMetaWarningsBounded(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
	p.Comments = append(p.Comments, "perf.data: 12 samples", "warning: "+strings.Repeat("é", MaxWarningBytes)) // 2 bytes each
	for i := range MaxMetaWarnings + 49 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: skipped line %d", i))
	}
	m := NewMeta(p, "x", "pprof", 1)
	if len(m.Warnings) != MaxMetaWarnings || m.WarningsOmitted != 50 {
		t.Fatalf("%d warnings, %d omitted; want %d and 50", len(m.Warnings), m.WarningsOmitted, MaxMetaWarnings)
	}
	if w := m.Warnings[0]; len(w) > MaxWarningBytes+len("…") || !utf8.ValidString(w) || !strings.HasSuffix(w, "é…") {
		t.Errorf("the long warning is %d bytes (valid UTF-8: %v), ending %q; want it cut to %d on a character boundary", len(w), utf8.ValidString(w), w[len(w)-8:], MaxWarningBytes)
	}
	if m.Warnings[1] != "skipped line 0" {
		t.Errorf("second warning %q", m.Warnings[1])
	}

	var old Meta
	if err := json.Unmarshal([]byte(`{"format":"pprof","size":1}`), &old); err != nil || old.Warnings != nil {
		t.Errorf("an old meta.json reads warnings %#v, want nil (not kept)", old.Warnings)
	}
	b, _ := json.Marshal(NewMeta(&profile.Profile{}, "", "pprof", 1))
	var clean Meta
	if err := json.Unmarshal(b, &clean); err != nil || clean.Warnings == nil || len(clean.Warnings) != 0 {
		t.Errorf("a clean profile's meta.json %s reads warnings %#v, want empty, not nil", b, clean.Warnings)
	}
}
