package flame

import "sort"

// weighted is one stack as frame name IDs, root first, with its value in
// the profile (v) and, for a differential tree, in the base profile (in a
// Stacks, base is the stack's sample count: samplecount.go).
type weighted struct {
	seq     []int32
	v, base int64
}

// buildTrie aggregates weighted stacks into a full call tree, like
// buildFull but from stacks already expanded to frames (filtered, inverted
// for a sandwich, or from two profiles for a diff). withBase keeps each
// node's base total. The build checks w (WithContext) as it goes.
func buildTrie(ws []weighted, withBase bool, work *work) *full {
	sortStacks(ws, work)
	return buildSortedTrie(ws, withBase, work)
}

// buildSortedTrie is buildTrie for stacks already in sortStacks' order
// (a Stacks' runs): sorting them again cost a tenth of the first
// flame.json's tree on the 2M-sample benchmark profile.
func buildSortedTrie(ws []weighted, withBase bool, work *work) *full {
	// One node per frame past the prefix a stack shares with the one
	// before: counted first, so the arrays are allocated once at their
	// size (shared prefixes make it well under the frame count).
	n := 1
	var prev []int32
	for _, w := range ws {
		n += len(w.seq) - lcp(w.seq, prev)
		prev = w.seq
	}
	ft := &full{name: make([]int32, 1, n), parent: make([]int32, 1, n), total: make([]int64, 1, n), self: make([]int64, 1, n)}
	ft.parent[0] = -1
	var baseSelf []int64
	if withBase {
		ft.base = make([]int64, 1, n)
		baseSelf = make([]int64, 1, n)
	}
	path := []int32{0}
	prev = nil
	for _, w := range ws {
		work.tick()
		cur := w.seq
		k := lcp(cur, prev)
		path = path[:k+1]
		for _, nm := range cur[k:] {
			c := int32(len(ft.name))
			ft.name = append(ft.name, nm)
			ft.parent = append(ft.parent, path[len(path)-1])
			ft.total = append(ft.total, 0)
			ft.self = append(ft.self, 0)
			if withBase {
				ft.base = append(ft.base, 0)
				baseSelf = append(baseSelf, 0)
			}
			path = append(path, c)
		}
		leaf := path[len(path)-1]
		ft.self[leaf] += w.v
		if withBase {
			baseSelf[leaf] += w.base
		}
		prev = cur
	}
	for i := len(ft.name) - 1; i >= 0; i-- {
		ft.total[i] += ft.self[i]
		if withBase {
			ft.base[i] += baseSelf[i]
		}
		if i > 0 {
			ft.total[ft.parent[i]] += ft.total[i]
			if withBase {
				ft.base[ft.parent[i]] += ft.base[i]
			}
		}
	}
	return ft
}

// expand returns the frames of a stack (leaf first locations), root first.
// A location of the decoder's array is found without a call (arrayIndex),
// 45M times in the 2M deep profile's first view.
func (f *frames) expand(s stack, dst []int32) []int32 {
	for j := len(s.locs) - 1; j >= 0; j-- {
		l := s.locs[j]
		i, ok := f.arrayIndex(l)
		if !ok {
			if i = f.mappedIndex(l); i < 0 {
				continue
			}
		}
		dst = f.appendFrames(dst, i)
	}
	return dst
}

// sortStacks sorts ws by frames, root first, checking w (WithContext) as
// it compares.
func sortStacks(ws []weighted, w *work) {
	order := make([]int32, len(ws))
	for i := range order {
		order[i] = int32(i)
	}
	sortSeqs(order, ws, w)
	sorted := make([]weighted, len(ws))
	for i, k := range order {
		sorted[i] = ws[k]
	}
	copy(ws, sorted)
}

// lcp is the length of the common prefix of a and b.
func lcp(a, b []int32) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// buildPrunedTrie is buildSortedTrie without the descendants of nodes
// whose total is under the threshold of minFrac: such a node is kept, as a
// leaf with its total (and base), since compacting at minFrac or above
// (any larger threshold) merges it into
// its parent's "…" node and never looks below it. Each node's total is
// a difference of prefix sums over its run of stacks, and a run's
// children are found by binary search on their frame at its depth, so
// the work is in the nodes kept, not in the frames: the whole trie of
// the 2M-sample profile was most of its first flame.json's tree.
func buildPrunedTrie(ws []weighted, withBase bool, minFrac float64, work *work) *full {
	sum := make([]int64, len(ws)+1)
	var nsum []int64
	if withBase {
		nsum = make([]int64, len(ws)+1)
	}
	for i, w := range ws {
		sum[i+1] = sum[i] + w.v
		if withBase {
			nsum[i+1] = nsum[i] + w.base
		}
	}
	// Sized for a node per two stacks (the 2M profile's 500k stacks make
	// 181k nodes): growing the arrays node by node was a third of this.
	n := len(ws)/2 + 1
	ft := &full{name: make([]int32, 1, n), parent: make([]int32, 1, n), total: make([]int64, 1, n), self: make([]int64, 1, n)}
	ft.parent[0], ft.total[0] = -1, sum[len(ws)]
	if withBase {
		ft.base = make([]int64, 1, n)
		ft.base[0] = nsum[len(ws)]
	}
	thresh := threshold(ft, minFrac)
	// A run of stacks ws[lo:hi] whose node, the frame at depth d under
	// parent, is not made yet. Nodes are made as they are popped, so they
	// are numbered in pre-order as buildSortedTrie's (a stack, not
	// recursion: a stack may be millions of frames deep without
	// --max-stack-depth).
	type pending struct {
		parent    int32
		lo, hi, d int
	}
	var stack, kids []pending
	// expand sets node's self, of the stacks ws[lo:hi] that end at depth
	// d (they come first: prefixes of the rest), and pushes its children.
	expand := func(node int32, lo, hi, d int) {
		k := lo + sort.Search(hi-lo, func(i int) bool { return len(ws[lo+i].seq) > d })
		ft.self[node] = sum[k] - sum[lo]
		kids = kids[:0]
		for a := k; a < hi; {
			b := runEnd(ws, a, hi, d)
			kids = append(kids, pending{node, a, b, d})
			a = b
		}
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
	expand(0, 0, len(ws), 0)
	for len(stack) > 0 {
		work.tick()
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c := int32(len(ft.name))
		v := sum[t.hi] - sum[t.lo]
		ft.name = append(ft.name, ws[t.lo].seq[t.d])
		ft.parent = append(ft.parent, t.parent)
		ft.total = append(ft.total, v)
		ft.self = append(ft.self, 0)
		if withBase {
			ft.base = append(ft.base, nsum[t.hi]-nsum[t.lo])
		}
		if abs(v) >= thresh {
			expand(c, t.lo, t.hi, t.d+1)
		}
	}
	return ft
}

// runEnd is the end of the run of ws[a:hi] with ws[a]'s frame at depth
// d, in stacks sorted by that frame: found by doubling steps, then
// binary search, in the logarithm of the run's length.
func runEnd(ws []weighted, a, hi, d int) int {
	key := ws[a].seq[d]
	lo, step := a+1, 1 // ws[lo-1] is in the run
	for lo < hi && ws[lo].seq[d] == key {
		next := min(hi, lo+step)
		if ws[next-1].seq[d] != key {
			hi = next - 1
			break
		}
		lo, step = next, 2*step
	}
	// The run ends in [lo, hi]: ws[lo-1] is in it, ws[hi] (if any) is not.
	return lo + sort.Search(hi-lo, func(i int) bool { return ws[lo+i].seq[d] != key })
}
