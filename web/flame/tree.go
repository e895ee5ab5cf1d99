package flame

import (
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/google/pprof/profile"

	"viewer/web/hashindex"
)

// DefaultMinFraction merges frames narrower than 1/20000 of the root: less
// than a tenth of a pixel on a 2000-pixel-wide graph.
const DefaultMinFraction = 1.0 / 20000

// Options tune Build.
type Options struct {
	// MinFraction: children whose total is below total(root)*MinFraction
	// are merged, per parent, into one MergedName node. Zero keeps every
	// frame; negative means DefaultMinFraction.
	MinFraction float64
	// Filter drops, keeps and hides frames as pprof's f, i, h and s do
	// (filter.go); the zero Filter keeps everything.
	Filter Filter
	// Budget bounds the built tree's nodes and bytes (budget.go).
	Budget Budget
	work   *work // from WithContext

	// CountType is 1 + the index of the sample type that counts each
	// sample's samples (ingest.CountIndex), for the sample counts of a
	// Stacks' trees (samplecount.go); 0 counts each sample record as one.
	CountType int
	// MaxNodes, when positive, raises MinFraction of a Stacks' tree by
	// factors of two until the tree has at most MaxNodes nodes (a
	// timeline range's, nodecap.go); unlike Budget, not a compaction.
	MaxNodes int
}

// Node is one frame of the tree. Nodes are in pre-order (parent before
// children, children sorted by name), so Depth alone gives the shape.
type Node struct {
	Name  int32 // index into Tree.Names
	Depth int32
	Total int64 // value of samples whose stack passes through this frame
	Self  int64 // value of samples whose stack ends at this frame
}

// Tree is a compacted call tree for one sample type.
type Tree struct {
	SampleType string
	Unit       string
	Names      []string // distinct labels; Names[0] is RootName
	Mapping    []int32  // per name: index into Mappings, -1 none
	Mappings   []string
	// Source is, per name, its file:line and whether it was inlined
	// (sources.go); empty for trees built without it.
	Source Source
	Nodes  []Node // pre-order; Nodes[0] is the root
	// Base is, in a differential tree (diff.go), each node's total in the
	// base profile; nil otherwise.
	Base []int64
	// Samples is, in a Stacks' tree, two per node: the node's total and
	// self count of samples of CountType ("": sample records,
	// samplecount.go); nil otherwise.
	Samples   []int64
	CountType string
	// Compaction says how the tree was cut to its budget (budget.go).
	Compaction *Compaction
	// MinTotal is the compaction threshold: children with a total under
	// it were merged into a MergedName node.
	MinTotal int64
	// Zoom is, in a zoomed tree (stacks.go), the zoom path as resolved:
	// one element per node Nodes[1..len(Zoom)], the chain from the root
	// to the zoomed frame.
	Zoom []string
}

// Total is the root's value.
func (t *Tree) Total() int64 {
	if len(t.Nodes) == 0 {
		return 0
	}
	return t.Nodes[0].Total
}

// full is the uncompacted tree built from samples, as parallel slices.
type full struct {
	name   []int32
	parent []int32
	total  []int64
	self   []int64
	base   []int64 // per node: total in the base profile (diff.go); nil otherwise
}

// Build aggregates the samples of p for sample index si into a call tree
// and compacts it per opt.
func Build(p *profile.Profile, si int, opt Options) *Tree {
	fr := newFrames(p)
	fr.work = opt.work
	var ft *full
	if opt.Filter.Active() {
		ft = buildTrie(opt.Filter.stacks(p, si, fr), false, fr.work) // filter.go
	} else {
		ft = buildFull(p, si, fr)
	}
	minFrac := opt.MinFraction
	if minFrac < 0 {
		minFrac = DefaultMinFraction
	}
	t := compact(ft, fr, minFrac)
	t = opt.Budget.fit(t, minFrac, func(f float64) *Tree { return compact(ft, fr, f) })
	if si >= 0 && si < len(p.SampleType) {
		t.SampleType, t.Unit = p.SampleType[si].Type, p.SampleType[si].Unit
	}
	return t
}

// buildFull aggregates samples into the full call tree. It avoids a
// per-frame map lookup: samples are first grouped by stack, each distinct
// stack is expanded to its frame names (root first), the sequences are
// sorted, and the tree is then built as a trie in one pass where every
// frame after the common prefix with the previous sequence is a new node.
func buildFull(p *profile.Profile, si int, fr *frames) *full {
	uniq := groupStacks(p, si)
	// Frame sequences, root first, in one buffer.
	off := make([]int32, len(uniq)+1)
	total := 0
	for _, u := range uniq {
		for _, l := range u.locs {
			total += len(fr.loc(l))
		}
	}
	seqs := make([]int32, 0, total)
	for i, u := range uniq {
		for j := len(u.locs) - 1; j >= 0; j-- {
			seqs = fr.appendLoc(seqs, u.locs[j])
		}
		off[i+1] = int32(len(seqs))
	}
	seq := func(i int32) []int32 { return seqs[off[i]:off[i+1]] }
	order := make([]int32, len(uniq))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return slices.Compare(seq(a), seq(b)) })

	n := len(seqs)*2/3 + 1
	ft := &full{
		name:   make([]int32, 1, n),
		parent: make([]int32, 1, n),
		total:  make([]int64, 1, n),
		self:   make([]int64, 1, n),
	}
	ft.parent[0] = -1
	path := []int32{0} // path[d] is the node at depth d of the previous sequence
	var prev []int32
	for _, u := range order {
		fr.tick()
		cur := seq(u)
		lcp := 0
		for lcp < len(cur) && lcp < len(prev) && cur[lcp] == prev[lcp] {
			lcp++
		}
		path = path[:lcp+1]
		for _, nm := range cur[lcp:] {
			c := int32(len(ft.name))
			ft.name = append(ft.name, nm)
			ft.parent = append(ft.parent, path[len(path)-1])
			ft.total = append(ft.total, 0)
			ft.self = append(ft.self, 0)
			path = append(path, c)
		}
		ft.self[path[len(path)-1]] += uniq[u].v
		prev = cur
	}
	// Nodes were created in pre-order, so children follow their parent:
	// sum totals bottom-up.
	for i := len(ft.name) - 1; i >= 0; i-- {
		ft.total[i] += ft.self[i]
		if i > 0 {
			ft.total[ft.parent[i]] += ft.total[i]
		}
	}
	return ft
}

// stack is a distinct sample stack (leaf first) and its summed value.
type stack struct {
	locs []*profile.Location
	v    int64
}

// groupStacks sums the values for sample index si of samples with the same
// stack, skipping zeros.
func groupStacks(p *profile.Profile, si int) []stack { return groupStacksOf(p, si, nil) }

// groupStacksOf is groupStacks that also writes, when of is not nil (one
// element per sample), the index of each sample's stack, -1 for a skipped
// sample: what the time index (timeindex.go) needs to find a sample's
// stack again. The stacks and their table are sized for a stack per
// sample: web/ingest's decoder merges the samples of one stack and labels
// into one, so most have a stack of their own, and growing both was a
// third of the 2M-sample profile's grouping.
func groupStacksOf(p *profile.Profile, si int, of []int32) []stack {
	uniq := make([]stack, 0, len(p.Sample))
	var t hashindex.Table
	t.Init(len(p.Sample))
	var sink int32 // what the batches loaded ahead, so that it is loaded
	var hs [stackBatch]uint64
	var ks [stackBatch]int32
	for lo := 0; lo < len(p.Sample); lo += stackBatch {
		// Hash a batch of samples, load the table slots they point to,
		// then find or add them: each slot's load misses the cache (the
		// table of a stack per sample is far larger than it), and the
		// loads of one batch overlap where one sample after another
		// waited for each (the map this replaced was most of the 2M
		// profile's grouping).
		m := 0
		for k := lo; k < min(lo+stackBatch, len(p.Sample)); k++ {
			s := p.Sample[k]
			if of != nil {
				of[k] = -1
			}
			if si >= len(s.Value) || s.Value[si] == 0 {
				continue
			}
			// Hashed by the locations' addresses, which sameStack compares:
			// reading each Location's ID instead cost a cache miss per frame.
			h := uint64(14695981039346656037)
			for _, l := range s.Location {
				h = (h ^ uint64(uintptr(unsafe.Pointer(l)))) * 1099511628211
			}
			h ^= uint64(len(s.Location))
			hs[m], ks[m] = h, int32(k)
			m++
		}
		for _, h := range hs[:m] {
			sink += t.Home(h)
		}
		for i, h := range hs[:m] {
			k := ks[i]
			s := p.Sample[k]
			slot, found := t.Find(h, func(j int32) bool { return sameStack(uniq[j].locs, s.Location) })
			if found >= 0 {
				uniq[found].v += s.Value[si]
			} else {
				found = int32(len(uniq))
				t.Insert(slot, h, found)
				uniq = append(uniq, stack{s.Location, s.Value[si]})
			}
			if of != nil {
				of[k] = found
			}
		}
	}
	if sink == -1<<31 { // (read, so that the loads ahead are not optimized away)
		uniq = uniq[:len(uniq):len(uniq)]
	}
	return uniq
}

// stackBatch is how many samples groupStacksOf hashes before it looks
// them up.
const stackBatch = 32

func sameStack(a, b []*profile.Location) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// compact emits ft in pre-order with children sorted by name, merging
// each parent's children below the threshold into one MergedName node.
func compact(ft *full, fr *frames, minFrac float64) *Tree {
	w := newTreeWriter(fr)
	w.subtree(ft, threshold(ft, minFrac), w.label(0), 0)
	return w.t
}

// threshold is the total under which a child of ft is merged: minFrac of
// ft's root total.
func threshold(ft *full, minFrac float64) int64 {
	return int64(float64(abs(ft.total[0])) * minFrac)
}

// treeWriter appends nodes to a Tree, interning their labels and mappings.
type treeWriter struct {
	t           *Tree
	fr          *frames
	outName     []int32         // frame name ID → output name index+1
	outMap      map[int32]int32 // frames mapping → output mapping
	outFile     map[string]int32
	mergedLabel int32
}

func newTreeWriter(fr *frames) *treeWriter {
	return &treeWriter{t: &Tree{}, fr: fr, outName: make([]int32, len(fr.names)), outMap: make(map[int32]int32), outFile: make(map[string]int32), mergedLabel: -1}
}

// label is the output name index of frame name nm.
func (w *treeWriter) label(nm int32) int32 {
	if o := w.outName[nm]; o > 0 {
		return o - 1
	}
	t, fr := w.t, w.fr
	o := int32(len(t.Names))
	t.Names = append(t.Names, fr.names[nm])
	m := int32(-1)
	if fm := fr.nameMapping[nm]; fm >= 0 {
		var ok bool
		if m, ok = w.outMap[fm]; !ok {
			m = int32(len(t.Mappings))
			t.Mappings = append(t.Mappings, fr.mappings[fm])
			w.outMap[fm] = m
		}
	}
	t.Mapping = append(t.Mapping, m)
	file, line, inl := fr.src.of(nm)
	t.Source.add(file, line, inl, w.outFile)
	w.outName[nm] = o + 1
	return o
}

// merged is the output name index of MergedName.
func (w *treeWriter) merged() int32 {
	if w.mergedLabel < 0 {
		w.mergedLabel = int32(len(w.t.Names))
		w.t.Names = append(w.t.Names, MergedName)
		w.t.Mapping = append(w.t.Mapping, -1)
		w.t.Source.add("", 0, NotInlined, w.outFile)
	}
	return w.mergedLabel
}

// subtree appends ft in pre-order, its root labelled rootLabel at depth,
// children sorted by name, each parent's children with a total under
// thresh merged into one MergedName node.
func (w *treeWriter) subtree(ft *full, thresh int64, rootLabel, depth int32) {
	t, fr := w.t, w.fr
	t.MinTotal = thresh
	nn := len(ft.name)
	// Children lists in CSR form.
	start := make([]int32, nn+1)
	for i := 1; i < nn; i++ {
		start[ft.parent[i]+1]++
	}
	for i := 0; i < nn; i++ {
		start[i+1] += start[i]
	}
	kids := make([]int32, max(nn-1, 0))
	fill := make([]int32, nn)
	copy(fill, start[:nn])
	for i := 1; i < nn; i++ {
		p := ft.parent[i]
		kids[fill[p]] = int32(i)
		fill[p]++
	}
	t.Nodes = slices.Grow(t.Nodes, nn/2+1)

	// A stack item is a real node, or (merged) the MergedName node standing
	// for the small children of a parent.
	type item struct {
		node   int32
		depth  int32
		merged bool
		value  int64
		base   int64
	}
	stack := []item{{node: 0, depth: depth}}
	var order []int32 // scratch: the kept children of one node
	for len(stack) > 0 {
		fr.tick()
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.merged {
			t.Nodes = append(t.Nodes, Node{Name: w.merged(), Depth: it.depth, Total: it.value, Self: it.value})
			if ft.base != nil {
				t.Base = append(t.Base, it.base)
			}
			continue
		}
		name := rootLabel
		if it.node != 0 {
			name = w.label(ft.name[it.node])
		}
		t.Nodes = append(t.Nodes, Node{Name: name, Depth: it.depth, Total: ft.total[it.node], Self: ft.self[it.node]})
		if ft.base != nil {
			t.Base = append(t.Base, ft.base[it.node])
		}
		cs := kids[start[it.node]:start[it.node+1]]
		if len(cs) == 0 {
			continue
		}
		order = order[:0]
		var merged, mergedBase int64
		nmerged := 0
		for _, c := range cs {
			if abs(ft.total[c]) < thresh {
				merged += ft.total[c]
				if ft.base != nil {
					mergedBase += ft.base[c]
				}
				nmerged++
				continue
			}
			order = append(order, c)
		}
		// (slices.SortFunc: sort.Slice allocates at each of the tree's nodes.)
		slices.SortFunc(order, func(a, b int32) int { return strings.Compare(fr.names[ft.name[a]], fr.names[ft.name[b]]) })
		// The merged node takes its place by name among its siblings.
		mergedAt := -1
		if nmerged > 0 {
			mergedAt = sort.Search(len(order), func(i int) bool { return fr.names[ft.name[order[i]]] > MergedName })
		}
		// Push in reverse so the first child pops first.
		d := it.depth + 1
		for i := len(order); i >= 0; i-- {
			if i < len(order) {
				stack = append(stack, item{node: order[i], depth: d})
			}
			if i == mergedAt {
				stack = append(stack, item{depth: d, merged: true, value: merged, base: mergedBase})
			}
		}
	}
}
