// Package hashindex finds items by a 64-bit hash: an open-addressing table
// of item indexes, for the passes that group a profile's samples
// (web/ingest's merge of equal samples, web/flame's stacks), where a Go
// map's lookups, a cache miss each, were most of the time.
package hashindex

import "viewer/web/prefault"

// Table is a linear-probing table whose entries hold an item's index plus
// one (0 is empty) in the low 32 bits and the top 32 bits of its hash in
// the high ones, which also place it: most probes that do not match are
// rejected without loading the item, and growing needs no item.
type Table struct {
	slots []uint64
	used  int
}

// Init empties t, sized for n items at most half full.
func (t *Table) Init(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	t.slots = make([]uint64, size)
	prefault.Slice(t.slots) // written at random: a fault per page otherwise
	t.used = 0
}

// Slots is the table's size in slots of 8 bytes: what its memory is.
func (t *Table) Slots() int { return len(t.slots) }

// Find returns the item of hash h that same says is the one, or -1 and
// the empty slot where it goes.
func (t *Table) Find(h uint64, same func(i int32) bool) (slot int, found int32) {
	mask := len(t.slots) - 1
	for j := int(h>>32) & mask; ; j = (j + 1) & mask {
		e := t.slots[j]
		if e == 0 {
			return j, -1
		}
		if e>>32 == h>>32 && same(int32(uint32(e))-1) {
			return j, int32(uint32(e)) - 1
		}
	}
}

// Home returns the item in h's first slot when its hash matches h's top
// bits, else -1: callers load it for a batch of hashes before finding
// them, so that the batch's cache misses overlap.
func (t *Table) Home(h uint64) int32 {
	e := t.slots[int(h>>32)&(len(t.slots)-1)]
	if e == 0 || e>>32 != h>>32 {
		return -1
	}
	return int32(uint32(e)) - 1
}

// Insert puts item i of hash h in slot (from Find), growing the table
// when it is half full.
func (t *Table) Insert(slot int, h uint64, i int32) {
	t.slots[slot] = h>>32<<32 | uint64(uint32(i+1))
	t.used++
	if 2*t.used <= len(t.slots) {
		return
	}
	old := t.slots
	t.slots = make([]uint64, 2*len(old))
	prefault.Slice(t.slots)
	mask := len(t.slots) - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		j := int(e>>32) & mask
		for t.slots[j] != 0 {
			j = (j + 1) & mask
		}
		t.slots[j] = e
	}
}
