package jsonprof

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// byStack sums sample type si per stack (root first, ";"-joined) and
// time label (-1 when none).
func byStack(p *profile.Profile, si int) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			names = append(names, s.Location[i].Line[0].Function.Name)
		}
		out[strings.Join(names, ";")] += s.Value[si]
	}
	return out
}

// TestCPUProfileWeighsGaps checks DevTools' reading of a .cpuprofile: a
// sample weighs the time to the next sample (timeDeltas, in µs), (idle)
// and (root) are not frames, and the samples keep their times.
func TestCPUProfileWeighsGaps(t *testing.T) {
	in := `{"nodes":[
		{"id":1,"callFrame":{"functionName":"(root)","url":"","lineNumber":-1},"children":[2,4]},
		{"id":2,"callFrame":{"functionName":"main","url":"file:///app.js","lineNumber":0},"children":[3]},
		{"id":3,"callFrame":{"functionName":"","url":"file:///lib/util.js","lineNumber":9}},
		{"id":4,"callFrame":{"functionName":"(idle)","url":""}}],
		"startTime":1000,"endTime":20000,
		"samples":[2,3,3,4,2,2],
		"timeDeltas":[0,1000,2000,4000,8000,3000]}`
	p, err := ParseCPUProfile([]byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := byStack(p, 0)
	// main: 1 ms, then 3 ms (from the 5th sample to the last, which weighs nothing);
	// main;(anonymous util.js:10): 2 ms + 4 ms; (idle): 8 ms, dropped.
	want := map[string]int64{"main": 1e6 + 3e6, "main;(anonymous util.js:10)": 6e6}
	if len(got) != len(want) || got["main"] != want["main"] || got["main;(anonymous util.js:10)"] != want["main;(anonymous util.js:10)"] {
		t.Errorf("stacks %v, want %v", got, want)
	}
	if p.SampleType[0].Unit != "nanoseconds" {
		t.Errorf("unit %q, want nanoseconds", p.SampleType[0].Unit)
	}
	// Times: main's first millisecond is at the start; its last 3 ms
	// run from 15 ms to 18 ms, in the 1 ms buckets they cover.
	var last int64
	for _, s := range p.Sample {
		ts := s.NumLabel[sampling.TimeLabel]
		if len(ts) != 1 {
			t.Fatalf("a sample without its time: %v", s.NumLabel)
		}
		last = max(last, ts[0])
	}
	if last != 17e6 {
		t.Errorf("the last sample is at %d ns, want the bucket of 17 ms", last)
	}
}

// TestSpeedscopeEventedKeepsTimes checks that an evented speedscope
// profile in a time unit keeps when its frames ran, relative to
// startValue, and that its name is the samples' thread.
func TestSpeedscopeEventedKeepsTimes(t *testing.T) {
	in := `{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"a"},{"name":"b","file":"b.py","line":3}]},
		"profiles":[{"type":"evented","name":"Thread 7","unit":"milliseconds","startValue":100,"endValue":400,
		"events":[{"type":"O","frame":0,"at":100},{"type":"O","frame":1,"at":150},{"type":"C","frame":1,"at":350},{"type":"C","frame":0,"at":400}]}]}`
	p, err := ParseSpeedscope([]byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := byStack(p, 0); got["a"] != 100e6 || got["a;b"] != 200e6 {
		t.Errorf("stacks %v, want a 100 ms and a;b 200 ms", got)
	}
	var first, last int64 = 1 << 62, 0
	for _, s := range p.Sample {
		if c := s.Label["comm"]; len(c) != 1 || c[0] != "Thread 7" {
			t.Errorf("comm %v, want the profile's name", s.Label["comm"])
		}
		at := s.NumLabel[sampling.TimeLabel][0]
		first, last = min(first, at), max(last, at)
	}
	if first != 0 || last < 250e6 || last >= 300e6 {
		t.Errorf("times from %d to %d ns; want 0 to the bucket before 300 ms", first, last)
	}
}

// TestFirefoxProcessed reads a profile in the processed format
// (profiler.firefox.com's own), its strings in shared.stringArray.
func TestFirefoxProcessed(t *testing.T) {
	in := `{"meta":{"startTime":5,"preprocessedProfileVersion":47},"shared":{"stringArray":["main","f","a.js"]},"threads":[{"name":"T","pid":"1","tid":2,` +
		`"samples":{"stack":[0,1,null,1],"time":[0,1,3,7],"length":4},"stackTable":{"frame":[0,1],"prefix":[null,0],"length":2},` +
		`"frameTable":{"func":[0,1],"line":[null,4],"column":[null,2],"length":2},"funcTable":{"name":[0,1],"fileName":[null,2],"length":2}}]}`
	p, err := ParseFirefox([]byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := byStack(p, 0)
	if len(got) != 1 || got["f"] != 2e6 {
		t.Errorf("stacks %v; want the JavaScript frame f (a.js:4:2) for 2 ms, main (no file) left out as speedscope does", got)
	}
	for _, s := range p.Sample {
		if s.Label["comm"][0] != "T" || s.NumLabel["pid"][0] != 1 || s.NumLabel["tid"][0] != 2 {
			t.Errorf("labels %v %v, want comm T, pid 1, tid 2", s.Label, s.NumLabel)
		}
	}
}

// TestCPUProfileLongSpan reads a .cpuprofile whose samples come in runs of
// two stacks with gaps from a microsecond to seconds, so that the time
// buckets its cells are summed in widen several times as it is read
// (builder.coarsen): each stack still weighs the sum of its gaps, as the
// gaps are added up here sample by sample.
func TestCPUProfileLongSpan(t *testing.T) {
	var samples, deltas []string
	want := map[string]int64{}
	r := rand.New(rand.NewPCG(3, 4))
	prev := ""
	for i := 0; i < 20_000; i++ {
		node, stack := "3", "main;a"
		if (i/(1+i%5))%2 == 1 {
			node, stack = "4", "main;b"
		}
		d := int64(1 + r.IntN(50))
		if r.IntN(500) == 0 {
			d = int64(r.IntN(3_000_000)) // up to 3 s
		}
		samples = append(samples, node)
		deltas = append(deltas, strconv.FormatInt(d, 10))
		if prev != "" {
			want[prev] += d * 1000 // the previous sample weighs the gap to this one
		}
		prev = stack
	}
	in := `{"nodes":[
		{"id":1,"callFrame":{"functionName":"(root)","url":"","lineNumber":-1},"children":[2]},
		{"id":2,"callFrame":{"functionName":"main","url":"file:///app.js","lineNumber":0},"children":[3,4]},
		{"id":3,"callFrame":{"functionName":"a","url":"file:///app.js","lineNumber":1}},
		{"id":4,"callFrame":{"functionName":"b","url":"file:///app.js","lineNumber":2}}],
		"startTime":0,"endTime":1,
		"samples":[` + strings.Join(samples, ",") + `],"timeDeltas":[` + strings.Join(deltas, ",") + `]}`
	p, err := ReadCPUProfile(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := byStack(p, 0)
	if len(got) != len(want) || got["main;a"] != want["main;a"] || got["main;b"] != want["main;b"] {
		t.Errorf("stacks %v, want %v", got, want)
	}
	buckets := map[int64]bool{}
	for _, s := range p.Sample {
		buckets[s.NumLabel[sampling.TimeLabel][0]] = true
	}
	if len(buckets) < 100 {
		t.Errorf("%d time buckets: the test should cover a long span in many", len(buckets))
	}
}
