package jsonprof

import (
	"fmt"
	"strings"
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

// TestTraceSamplesStacksMadeOnce reads a trace whose "samples" all name
// the leaf of a 20,000-deep chain of stackFrames: each frame's stack is
// made once, so the read takes steps in proportion to the frames and
// samples, not 20,000 per sample (400M steps).
func TestTraceSamplesStacksMadeOnce(t *testing.T) {
	const n = 20000
	var in strings.Builder
	in.WriteString(`{"traceEvents":[],"stackFrames":{`)
	for i := 1; i <= n; i++ {
		if i > 1 {
			in.WriteByte(',')
		}
		fmt.Fprintf(&in, `"%d":{"name":"f%d"`, i, i)
		if i > 1 {
			fmt.Fprintf(&in, `,"parent":%d`, i-1)
		}
		in.WriteByte('}')
	}
	in.WriteString(`},"samples":[`)
	for i := range n {
		if i > 0 {
			in.WriteByte(',')
		}
		fmt.Fprintf(&in, `{"pid":1,"tid":1,"ts":%d,"sf":%d}`, i, n)
	}
	in.WriteString(`]}`)
	b, err := readTrace(strings.NewReader(in.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if most := 4 * n; b.work > most {
		t.Errorf("%d steps to read %d frames and %d samples, over %d", b.work, n, n, most)
	}
	p, err := b.finish("trace events")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) == 0 || len(p.Sample[0].Location) != n || p.Sample[0].Location[0].Line[0].Function.Name != fmt.Sprintf("f%d", n) {
		t.Errorf("the samples' stack is not f1 … f%d", n)
	}
}
