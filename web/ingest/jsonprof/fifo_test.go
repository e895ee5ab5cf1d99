package jsonprof

import (
	"math/rand/v2"
	"testing"
)

// TestFifo checks the block queue against a slice across block boundaries:
// runs of pushes and pops of random lengths, Back changed in place as
// samples() changes a run's count.
func TestFifo(t *testing.T) {
	var q fifo[int]
	var model []int
	r := rand.New(rand.NewPCG(1, 2))
	next := 0
	for step := 0; step < 200; step++ {
		for range r.IntN(3 * fifoBlock) {
			q.Push(next)
			model = append(model, next)
			next++
		}
		if len(model) > 0 && r.IntN(2) == 0 {
			*q.Back() += 1_000_000
			model[len(model)-1] += 1_000_000
		}
		for k := r.IntN(3 * fifoBlock); k > 0 && len(model) > 0; k-- {
			if got := *q.Front(); got != model[0] {
				t.Fatalf("step %d: front %d, want %d", step, got, model[0])
			}
			q.Pop()
			model = model[1:]
		}
		if q.Len() != len(model) {
			t.Fatalf("step %d: %d values, want %d", step, q.Len(), len(model))
		}
		if len(model) > 0 && *q.Back() != model[len(model)-1] {
			t.Fatalf("step %d: back %d, want %d", step, *q.Back(), model[len(model)-1])
		}
		// Blocks are freed as they are read: no more than the values need
		// and the one being read.
		if max := (len(model)+fifoBlock-1)/fifoBlock + 1; len(q.blocks) > max {
			t.Fatalf("step %d: %d blocks held for %d values", step, len(q.blocks), len(model))
		}
		// And none grew past its allocation: what was pushed is never copied.
		for i, b := range q.blocks {
			if cap(b) != fifoBlock {
				t.Fatalf("step %d: block %d has room for %d values, not %d", step, i, cap(b), fifoBlock)
			}
		}
	}
	q.Reset()
	if q.Len() != 0 || q.Cap() != 0 {
		t.Fatalf("after Reset: %d values, room for %d", q.Len(), q.Cap())
	}
}
