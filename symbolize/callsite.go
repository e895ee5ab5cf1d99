package symbolize

import (
	"slices"

	"github.com/google/pprof/profile"
)

// CallSiteMark is the profile comment that says its caller addresses are
// call sites already (CallSites ran), so that a second pass, a re-upload of
// viewer's own output or a stored converted profile is not shifted again.
const CallSiteMark = "viewer: caller addresses are call sites"

// HasCallSites reports whether p carries CallSiteMark.
func HasCallSites(p *profile.Profile) bool { return slices.Contains(p.Comments, CallSiteMark) }

// CallSites is viewer's one address convention for stacks, pprof's own: a
// non-leaf frame is looked up at its call instruction, not at the return
// address a call chain or an unwinder gives (the instruction after the
// call, which often belongs to another inline scope or line). It moves
// each caller frame that still needs symbolization to address − 1, inside
// the call, as pprof's legacy parsers, perf and addr2line-based tools do.
// Leaf frames keep their address, and so do interrupted pcs: the first user
// frame under kernel frames (where a syscall or interrupt stopped the
// program) and the first kernel frame. Symbolized locations (with lines,
// or in a mapping with functions, as Go profiles are) are left alone. A
// location that is both a leaf and a caller is split: its callers get the
// location at address − 1 of the same mapping, a new one if there is none.
// CallSites marks p (CallSiteMark) and does nothing to a marked profile; it
// reports whether it changed any address.
func CallSites(p *profile.Profile) bool {
	if p == nil || HasCallSites(p) {
		return false
	}
	p.Comments = append(p.Comments, CallSiteMark)
	if !NeedsSymbolization(p) { // a Go profile, a text format: nothing to move, nothing to allocate
		return false
	}
	const keep, call = 1, 2
	use := map[*profile.Location]uint8{}
	for _, s := range p.Sample {
		for i, l := range s.Location {
			if !needs(l) {
				continue
			}
			if interrupted(s.Location, i) {
				use[l] |= keep
			} else {
				use[l] |= call
			}
		}
	}
	type key struct {
		m    *profile.Mapping
		addr uint64
	}
	// Where each final address is held: locations that keep theirs first,
	// so that a caller whose call site is some leaf's address joins it.
	at := map[key]*profile.Location{}
	for _, l := range p.Location {
		if use[l]&keep != 0 {
			if _, ok := at[key{l.Mapping, l.Address}]; !ok {
				at[key{l.Mapping, l.Address}] = l
			}
		}
	}
	next := uint64(0)
	for _, l := range p.Location {
		next = max(next, l.ID)
	}
	site := map[*profile.Location]*profile.Location{} // caller use → its call-site location
	changed := false
	for _, l := range p.Location[:len(p.Location):len(p.Location)] {
		u := use[l]
		if u&call == 0 || l.Address == 0 {
			continue
		}
		k := key{l.Mapping, l.Address - 1}
		changed = true
		if t := at[k]; t != nil {
			site[l] = t
			continue
		}
		if u&keep == 0 { // only ever a caller: move it
			l.Address--
			at[k] = l
			continue
		}
		next++
		t := &profile.Location{ID: next, Mapping: l.Mapping, Address: l.Address - 1, IsFolded: l.IsFolded}
		p.Location = append(p.Location, t)
		at[k] = t
		site[l] = t
	}
	if len(site) > 0 {
		for _, s := range p.Sample {
			for i, l := range s.Location {
				if t := site[l]; t != nil && !interrupted(s.Location, i) {
					s.Location[i] = t
				}
			}
		}
	}
	return changed
}

// interrupted reports whether frame i of a stack (leaf first) is where the
// program was stopped rather than a caller: the leaf, or the first frame
// after a switch between kernel and user space (the user pc a syscall or
// interrupt stopped, or the first kernel frame of a callchain perf gives
// user first).
func interrupted(stack []*profile.Location, i int) bool {
	return i == 0 || kernelFrame(stack[i]) != kernelFrame(stack[i-1])
}

// kernelFrame reports whether a location is in the kernel or one of its
// modules: by its mapping's name, else by the address (the upper half of a
// 64-bit address space is the kernel's on Linux).
func kernelFrame(l *profile.Location) bool {
	return l.Mapping != nil && IsKernel(l.Mapping.File) || l.Address >= 1<<63
}
