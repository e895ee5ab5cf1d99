package flame

// A timeline range holds a fraction of the profile's samples, so its tree's
// merge threshold (a fraction of the range's total) is a fraction of a
// sample: nearly every stack in the range stays, as a column of frames of
// its own, and a range of 1/12 of the samples had more nodes than the whole
// profile's tree (108,595 against 72,626 on the benchmark profile). Such
// columns are narrower than a pixel; Options.MaxNodes merges them, raising
// the threshold by factors of two until the tree fits, and zooming opens
// them (flame.json?z= compacts at the zoomed frame's total).

// maxNodesLevels is how many doublings of the merge fraction MaxNodes may
// take: up to 1/200 of the root from DefaultMinFraction (ten pixels of a
// 2000-pixel graph, maxWidthFraction), past which the Budget decides.
const maxNodesLevels = 7

// fractionFor is the smallest of minFrac·2^k (k < maxNodesLevels, the
// fraction not over maxWidthFraction) at which compacting ft keeps at most
// maxNodes nodes, or the largest tried when none does; minFrac itself when
// maxNodes is not positive. It counts, in one pass over ft, each level's
// kept nodes and merged "…" nodes, without compacting.
func (ft *full) fractionFor(minFrac float64, maxNodes int) float64 {
	if maxNodes <= 0 || len(ft.name) <= maxNodes {
		return minFrac
	}
	var thresh []int64
	frac := minFrac
	for len(thresh) < maxNodesLevels && (len(thresh) == 0 || frac <= maxWidthFraction) {
		thresh = append(thresh, threshold(ft, frac))
		frac *= 2
	}
	levels := len(thresh)
	// level[i]: how many thresholds node i's total reaches; node i is kept
	// at level k < level[i]. A node's total is at least its children's.
	level := make([]int8, len(ft.name))
	for i, v := range ft.total {
		v = abs(v)
		l := 0
		for l < levels && v >= thresh[l] {
			l++
		}
		level[i] = int8(l)
	}
	level[0] = int8(levels) // the root is always drawn
	// A parent kept at level k has a "…" node there when a child is not:
	// at the levels from its lowest child's level to its own, exclusive.
	minChild := make([]int8, len(ft.name))
	for i := range minChild {
		minChild[i] = int8(levels)
	}
	for i := 1; i < len(ft.name); i++ {
		p := ft.parent[i]
		minChild[p] = min(minChild[p], level[i])
	}
	count := make([]int, levels+1) // nodes per level, as a difference array
	for i := range ft.name {
		count[0]++
		count[level[i]]--
		if m := minChild[i]; m < level[i] {
			count[m]++
			count[level[i]]--
		}
	}
	n := 0
	for k := 0; k < levels; k++ {
		n += count[k]
		if n <= maxNodes {
			return minFrac * float64(int(1)<<k)
		}
	}
	return minFrac * float64(int(1)<<(levels-1))
}
