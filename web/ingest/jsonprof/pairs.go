package jsonprof

import "unsafe"

// pairs pairs two sequences that a file writes one after the other, the
// i-th of one with the i-th of the other (a speedscope profile's samples
// and weights, a Safari recording's stack traces and durations): what
// arrives before its partner waits, so that a read keeps the lead of one
// side over the other, not both sides whole. Waiting elements are taken
// from the budget as their slices grow (builder.keep) and given back as
// they are paired.
type pairs[A, B any] struct {
	b      *builder
	as     []A
	bs     []B
	ai, bi int   // the first waiting element of as and bs
	na, nb int64 // how many of each have arrived
	kept   int64 // bytes of as and bs taken with b.keep
}

// addA adds the next A, waiting for its B.
func (q *pairs[A, B]) addA(a A) error {
	q.na++
	q.as = append(q.as, a)
	return q.charge()
}

// addB adds the next B, waiting for its A.
func (q *pairs[A, B]) addB(v B) error {
	q.nb++
	q.bs = append(q.bs, v)
	return q.charge()
}

// charge takes the memory of the slices' backing arrays.
func (q *pairs[A, B]) charge() error {
	var a A
	var v B
	n := int64(cap(q.as))*int64(unsafe.Sizeof(a)) + int64(cap(q.bs))*int64(unsafe.Sizeof(v))
	if n <= q.kept {
		return nil
	}
	more := max(n-q.kept, 64<<10)
	q.kept += more
	return q.b.keep(more)
}

// drain calls fn with each A and B that both arrived and were not yet
// paired, in order.
func (q *pairs[A, B]) drain(fn func(A, B) error) error {
	for q.ai < len(q.as) && q.bi < len(q.bs) {
		a, v := q.as[q.ai], q.bs[q.bi]
		q.ai++
		q.bi++
		if err := fn(a, v); err != nil {
			return err
		}
	}
	if q.ai == len(q.as) {
		q.as, q.ai = q.as[:0], 0
	}
	if q.bi == len(q.bs) {
		q.bs, q.bi = q.bs[:0], 0
	}
	return nil
}

// done gives back the memory of the waiting elements.
func (q *pairs[A, B]) done() {
	q.b.unkeep(q.kept)
	q.as, q.bs, q.kept = nil, nil, 0
}
