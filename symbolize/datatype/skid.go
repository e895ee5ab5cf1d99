package datatype

import (
	"fmt"
	"sort"
)

// Skid. A sample taken on an interrupt (cpu-clock, or cycles without a
// precise modifier) reports the instruction about to run when the counter
// overflowed: usually the one after the instruction that took the time,
// such as a load that missed the cache. perf attributes the instruction it
// is given, so on such profiles the data-type view is mostly "(unknown):
// test has no memory operand". With Aggregator.Skid, a sample whose own
// instruction touches no memory is counted on the access of the nearest
// instruction before it in its basic block (so execution can only have
// come that way) that touches memory; the access is marked Skid and its
// reason says so.

// prevInBlock returns the instruction before pc when pc is not the first
// of its basic block, so that execution can only have come from it.
func (b *Binary) prevInBlock(pc uint64) (prev uint64, ok bool) {
	defer func() {
		if recover() != nil {
			prev, ok = 0, false
		}
	}()
	f, found := b.funcAt(pc)
	if !found || pc <= f.lo {
		return 0, false
	}
	c := b.funcCodeAt(f.lo, f.hi)
	off := pc - f.lo
	k := sort.Search(len(c.pcs), func(i int) bool { return uint64(c.pcs[i]) >= off })
	if k == 0 || k >= len(c.pcs) || uint64(c.pcs[k]) != off || c.leader[k] {
		return 0, false
	}
	return f.lo + uint64(c.pcs[k-1]), true
}

// maxSkid is how many instructions back a sample may have skidded: the
// interrupted instruction is often one or two past the load that stalled
// (a dependent add, then the test of the loaded pointer).
const maxSkid = 3

// skidID returns the access to count for a sample at pc whose own access
// is b.distinct[id]. When pc touches no memory, it walks back through its
// basic block over up to maxSkid instructions that touch no memory either,
// to the first that does: if that one reads or writes a member or a
// global, its access is counted, marked Skid; otherwise id is. Callers
// hold b.mu.
func (b *Binary) skidID(pc uint64, id int32) int32 {
	if !b.distinct[id].noMem {
		return id
	}
	if sid, ok := b.skidMemo[pc]; ok {
		return sid
	}
	sid := id
	cur := pc
	for n := 1; n <= maxSkid; n++ {
		prev, ok := b.prevInBlock(cur)
		if !ok {
			break
		}
		pa := b.distinct[b.attributeID(prev)]
		if pa.noMem {
			cur = prev
			continue
		}
		if pa.Kind == KindMember || pa.Kind == KindGlobal {
			pa.Skid = true
			pa.Reason = fmt.Sprintf("skid: sampled %d instruction(s) later, where %s; %s", n, b.distinct[id].Reason, pa.Reason)
			sid = b.intern(pa)
		}
		break
	}
	b.skidMemo[pc] = sid
	return sid
}
