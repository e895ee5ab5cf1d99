package flame

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortSeqs checks the radix sort against a comparison sort of the
// same stacks: shared prefixes, prefixes of each other, equal stacks,
// empty ones, on one goroutine and on two.
func TestSortSeqs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 13, 200, 5000} {
		ws := make([]weighted, n)
		for i := range ws {
			seq := []int32{1, 2}[:r.IntN(3)%2+1]
			for len(seq) < r.IntN(40) {
				seq = append(seq, int32(r.IntN(4)-1)) // -1 too: keys are signed
			}
			if r.IntN(5) == 0 {
				seq = nil
			}
			ws[i] = weighted{seq: seq, v: int64(i)}
		}
		for _, min := range []int{1 << 30, 2} {
			was := parallelSortMin
			parallelSortMin = min
			order := make([]int32, n)
			for i := range order {
				order[i] = int32(i)
			}
			sortSeqs(order, ws, nil)
			parallelSortMin = was
			if len(order) != n {
				t.Fatalf("n %d: %d indices after the sort", n, len(order))
			}
			seen := make([]bool, n)
			for i, o := range order {
				if seen[o] {
					t.Fatalf("n %d: index %d twice", n, o)
				}
				seen[o] = true
				if i > 0 && slices.Compare(ws[order[i-1]].seq, ws[o].seq) > 0 {
					t.Fatalf("n %d, parallel from %d: %v before %v", n, min, ws[order[i-1]].seq, ws[o].seq)
				}
			}
		}
	}
}

// TestPrunedTrieCompactsAsTheFullOne checks that the trie without the
// descendants of small nodes compacts, at its fraction and at larger
// ones, to the full trie's tree, and that fractionFor finds the same
// fraction in both, on random stacks with negative values too.
func TestPrunedTrieCompactsAsTheFullOne(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fr := &frames{names: []string{RootName}, nameMapping: []int32{-1}, src: &nameSources{}}
	for i := 1; i <= 6; i++ {
		fr.names = append(fr.names, string(rune('a'+6-i))) // name order unlike ID order
		fr.nameMapping = append(fr.nameMapping, -1)
	}
	for round := range 40 {
		ws := make([]weighted, 1+r.IntN(3000))
		for i := range ws {
			var seq []int32
			for n := r.IntN(12); len(seq) < n; {
				seq = append(seq, int32(1+r.IntN(6)))
			}
			v := int64(1 + r.IntN(1000))
			if round%4 == 3 && r.IntN(5) == 0 {
				v = -v
			}
			ws[i] = weighted{seq: seq, v: v, base: int64(1 + r.IntN(3))}
		}
		sortStacks(ws, nil)
		whole := buildSortedTrie(ws, true, nil)
		for _, minFrac := range []float64{0, 1.0 / 20000, 0.001, 0.01, 0.05} {
			pruned := buildPrunedTrie(ws, true, minFrac, nil)
			for _, frac := range []float64{minFrac, minFrac * 4, 0.02, 0.1} {
				if frac < minFrac {
					continue
				}
				want, got := compact(whole, fr, frac), compact(pruned, fr, frac)
				if !slices.Equal(got.Nodes, want.Nodes) || !slices.Equal(got.Base, want.Base) {
					t.Fatalf("round %d, pruned at %v, compacted at %v: %d nodes, want %d", round, minFrac, frac, len(got.Nodes), len(want.Nodes))
				}
			}
			for _, maxNodes := range []int{1, 10, 50, 200} {
				if g, w := pruned.fractionFor(minFrac, maxNodes), whole.fractionFor(minFrac, maxNodes); g != w {
					t.Fatalf("round %d, pruned at %v: fractionFor(%d) %v, want %v", round, minFrac, maxNodes, g, w)
				}
			}
		}
	}
}
