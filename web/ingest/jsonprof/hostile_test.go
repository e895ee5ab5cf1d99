package jsonprof

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// hostileShapes are the sample orders of hostileCPUProfile: each moves
// between far-apart nodes of a deep tree at every sample, so that a
// reader comparing each sample's stack with the previous one frame by
// frame does work in proportion to depth × samples.
var hostileShapes = []string{"root", "siblings", "sawtooth"}

// hostileCPUProfile is a V8 CPU profile of a (root) node over chains of
// depth nodes f0…f(depth-1) and samples samples 1 µs apart, in one of
// hostileShapes: "root" alternates the deepest node and (root);
// "siblings" alternates the deepest nodes of two chains under (root),
// g0… beside f0…; "sawtooth" samples f(depth/4-1), f(depth/2-1),
// f(3·depth/4-1), f(depth-1), then again from the first. trace puts it
// in a Chrome trace as a Profile event and ProfileChunk events of 1,000
// nodes, then of 1,000 samples, the nodes naming their parent.
func hostileCPUProfile(shape string, depth, samples int, trace bool) []byte {
	type node struct {
		id, parent int
		name       string
	}
	nodes := []node{{1, 0, "(root)"}}
	chain := func(prefix string) int {
		parent := 1
		for i := range depth {
			id := len(nodes) + 1
			nodes = append(nodes, node{id, parent, fmt.Sprintf("%s%d", prefix, i)})
			parent = id
		}
		return parent
	}
	deepest := chain("f")
	first := nodes[1].id // f0
	var other int
	if shape == "siblings" {
		other = chain("g")
	}
	ids := make([]int, samples)
	for i := range ids {
		switch shape {
		case "root":
			ids[i] = deepest
			if i%2 == 1 {
				ids[i] = 1
			}
		case "siblings":
			ids[i] = deepest
			if i%2 == 1 {
				ids[i] = other
			}
		case "sawtooth":
			ids[i] = first + ((i%4)+1)*depth/4 - 1
		default:
			panic("no shape " + shape)
		}
	}
	var b strings.Builder
	writeNode := func(k int, n node, parentField bool) {
		fmt.Fprintf(&b, `%s{"id":%d,"callFrame":{"functionName":%q,"scriptId":"1","url":"file:///a.js","lineNumber":%d,"columnNumber":0}`, comma(k), n.id, n.name, n.id)
		if parentField && n.parent > 0 {
			fmt.Fprintf(&b, `,"parent":%d`, n.parent)
		}
		b.WriteString(`}`)
	}
	ints := func(k0 int, vs []int) {
		for k, v := range vs {
			fmt.Fprintf(&b, "%s%d", comma(k0+k), v)
		}
	}
	ones := make([]int, samples)
	for i := range ones {
		ones[i] = 1
	}
	if !trace {
		b.WriteString(`{"nodes":[`)
		for k, n := range nodes {
			writeNode(k, n, true)
		}
		b.WriteString(`],"startTime":0,"endTime":0,"samples":[`)
		ints(0, ids)
		b.WriteString(`],"timeDeltas":[`)
		ints(0, ones)
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	b.WriteString(`{"traceEvents":[{"pid":1,"tid":2,"ph":"P","name":"Profile","id":"0x1","ts":0,"args":{"data":{"startTime":0}}}`)
	const chunk = 1000
	for k := 0; k < len(nodes)+samples; k += chunk {
		b.WriteString(`,{"pid":1,"tid":2,"ph":"P","name":"ProfileChunk","id":"0x1","ts":1,"args":{"data":{"cpuProfile":{"nodes":[`)
		for j, n := range nodes[min(k, len(nodes)):min(k+chunk, len(nodes))] {
			writeNode(j, n, true)
		}
		s0, s1 := max(k-len(nodes), 0), max(min(k+chunk-len(nodes), samples), 0)
		b.WriteString(`],"samples":[`)
		ints(0, ids[s0:s1])
		b.WriteString(`]},"timeDeltas":[`)
		ints(0, ones[s0:s1])
		b.WriteString(`]}}}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkHostileCPUProfile reads hostileCPUProfile's shapes of 2,000
// nodes deep and 10,000 samples, as a .cpuprofile and as trace events.
func BenchmarkHostileCPUProfile(b *testing.B) {
	const depth, samples = 2000, 10000
	for _, trace := range []bool{false, true} {
		for _, shape := range hostileShapes {
			name := shape
			if trace {
				name = "trace-" + shape
			}
			b.Run(name, func(b *testing.B) {
				data := hostileCPUProfile(shape, depth, samples, trace)
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					var err error
					if trace {
						_, err = ParseTraceEvents(data, Options{})
					} else {
						_, err = ParseCPUProfile(data, Options{})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestHostileSamplesWalk reads hostileCPUProfile's shapes, 3,000 nodes
// deep, 6,000 samples, as a .cpuprofile and as trace events: the nodes
// the read visits (stacks pushed, nodes of the tree walked) are a few per
// node and sample, not a few per frame of every sample's stack (9M when
// each sample closes and opens its whole stack). Counted, not timed.
func TestHostileSamplesWalk(t *testing.T) {
	const depth, samples = 3000, 6000
	for _, trace := range []bool{false, true} {
		for _, shape := range hostileShapes {
			data := hostileCPUProfile(shape, depth, samples, trace)
			var b *builder
			var err error
			if trace {
				b, err = readTrace(bytes.NewReader(data), Options{})
			} else {
				b, err = readCPUProfile(bytes.NewReader(data), Options{})
			}
			if err != nil {
				t.Fatalf("%s (trace %v): %v", shape, trace, err)
			}
			nodes := depth + 1
			if shape == "siblings" {
				nodes += depth
			}
			// A sample of a node the read opened before finds where its
			// stack and the one open part in O(log depth) steps.
			if most := 4*nodes + 64*samples; b.walked > most {
				t.Errorf("%s (trace %v): %d nodes visited for %d nodes and %d samples, over %d", shape, trace, b.walked, nodes, samples, most)
			}
			t.Logf("%s (trace %v): %d nodes visited, %.1f a node and sample", shape, trace, b.walked, float64(b.walked)/float64(nodes+samples))
		}
	}
}

// TestDeepStackWarnedOnce: one stack over the depth limit, sampled in
// several time buckets (the samples of a stack are kept apart per
// bucket), is one stack cut in the warning, which counted each bucket.
func TestDeepStackWarnedOnce(t *testing.T) {
	p, err := ParseCPUProfile(hostileCPUProfile("root", 200, 8000, false), Options{MaxStackDepth: 100})
	if err != nil {
		t.Fatal(err)
	}
	deep := 0
	for _, s := range p.Sample {
		if len(s.Location) == 100 {
			deep++
		}
	}
	w := strings.Join(p.Comments, "\n")
	if deep < 2 || !strings.Contains(w, "1 stacks were deeper than the 100-frame limit (the deepest had 200 frames)") {
		t.Errorf("%d sample records of the deep stack; warnings %q, want one stack cut", deep, w)
	}
}
