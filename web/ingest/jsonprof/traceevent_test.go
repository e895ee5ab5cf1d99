package jsonprof

import (
	"testing"

	"viewer/symbolize/sampling"
)

// TestUnnamedEndClosesInnermost reads B events ended by E events without
// a name, which the Trace Event Format allows: each ends the innermost
// open span, so inner weighs 1–5 µs and outer the rest, 0–1 and 5–9 µs,
// and nothing is skipped. An unnamed E among named ones at one time ends
// the innermost span first.
func TestUnnamedEndClosesInnermost(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]int64
	}{
		{"unnamed ends", `{"traceEvents":[{"ph":"B","name":"outer","ts":0,"pid":1,"tid":1},{"ph":"B","name":"inner","ts":1,"pid":1,"tid":1},
			{"ph":"E","ts":5,"pid":1,"tid":1},{"ph":"E","ts":9,"pid":1,"tid":1}]}`,
			map[string]int64{"outer": 5000, "outer;inner": 4000}},
		{"an unnamed end after outer's at one time", `[{"ph":"B","name":"outer","ts":0,"pid":1,"tid":1},{"ph":"B","name":"inner","ts":1,"pid":1,"tid":1},
			{"ph":"E","name":"outer","ts":5,"pid":1,"tid":1},{"ph":"E","ts":5,"pid":1,"tid":1},{"ph":"B","name":"next","ts":6,"pid":1,"tid":1},{"ph":"E","ts":8,"pid":1,"tid":1}]`,
			map[string]int64{"outer": 1000, "outer;inner": 4000, "next": 2000}},
	} {
		p, err := ParseTraceEvents([]byte(tc.in), Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := byStack(p, 0)
		if len(got) != len(tc.want) {
			t.Errorf("%s: stacks %v, want %v", tc.name, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: stacks %v, want %v", tc.name, got, tc.want)
				break
			}
		}
		if w := sampling.Warnings(p); len(w) > 0 {
			t.Errorf("%s: warnings %q, want none", tc.name, w)
		}
	}
}
