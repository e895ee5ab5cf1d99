package jsonprof

import (
	"fmt"
	"math"
)

// v8Profile is one V8 CPU profile read as a stream: its call tree as its
// nodes arrive (all at once in a .cpuprofile, chunk by chunk in a
// trace's ProfileChunk events), and its samples and time deltas, paired
// as both arrive and put on the builder's timeline at once, so that it
// keeps its nodes, not its samples. A .cpuprofile writes all samples
// before all deltas: those wait for their deltas, run-length encoded.
type v8Profile struct {
	b  *builder
	tl *timeline

	// The tree: a node's index by its id; each node's parent (-1: none),
	// frame and flags; the nodes whose parent or child has not arrived.
	index         map[int64]int32
	parent, frame []int32
	flags         []uint8
	waitParent    map[int64][]int32 // a parent's id: its children read
	waitChild     map[int64]int32   // a child's id: its parent read

	// ready says the tree is read: samples are paired from then on.
	ready bool
	// startTime (µs) is when the first delta counts from.
	startTime float64

	// The samples and deltas read and not yet paired (one of them is
	// empty once ready), and what pairing them has reached: pairs paired,
	// the time of the last (µs from startTime), the last time a change
	// was put at, and the last two samples' node ids.
	runs               fifo[v8Run]
	deltas             fifo[int64]
	pairs              int64
	elapsed, lastValid int64
	prevID, lastID     int64
	queued             int64 // bytes of runs and deltas taken from the budget

	// The open nodes, root first, and scratch for the ones to open.
	open, toOpen []int32
}

// v8Run is a run of samples on one node.
type v8Run struct{ id, n int64 }

const (
	nodeIgnore = 1 << iota // (root), (idle): not a frame
	nodeOnTop              // (program), (garbage collector): on top of the stack before it
	nodeOpen               // on the open stack now
)

// nodeMemory is what a node of the tree takes (its index entry, parent,
// frame, flags; its frame's share of the builder's frames).
const nodeMemory = 160

func newV8Profile(b *builder, th int32, typ int) *v8Profile {
	return &v8Profile{b: b, tl: b.timeline(th, typ, true), index: map[int64]int32{}}
}

// addNodes adds a batch of nodes to the tree. Within a batch, links are
// made as DevTools makes them for a whole profile: a node's parent field,
// then the children lists of the nodes after it, in order; a link to a
// node of a later batch is made when that node arrives.
func (p *v8Profile) addNodes(nodes []v8Node) error {
	var bytes int64
	first := int32(len(p.parent))
	for _, n := range nodes {
		i := int32(len(p.parent))
		fn := n.CallFrame.FunctionName
		var fl uint8
		if fn == "(root)" || fn == "(idle)" || n.CallFrame.URL == "native dummy.js" {
			fl |= nodeIgnore
		}
		if fn == "(garbage collector)" || fn == "(program)" {
			fl |= nodeOnTop
		}
		p.parent = append(p.parent, -1)
		p.frame = append(p.frame, p.b.frame(n.CallFrame.frame(true)))
		p.flags = append(p.flags, fl)
		p.index[n.ID] = i
		if c, ok := p.waitChild[n.ID]; ok {
			p.parent[i] = c
			delete(p.waitChild, n.ID)
		}
		for _, c := range p.waitParent[n.ID] {
			p.parent[c] = i
		}
		delete(p.waitParent, n.ID)
		bytes += nodeMemory + int64(len(fn)+len(n.CallFrame.URL))
	}
	for k, n := range nodes {
		i := first + int32(k)
		if n.Parent != nil {
			if pi, ok := p.index[*n.Parent]; ok {
				p.parent[i] = pi
			} else {
				if p.waitParent == nil {
					p.waitParent = map[int64][]int32{}
				}
				p.waitParent[*n.Parent] = append(p.waitParent[*n.Parent], i)
			}
		}
		for _, c := range n.Children {
			if ci, ok := p.index[c]; ok {
				p.parent[ci] = i
			} else {
				if p.waitChild == nil {
					p.waitChild = map[int64]int32{}
				}
				p.waitChild[c] = i
			}
		}
	}
	return p.b.keep(bytes)
}

// samples adds sample node ids, pairing them with deltas read before.
func (p *v8Profile) samples(ids ...int64) error {
	for _, id := range ids {
		if p.ready && p.runs.Len() == 0 && p.deltas.Len() > 0 {
			d := *p.deltas.Front()
			p.deltas.Pop()
			if err := p.pair(id, d); err != nil {
				return err
			}
			continue
		}
		if p.runs.Len() > 0 && p.runs.Back().id == id {
			p.runs.Back().n++
			continue
		}
		p.runs.Push(v8Run{id, 1})
		if err := p.queue(int64(p.runs.Cap()) * 16); err != nil {
			return err
		}
	}
	return nil
}

// delta adds the time (µs) from a sample to the next, the first from
// startTime, pairing it with the first sample read before.
func (p *v8Profile) delta(d int64) error {
	if p.ready && p.deltas.Len() == 0 && p.runs.Len() > 0 {
		r := p.runs.Front()
		id := r.id
		if r.n--; r.n == 0 {
			p.runs.Pop()
		}
		return p.pair(id, d)
	}
	p.deltas.Push(d)
	return p.queue(int64(p.deltas.Cap()) * 8)
}

// queue takes the memory of the samples or deltas waiting, n bytes of
// one slice, from the budget in steps.
func (p *v8Profile) queue(n int64) error {
	if n <= p.queued {
		return nil
	}
	more := max(n-p.queued, 64<<10)
	p.queued += more
	return p.b.keep(more)
}

// pump pairs the samples and deltas read before the tree was ready.
func (p *v8Profile) pump() error {
	p.ready = true
	for p.runs.Len() > 0 && p.deltas.Len() > 0 {
		r := p.runs.Front()
		if err := p.pair(r.id, *p.deltas.Front()); err != nil {
			return err
		}
		p.deltas.Pop()
		if r.n--; r.n == 0 {
			p.runs.Pop()
		}
	}
	return nil
}

// pair reads one sample and its delta as speedscope's
// importFromChromeCPUProfile does: a change of node is put on the
// timeline at the sample's time, made monotonic.
func (p *v8Profile) pair(id, d int64) error {
	if p.pairs == 0 {
		p.elapsed = d
		p.lastValid = d
	} else {
		p.elapsed += d
	}
	p.pairs++
	p.prevID, p.lastID = p.lastID, id
	if p.pairs == 1 || id != p.prevID {
		return p.change(id)
	}
	return nil
}

// end puts the profile's end on the timeline: the samples' last change
// as speedscope has it (the node of the last sample but one, at the last
// sample's time). unpaired is how many samples have no delta.
func (p *v8Profile) end() (unpaired int64, err error) {
	if !p.ready {
		if err := p.pump(); err != nil {
			return 0, err
		}
	}
	for ; p.runs.Len() > 0; p.runs.Pop() {
		unpaired += p.runs.Front().n
	}
	if p.pairs >= 2 {
		err = p.change(p.prevID)
	}
	p.runs.Reset()
	p.deltas.Reset()
	return unpaired, err
}

// clamp is the elapsed time, never before the last change's.
func (p *v8Profile) clamp() int64 {
	if p.elapsed < p.lastValid {
		return p.lastValid
	}
	p.lastValid = p.elapsed
	return p.elapsed
}

// change opens and closes frames so that node id is the innermost open
// one, at the current time: (root) and (idle) are not frames; (program)
// and (garbage collector) are put on top of the stack before them.
func (p *v8Profile) change(id int64) error {
	at := (int64(math.Round(p.startTime)) + p.clamp()) * 1000
	if err := p.tl.advance(at); err != nil {
		return err
	}
	node, ok := p.index[id]
	if !ok {
		return nil
	}
	last := func() int32 {
		if len(p.open) == 0 {
			return -1
		}
		return p.open[len(p.open)-1]
	}
	up := func(n int32) int32 {
		if p.flags[n]&nodeOnTop != 0 {
			return last()
		}
		return p.parent[n]
	}
	// A malformed tree may have cycles: no walk is longer than the tree.
	lca := node
	for steps := 0; lca >= 0 && p.flags[lca]&nodeOpen == 0; steps++ {
		if steps > len(p.parent) {
			p.b.skip(fmt.Sprintf("a sample of node %d, whose parents make a cycle", id))
			return nil
		}
		lca = up(lca)
	}
	for len(p.open) > 0 && last() != lca {
		p.flags[last()] &^= nodeOpen
		p.open = p.open[:len(p.open)-1]
		if err := p.tl.close(at); err != nil {
			return err
		}
	}
	p.toOpen = p.toOpen[:0]
	for n := node; n >= 0 && n != lca && p.flags[n]&nodeIgnore == 0; n = up(n) {
		if len(p.toOpen) > len(p.parent) {
			p.b.skip(fmt.Sprintf("a sample of node %d, whose parents make a cycle", id))
			return nil
		}
		p.toOpen = append(p.toOpen, n)
	}
	for i := len(p.toOpen) - 1; i >= 0; i-- {
		n := p.toOpen[i]
		if p.flags[n]&nodeOpen != 0 {
			break // a cycle in a malformed tree
		}
		if err := p.tl.open(p.frame[n], at); err != nil {
			return err
		}
		p.flags[n] |= nodeOpen
		p.open = append(p.open, n)
	}
	return nil
}
