package jsonprof

// fifoBlock is how many values a fifo allocates at once.
const fifoBlock = 8192

// fifo is a first-in first-out queue kept in fixed-size blocks: it grows
// without copying what it holds (a V8 profile's million samples wait for
// their deltas in one), and a block is freed once read.
type fifo[T any] struct {
	blocks [][]T
	head   int // read position in blocks[0]
	n      int
}

// Len is how many values wait.
func (q *fifo[T]) Len() int { return q.n }

// Cap is how many values the blocks held hold room for.
func (q *fifo[T]) Cap() int { return len(q.blocks) * fifoBlock }

// Push adds v at the back.
func (q *fifo[T]) Push(v T) {
	if k := len(q.blocks); k == 0 || len(q.blocks[k-1]) == fifoBlock {
		q.blocks = append(q.blocks, make([]T, 0, fifoBlock))
	}
	k := len(q.blocks) - 1
	q.blocks[k] = append(q.blocks[k], v)
	q.n++
}

// Front is the value at the front; the queue must not be empty.
func (q *fifo[T]) Front() *T { return &q.blocks[0][q.head] }

// Back is the value at the back; the queue must not be empty.
func (q *fifo[T]) Back() *T {
	b := q.blocks[len(q.blocks)-1]
	return &b[len(b)-1]
}

// Pop removes the value at the front; the queue must not be empty.
func (q *fifo[T]) Pop() {
	q.head++
	q.n--
	if q.head == len(q.blocks[0]) {
		q.blocks[0] = nil
		q.blocks = q.blocks[1:]
		q.head = 0
	}
}

// Reset empties the queue and lets go of its blocks.
func (q *fifo[T]) Reset() { *q = fifo[T]{} }
