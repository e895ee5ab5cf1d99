package jsonprof

import (
	"fmt"
	"math"
	"slices"
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

	// The open nodes: the canonical stack of node base (-1: none; see
	// v8Shape), then the nodes of open on top of it, root first, each
	// with the trie node of the stack it ends (openStack); and scratch
	// for the ones to open. A sample of a plain node (v8Shape) makes
	// the open nodes its canonical stack at once, whatever they were, so
	// that a sample costs a few steps, not a step per frame opened or
	// closed; the nodes whose stacks depend on what was open before
	// ((program) and the like) are opened and closed one by one.
	base            int32
	open, openStack []int32
	toOpen, path    []int32
	shapes          []v8Shape // of each node, once worked out (plain)
	tangled         bool      // a node whose shape was known was re-parented (tangle)
}

// v8Shape is what a node's parents make of its stack, once worked out
// (nodeShaped). A plain node's (nodePlain) parents up to the first
// (root)-like node are plain, and the parents of that one are all
// (root)-like: whenever it is sampled, its stack is its canonical stack,
// those plain nodes, whatever was open before. Any other node
// ((program) and (garbage collector), which go on top of what is open,
// the nodes over them, a (root)-like node between plain ones, a cycle)
// is walked as speedscope walks it.
type v8Shape struct {
	// depth is the frames of a plain node's canonical stack (0 for a
	// (root)-like node); the node under it there is its parent (none
	// at depth 1).
	depth int32
	// jump is a node of the canonical stack under it (skew-binary jump
	// pointers: Myers, "An applicative random-access stack", 1983), so
	// that finding the node at a depth of the stack, or where two
	// stacks part, takes O(log depth) steps.
	jump int32
	// stack is the trie node of the canonical stack once it was open,
	// noStack before.
	stack int32
}

const noStack = -2

// v8Run is a run of samples on one node.
type v8Run struct{ id, n int64 }

const (
	nodeIgnore = 1 << iota // (root), (idle): not a frame
	nodeOnTop              // (program), (garbage collector): on top of the stack before it
	nodeOpen               // on the open stack now
	nodeShaped             // its shape is worked out (v8Shape)
	nodePlain              // its shape is plain
)

// nodeMemory is what a node of the tree takes (its index entry, parent,
// frame, flags; its frame's share of the builder's frames).
const nodeMemory = 160

func newV8Profile(b *builder, th int32, typ int) *v8Profile {
	return &v8Profile{b: b, tl: b.timeline(th, typ, true), index: map[int64]int32{}, base: -1}
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
			p.setParent(c, i)
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
				p.setParent(ci, i)
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

// setParent makes parent the parent of node x. Once x's shape is worked
// out, the shapes and canonical stacks of the nodes under it may no
// longer be what its new parent makes them: the open nodes are then kept
// one by one from there on (tangle), as a malformed profile's may be
// anything.
func (p *v8Profile) setParent(x, parent int32) {
	if p.parent[x] != parent && p.flags[x]&nodeShaped != 0 {
		p.tangle()
	}
	p.parent[x] = parent
}

// tangle puts the nodes of the base's canonical stack among the open
// nodes one by one, and stops using shapes: every sample is walked.
func (p *v8Profile) tangle() {
	if p.tangled {
		return
	}
	p.tangled = true
	var nodes, stacks []int32
	for n := p.base; n >= 0; n = p.under(n) {
		p.b.walked++
		nodes = append(nodes, n)
		stacks = append(stacks, p.shapes[n].stack)
		p.flags[n] |= nodeOpen
	}
	slices.Reverse(nodes)
	slices.Reverse(stacks)
	p.open = append(nodes, p.open...)
	p.openStack = append(stacks, p.openStack...)
	p.base = -1
}

// plain reports whether node n is plain, working out the shapes of the
// nodes above it not worked out yet: each node's once.
func (p *v8Profile) plain(n int32) bool {
	if f := p.flags[n]; f&nodeShaped != 0 {
		return f&nodePlain != 0
	}
	if len(p.shapes) < len(p.parent) {
		p.shapes = append(p.shapes, make([]v8Shape, len(p.parent)-len(p.shapes))...)
	}
	// The nodes up to one whose shape is known, a (program)-like node
	// (whose parent does not matter), the top, or a cycle.
	path := p.path[:0]
	for top := n; top >= 0 && p.flags[top]&nodeShaped == 0; top = p.parent[top] {
		p.b.walked++
		if len(path) > len(p.parent) {
			for _, m := range path {
				p.flags[m] |= nodeShaped
			}
			p.path = path
			return false
		}
		path = append(path, top)
		if p.flags[top]&nodeOnTop != 0 {
			break
		}
	}
	p.path = path
	for i := len(path) - 1; i >= 0; i-- {
		m := path[i]
		p.flags[m] |= nodeShaped
		up := p.parent[m]
		var over v8Shape // a (root)-like node's, for a top node
		if up >= 0 {
			if p.flags[up]&nodePlain == 0 {
				continue
			}
			over = p.shapes[up]
		}
		s := v8Shape{jump: m, stack: noStack}
		switch {
		case p.flags[m]&nodeOnTop != 0:
			continue
		case p.flags[m]&nodeIgnore != 0:
			if over.depth > 0 {
				continue
			}
			s = v8Shape{jump: -1, stack: -1}
		case over.depth > 0:
			s.depth, s.jump = over.depth+1, up
			if j := over.jump; over.depth-p.shapes[j].depth == p.shapes[j].depth-p.shapes[p.shapes[j].jump].depth {
				s.jump = p.shapes[j].jump
			}
		default:
			s.depth = 1
		}
		p.flags[m] |= nodePlain
		p.shapes[m] = s
	}
	return p.flags[n]&nodePlain != 0
}

// under is the node under plain node n in its canonical stack, -1 if
// none.
func (p *v8Profile) under(n int32) int32 {
	if p.shapes[n].depth > 1 {
		return p.parent[n]
	}
	return -1
}

// ancestor is the node at depth d (≥ 1, ≤ n's) of plain node n's
// canonical stack.
func (p *v8Profile) ancestor(n int32, d int32) int32 {
	for p.shapes[n].depth > d {
		p.b.walked++
		if j := p.shapes[n].jump; p.shapes[j].depth >= d {
			n = j
		} else {
			n = p.parent[n]
		}
	}
	return n
}

// meet is the deepest node the canonical stacks of plain nodes a and b
// (-1: the empty stack) share, -1 if none.
func (p *v8Profile) meet(a, b int32) int32 {
	if a < 0 || b < 0 || p.shapes[a].depth == 0 || p.shapes[b].depth == 0 {
		return -1
	}
	d := min(p.shapes[a].depth, p.shapes[b].depth)
	a, b = p.ancestor(a, d), p.ancestor(b, d)
	for a != b {
		p.b.walked++
		if p.shapes[a].depth == 1 {
			return -1
		}
		// At one depth, the jumps reach one depth.
		if ja, jb := p.shapes[a].jump, p.shapes[b].jump; ja != jb {
			a, b = ja, jb
		} else {
			a, b = p.parent[a], p.parent[b]
		}
	}
	return a
}

// depthOf is the frames of plain node n's canonical stack (0 for -1).
func (p *v8Profile) depthOf(n int32) int {
	if n < 0 {
		return 0
	}
	return int(p.shapes[n].depth)
}

// stackOf is the trie node of the open nodes' stack.
func (p *v8Profile) stackOf() int32 {
	if len(p.openStack) > 0 {
		return p.openStack[len(p.openStack)-1]
	}
	if p.base >= 0 {
		return p.shapes[p.base].stack
	}
	return -1
}

// isOpen reports whether node n is open.
func (p *v8Profile) isOpen(n int32) bool {
	if p.flags[n]&nodeOpen != 0 {
		return true
	}
	if p.tangled || p.base < 0 || !p.plain(n) || p.shapes[n].depth == 0 || p.shapes[n].depth > p.shapes[p.base].depth {
		return false
	}
	return p.ancestor(p.base, p.shapes[n].depth) == n
}

// change opens and closes frames so that node id is the innermost open
// one, at the current time, as speedscope's importFromChromeCPUProfile
// does: (root) and (idle) are not frames; (program) and (garbage
// collector) are put on top of the stack before them. The builder counts
// the steps (tick) of every frame speedscope closes and opens, so that
// the read checks its context and takes the trie's memory where it
// always did; only the frames of a stack first opened are pushed one by
// one (moveTo).
func (p *v8Profile) change(id int64) error {
	at := (int64(math.Round(p.startTime)) + p.clamp()) * 1000
	if err := p.tl.advance(at); err != nil {
		return err
	}
	node, ok := p.index[id]
	if !ok {
		return nil
	}
	if !p.tangled && p.plain(node) {
		return p.moveTo(node)
	}
	return p.walk(node, id)
}

// moveTo makes plain node n's canonical stack the open one.
func (p *v8Profile) moveTo(n int32) error {
	if p.shapes[n].depth == 0 {
		n = -1 // a (root)-like node: no frame
	}
	meet := p.meet(n, p.base)
	closes := len(p.open) + p.depthOf(p.base) - p.depthOf(meet)
	for _, m := range p.open {
		p.b.walked++
		p.flags[m] &^= nodeOpen
	}
	p.open, p.openStack = p.open[:0], p.openStack[:0]
	p.base = meet
	if err := p.b.ticks(closes); err != nil {
		return err
	}
	// The stack's nodes whose trie node is not made yet: the last ones
	// opened, as a node's is made after its parent's.
	p.toOpen = p.toOpen[:0]
	for m := n; m >= 0 && p.shapes[m].stack == noStack; m = p.under(m) {
		p.b.walked++
		p.toOpen = append(p.toOpen, m)
	}
	if err := p.b.reopen(p.depthOf(n) - p.depthOf(meet) - len(p.toOpen)); err != nil {
		return err
	}
	for i := len(p.toOpen) - 1; i >= 0; i-- {
		m := p.toOpen[i]
		if err := p.b.tick(1); err != nil {
			return err
		}
		up := int32(-1)
		if u := p.under(m); u >= 0 {
			up = p.shapes[u].stack
		}
		p.shapes[m].stack = p.b.push(up, p.frame[m])
	}
	p.base = n
	p.tl.node = p.stackOf()
	return nil
}

// walk opens and closes frames one by one so that node n (of id) is the
// innermost open one, as speedscope does, for a node that is not plain
// or once the profile is tangled.
func (p *v8Profile) walk(node int32, id int64) error {
	last := func() int32 {
		if len(p.open) == 0 {
			return p.base
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
	for steps := 0; lca >= 0 && !p.isOpen(lca); steps++ {
		p.b.walked++
		if steps > len(p.parent) {
			p.b.skip(fmt.Sprintf("a sample of node %d, whose parents make a cycle", id))
			return nil
		}
		if !p.tangled && p.plain(lca) {
			// Its open parents are the base's.
			lca = p.meet(lca, p.base)
			break
		}
		lca = up(lca)
	}
	for len(p.open) > 0 && last() != lca {
		p.b.walked++
		p.flags[last()] &^= nodeOpen
		p.open = p.open[:len(p.open)-1]
		p.openStack = p.openStack[:len(p.openStack)-1]
		if err := p.b.tick(1); err != nil {
			return err
		}
	}
	if len(p.open) == 0 && p.base != lca {
		// lca is on the base's stack, or -1.
		closes := p.depthOf(p.base) - p.depthOf(lca)
		p.base = lca
		if err := p.b.ticks(closes); err != nil {
			return err
		}
	}
	p.tl.node = p.stackOf()
	p.toOpen = p.toOpen[:0]
	for n := node; n >= 0 && n != lca && p.flags[n]&nodeIgnore == 0; n = up(n) {
		p.b.walked++
		if len(p.toOpen) > len(p.parent) {
			p.b.skip(fmt.Sprintf("a sample of node %d, whose parents make a cycle", id))
			return nil
		}
		p.toOpen = append(p.toOpen, n)
	}
	for i := len(p.toOpen) - 1; i >= 0; i-- {
		n := p.toOpen[i]
		if p.isOpen(n) {
			break // a cycle in a malformed tree
		}
		if !p.tangled && p.plain(n) {
			p.tangle() // not met: a plain node is opened by its own samples
		}
		if err := p.b.tick(1); err != nil {
			return err
		}
		st := p.b.push(p.stackOf(), p.frame[n])
		p.flags[n] |= nodeOpen
		p.open = append(p.open, n)
		p.openStack = append(p.openStack, st)
		p.tl.node = st
	}
	return nil
}
