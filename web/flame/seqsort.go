package flame

import (
	"slices"
	"sync"
)

// seqRange is a task of sortSeqs: order[lo:hi] share their first depth
// frames and are to be sorted by the frames from depth on.
type seqRange struct{ lo, hi, depth int }

// insertionMax is the largest range sortSeqs sorts by whole-stack
// comparisons instead of by one frame at a time.
const insertionMax = 12

// sortSeqs sorts order, indices of ws, by their frames (slices.Compare of
// the seqs), checking w as it goes. It sorts by one frame at a time, root
// first (a most-significant-digit radix sort): stacks share long
// prefixes, which a comparison sort walks again in every one of its
// n·log n comparisons (an eighth of the 2M-sample profile's upload),
// where this reads each stack's frames about once. Many stacks are split
// into ranges by their first frames, then the ranges are sorted on two
// goroutines.
func sortSeqs(order []int32, ws []weighted, w *work) {
	keys := make([]uint64, len(order)) // scratch: frame<<32 | index
	if len(order) < parallelSortMin {
		sortRange(order, keys, ws, seqRange{0, len(order), 0}, w)
		return
	}
	// Split the largest range until none holds more than half of the
	// stacks, then share the ranges out, largest first.
	tasks := []seqRange{{0, len(order), 0}}
	for len(tasks) > 0 {
		big := 0
		for i, t := range tasks {
			if t.hi-t.lo > tasks[big].hi-tasks[big].lo {
				big = i
			}
		}
		t := tasks[big]
		if 2*(t.hi-t.lo) <= len(order) {
			break
		}
		parts := splitRange(order, keys, ws, t, w, nil)
		tasks = append(append(tasks[:big:big], parts...), tasks[big+1:]...)
	}
	slices.SortFunc(tasks, func(a, b seqRange) int { return (b.hi - b.lo) - (a.hi - a.lo) })
	var mine, theirs []seqRange
	var nMine, nTheirs int
	for _, t := range tasks {
		if nMine <= nTheirs {
			mine, nMine = append(mine, t), nMine+t.hi-t.lo
		} else {
			theirs, nTheirs = append(theirs, t), nTheirs+t.hi-t.lo
		}
	}
	inTwo(w, func(w *work) {
		for _, t := range mine {
			sortRange(order, keys, ws, t, w)
		}
	}, func(w *work) {
		for _, t := range theirs {
			sortRange(order, keys, ws, t, w)
		}
	})
}

// inTwo runs a on this goroutine and b on another, each checking a work
// of w's context, and returns when both are done. A panic of b (a stop)
// is raised here.
func inTwo(w *work, a, b func(w *work)) {
	var wg sync.WaitGroup
	var stopped any
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { stopped = recover() }()
		b(w.fork())
	}()
	func() {
		defer wg.Wait() // the other goroutine is done before this one's panic goes on
		a(w)
	}()
	if stopped != nil {
		panic(stopped)
	}
}

// sortRange sorts order[t.lo:t.hi] by their frames from t.depth on.
func sortRange(order []int32, keys []uint64, ws []weighted, t seqRange, w *work) {
	stack := []seqRange{t}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = splitRange(order, keys, ws, t, w, stack[:len(stack)-1])
	}
}

// splitRange sorts order[t.lo:t.hi] by their frame at t.depth and appends
// to dst the ranges left to sort: one per frame shared by two stacks or
// more, one frame deeper. The stacks that end at t.depth come first: they
// equal each other, and each is a prefix of the rest. A range of a few
// stacks is sorted whole.
func splitRange(order []int32, keys []uint64, ws []weighted, t seqRange, w *work, dst []seqRange) []seqRange {
	lo, hi, d := t.lo, t.hi, t.depth
	for {
		w.tick()
		if hi-lo <= insertionMax {
			insertionSort(order[lo:hi], ws, d)
			return dst
		}
		k := lo
		for i := lo; i < hi; i++ {
			if len(ws[order[i]].seq) <= d {
				order[i], order[k] = order[k], order[i]
				k++
			}
		}
		lo = k
		if hi-lo < 2 {
			return dst
		}
		first, same := ws[order[lo]].seq[d], true
		for _, o := range order[lo+1 : hi] {
			if ws[o].seq[d] != first {
				same = false
				break
			}
		}
		if same { // one frame here: no order to make, go deeper
			d++
			continue
		}
		for i := lo; i < hi; i++ {
			keys[i] = uint64(uint32(ws[order[i]].seq[d])^1<<31)<<32 | uint64(uint32(order[i]))
		}
		slices.Sort(keys[lo:hi])
		for i := lo; i < hi; i++ {
			order[i] = int32(uint32(keys[i]))
		}
		for a := lo; a < hi; {
			b := a + 1
			for b < hi && keys[b]>>32 == keys[a]>>32 {
				b++
			}
			if b-a > 1 {
				dst = append(dst, seqRange{a, b, d + 1})
			}
			a = b
		}
		return dst
	}
}

// insertionSort sorts a few stacks, indices of ws that share their first
// d frames, by the rest.
func insertionSort(order []int32, ws []weighted, d int) {
	for i := 1; i < len(order); i++ {
		o := order[i]
		s := ws[o].seq[d:]
		j := i
		for j > 0 && slices.Compare(s, ws[order[j-1]].seq[d:]) < 0 {
			order[j] = order[j-1]
			j--
		}
		order[j] = o
	}
}
