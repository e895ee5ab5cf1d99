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
