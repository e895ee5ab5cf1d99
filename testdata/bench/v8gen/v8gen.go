// Package v8gen writes deterministic V8 CPU profiles of any size for
// benchmarks: a .cpuprofile (node --cpu-prof's layout: nodes, startTime,
// endTime, samples, timeDeltas) and a Chrome trace whose threads' samples
// are Profile and ProfileChunk events (DevTools' performance panel's
// layout), with X events between the chunks as a real trace has. The
// samples walk a call tree a step at a time, as a program's stack moves,
// so consecutive samples often share a node.
package v8gen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
)

// Tree is the call tree the samples walk: node i+1's parent is
// Parent[i] (0: none, the root).
type Tree struct {
	Parent   []int
	Children [][]int
}

// NewTree is a tree of n nodes (n ≥ 5): (root), (program), (idle),
// (garbage collector), then n-4 JavaScript functions in a tree of fanout
// about 4, from seed.
func NewTree(n int, seed uint64) *Tree {
	r := rand.New(rand.NewPCG(seed, 7))
	t := &Tree{Parent: make([]int, n), Children: make([][]int, n+1)}
	for id := 2; id <= n; id++ {
		p := 1
		if id > 4 {
			if id > 8 {
				p = 5 + r.IntN((id-5+3)/4+1)
				if p >= id {
					p = id - 1
				}
			}
		}
		t.Parent[id-1] = p
		t.Children[p] = append(t.Children[p], id)
	}
	return t
}

// callFrame writes node id's callFrame.
func callFrame(w io.Writer, id int) {
	switch id {
	case 1:
		io.WriteString(w, `{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1}`)
	case 2:
		io.WriteString(w, `{"functionName":"(program)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1}`)
	case 3:
		io.WriteString(w, `{"functionName":"(idle)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1}`)
	case 4:
		io.WriteString(w, `{"functionName":"(garbage collector)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1}`)
	default:
		fmt.Fprintf(w, `{"functionName":"fn%d","scriptId":"%d","url":"file:///app/src/module%d.js","lineNumber":%d,"columnNumber":%d}`, id, 10+id%60, id%60, id%900, id%80)
	}
}

// walker makes the samples: a stack that moves a step at a time.
type walker struct {
	t    *Tree
	r    *rand.Rand
	node int
}

func (w *walker) next() int {
	switch x := w.r.IntN(100); {
	case x < 40: // the same node
	case x < 42:
		w.node = 2 + w.r.IntN(3) // (program), (idle), (garbage collector)
	case x < 70 && w.node > 4:
		w.node = w.t.Parent[w.node-1]
		if w.node == 1 {
			w.node = 5
		}
	default:
		if w.node <= 4 {
			w.node = 5
		}
		if c := w.t.Children[w.node]; len(c) > 0 {
			w.node = c[w.r.IntN(len(c))]
		} else {
			w.node = w.t.Parent[w.node-1]
		}
	}
	return w.node
}

func (w *walker) delta() int { return 100 + w.r.IntN(60) }

// WriteCPUProfile writes a .cpuprofile of samples samples over nodes
// nodes.
func WriteCPUProfile(out io.Writer, samples, nodes int, seed uint64) error {
	w := bufio.NewWriterSize(out, 1<<20)
	t := NewTree(nodes, seed)
	w.WriteString(`{"nodes":[`)
	for id := 1; id <= nodes; id++ {
		if id > 1 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `{"id":%d,"callFrame":`, id)
		callFrame(w, id)
		fmt.Fprintf(w, `,"hitCount":0`)
		if c := t.Children[id]; len(c) > 0 {
			w.WriteString(`,"children":[`)
			for i, k := range c {
				if i > 0 {
					w.WriteByte(',')
				}
				fmt.Fprintf(w, "%d", k)
			}
			w.WriteByte(']')
		}
		w.WriteByte('}')
	}
	const start = 1_000_000
	wk := &walker{t: t, r: rand.New(rand.NewPCG(seed, 11)), node: 5}
	ids := make([]int, samples)
	deltas := make([]int, samples)
	end := start
	for i := range ids {
		ids[i], deltas[i] = wk.next(), wk.delta()
		end += deltas[i]
	}
	fmt.Fprintf(w, `],"startTime":%d,"endTime":%d,"samples":[`, start, end)
	for i, id := range ids {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "%d", id)
	}
	w.WriteString(`],"timeDeltas":[`)
	for i, d := range deltas {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "%d", d)
	}
	w.WriteString("]}\n")
	return w.Flush()
}

// TraceShape is what WriteChromeTrace writes.
type TraceShape struct {
	Bytes        int64 // about this many bytes in all
	Threads      int   // threads with a profile each
	Nodes        int   // of each thread's tree
	ChunkSamples int   // samples per ProfileChunk
	// XPerChunk is how many X events (tasks, with args) are written
	// between two chunks.
	XPerChunk int
	Seed      uint64
}

// countWriter counts the bytes written.
type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// WriteChromeTrace writes a trace-event JSON file of about s.Bytes bytes:
// metadata events, a Profile event per thread, then ProfileChunk events
// in turn, each bringing the nodes its samples reach first, with
// s.XPerChunk X events between them.
func WriteChromeTrace(out io.Writer, s TraceShape) error {
	bw := bufio.NewWriterSize(out, 1<<20)
	w := &countWriter{w: bw}
	fmt.Fprintf(w, `{"traceEvents":[{"args":{"name":"Renderer"},"cat":"__metadata","name":"process_name","ph":"M","pid":1,"tid":0,"ts":0}`)
	type thread struct {
		tid  int
		t    *Tree
		wk   *walker
		sent []bool
		ts   int64
	}
	const start = 1_000_000
	threads := make([]*thread, s.Threads)
	for i := range threads {
		t := NewTree(s.Nodes, s.Seed+uint64(i))
		th := &thread{tid: 10 + i, t: t, wk: &walker{t: t, r: rand.New(rand.NewPCG(s.Seed+uint64(i), 11)), node: 5}, sent: make([]bool, s.Nodes+1), ts: start}
		threads[i] = th
		name := "CrRendererMain"
		if i > 0 {
			name = fmt.Sprintf("DedicatedWorker thread %d", i)
		}
		fmt.Fprintf(w, `,{"args":{"name":%q},"cat":"__metadata","name":"thread_name","ph":"M","pid":1,"tid":%d,"ts":0}`, name, th.tid)
		fmt.Fprintf(w, `,{"args":{"data":{"startTime":%d}},"cat":"disabled-by-default-v8.cpu_profiler","id":"0x%x","name":"Profile","ph":"P","pid":1,"tid":%d,"ts":%d}`, start, i+1, th.tid, start)
	}
	r := rand.New(rand.NewPCG(s.Seed, 13))
	var newNodes []int
	ids := make([]int, s.ChunkSamples)
	deltas := make([]int, s.ChunkSamples)
	for k := 0; w.n < s.Bytes; k++ {
		th := threads[k%len(threads)]
		newNodes = newNodes[:0]
		chunkTS := th.ts
		for i := range ids {
			ids[i], deltas[i] = th.wk.next(), th.wk.delta()
			th.ts += int64(deltas[i])
			// A node is sent with the chunk of its first sample, after
			// its parents.
			var path []int
			for n := ids[i]; n != 0 && !th.sent[n]; n = th.t.Parent[n-1] {
				path = append(path, n)
			}
			for j := len(path) - 1; j >= 0; j-- {
				th.sent[path[j]] = true
				newNodes = append(newNodes, path[j])
			}
		}
		fmt.Fprintf(w, `,{"args":{"data":{"cpuProfile":{"nodes":[`)
		for j, n := range newNodes {
			if j > 0 {
				w.Write([]byte{','})
			}
			fmt.Fprintf(w, `{"callFrame":`)
			callFrame(w, n)
			fmt.Fprintf(w, `,"id":%d`, n)
			if p := th.t.Parent[n-1]; p != 0 {
				fmt.Fprintf(w, `,"parent":%d`, p)
			}
			w.Write([]byte{'}'})
		}
		io.WriteString(w, `],"samples":[`)
		for j, id := range ids {
			if j > 0 {
				w.Write([]byte{','})
			}
			fmt.Fprintf(w, "%d", id)
		}
		io.WriteString(w, `]},"timeDeltas":[`)
		for j, d := range deltas {
			if j > 0 {
				w.Write([]byte{','})
			}
			fmt.Fprintf(w, "%d", d)
		}
		fmt.Fprintf(w, `]}},"cat":"disabled-by-default-v8.cpu_profiler","id":"0x%x","name":"ProfileChunk","ph":"P","pid":1,"tid":%d,"ts":%d}`, k%len(threads)+1, th.tid, th.ts)
		for x := 0; x < s.XPerChunk; x++ {
			ts := chunkTS + int64(r.IntN(int(th.ts-chunkTS)+1))
			fmt.Fprintf(w, `,{"args":{"data":{"frame":"F%d","url":"https://example.com/app%d.js"}},"cat":"devtools.timeline","dur":%d,"name":"FunctionCall","ph":"X","pid":1,"tdur":%d,"tid":%d,"ts":%d}`, x%7, x%13, 20+r.IntN(500), 15+r.IntN(400), th.tid, ts)
		}
	}
	io.WriteString(w, "],\"metadata\":{\"source\":\"DevTools\"}}\n")
	return bw.Flush()
}
