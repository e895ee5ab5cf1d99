package flame

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
func (f *frames) expand(s stack, dst []int32) []int32 {
	for j := len(s.locs) - 1; j >= 0; j-- {
		dst = f.appendLoc(dst, s.locs[j])
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
