package symbolize

import (
	"runtime"
	"sync"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

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
// CallSites marks p (sampling.CallSiteMark) and does nothing to a marked
// profile; it reports whether it changed any address.
func CallSites(p *profile.Profile) bool {
	if p == nil || sampling.HasCallSites(p) {
		return false
	}
	p.Comments = append(p.Comments, sampling.CallSiteMark)
	if !NeedsSymbolization(p) { // a Go profile, a text format: nothing to move, nothing to allocate
		return false
	}
	const keep, call = 1, 2
	// What each location is, and how stacks use it, by its position in
	// p.Location: a stack's frames far outnumber the locations, and a map
	// lookup and the mapping's name tests per frame were most of the
	// time an OTLP intake spent here.
	loc := newLocationIndex(p)
	// A large profile's samples are read on every core: each part marks
	// its own uses, then they are joined.
	parts := callSiteParts(len(p.Sample))
	uses := make([][]uint8, parts)
	var wg sync.WaitGroup
	for w := range parts {
		wg.Go(func() {
			use := make([]uint8, len(p.Location))
			for _, s := range p.Sample[w*len(p.Sample)/parts : (w+1)*len(p.Sample)/parts] {
				var prev uint8
				for i, l := range s.Location {
					j, f := loc.at(l)
					stopped := i == 0 || (f^prev)&locKernel != 0
					prev = f
					if f&locNeeds == 0 {
						continue
					}
					if stopped {
						use[j] |= keep
					} else {
						use[j] |= call
					}
				}
			}
			uses[w] = use
		})
	}
	wg.Wait()
	use := uses[0]
	for _, u := range uses[1:] {
		for j, b := range u {
			use[j] |= b
		}
	}
	type key struct {
		m    *profile.Mapping
		addr uint64
	}
	// Where each final address is held: locations that keep theirs first,
	// so that a caller whose call site is some leaf's address joins it.
	at := make(map[key]*profile.Location, len(p.Location))
	for j, l := range p.Location {
		if use[j]&keep != 0 {
			if _, ok := at[key{l.Mapping, l.Address}]; !ok {
				at[key{l.Mapping, l.Address}] = l
			}
		}
	}
	next := uint64(0)
	for _, l := range p.Location {
		next = max(next, l.ID)
	}
	site := make([]*profile.Location, len(p.Location)) // caller use → its call-site location
	changed, split := false, false
	var slab []profile.Location // new call-site locations, made a few hundred at a time
	for j, l := range p.Location[:len(p.Location):len(p.Location)] {
		u := use[j]
		if u&call == 0 || l.Address == 0 {
			continue
		}
		k := key{l.Mapping, l.Address - 1}
		changed = true
		if t := at[k]; t != nil {
			site[j], split = t, true
			continue
		}
		if u&keep == 0 { // only ever a caller: move it
			l.Address--
			at[k] = l
			continue
		}
		next++
		if len(slab) == 0 {
			slab = make([]profile.Location, min(256, len(p.Location)))
		}
		t := &slab[0]
		slab = slab[1:]
		t.ID, t.Mapping, t.Address, t.IsFolded = next, l.Mapping, l.Address-1, l.IsFolded
		p.Location = append(p.Location, t)
		at[k] = t
		site[j], split = t, true
	}
	if split {
		// Samples may share one location slice (perf.data's converter
		// gives a stack's samples of other threads and times one): each
		// slice is moved once, or a call site that is itself some
		// caller's return address would move twice. On several cores,
		// the samples are parted by their leaf location, which samples
		// sharing a slice share (and which is never moved).
		// The flags of each call site, looked up once per location: a
		// new one is not in the index, and testing its mapping's name
		// for every frame it replaced was a fifth of this pass.
		siteFlags := make([]uint8, len(site))
		for j, t := range site {
			if t != nil {
				_, siteFlags[j] = loc.at(t)
			}
		}
		for w := range parts {
			wg.Go(func() {
				moved := make(map[**profile.Location]bool, len(p.Sample)/parts)
				for _, s := range p.Sample {
					if len(s.Location) == 0 || (parts > 1 && int(s.Location[0].ID%uint64(parts)) != w) || moved[&s.Location[0]] {
						continue
					}
					moved[&s.Location[0]] = true
					var prev uint8
					for i, l := range s.Location {
						j, f := loc.at(l)
						if j >= 0 && site[j] != nil && i > 0 && (f^prev)&locKernel == 0 {
							s.Location[i], f = site[j], siteFlags[j]
						}
						prev = f
					}
				}
			})
		}
		wg.Wait()
	}
	return changed
}

// callSiteParts is how many goroutines CallSites reads samples on: one
// per core (up to 4) for a large profile, one below 64Ki samples (an OTLP
// intake's profiles), where starting them costs more than it saves (a
// variable for tests).
var callSiteParts = func(samples int) int {
	if samples < 1<<16 {
		return 1
	}
	return min(4, runtime.GOMAXPROCS(0))
}

// locationIndex finds a location's position in its profile's Location
// list, and keeps what CallSites asks of each (needs a name, is the
// kernel's) so that it is worked out once per location, not per frame.
type locationIndex struct {
	locs  []*profile.Location
	flags []uint8
	byPtr map[*profile.Location]int // only when IDs are not positions + 1
}

const (
	locNeeds uint8 = 1 << iota
	locKernel
)

func newLocationIndex(p *profile.Profile) *locationIndex {
	x := &locationIndex{locs: p.Location, flags: make([]uint8, len(p.Location))}
	// What a mapping's name says, worked out once per run of locations
	// in one mapping rather than per location.
	var (
		m                    *profile.Mapping
		mKernel, mNeedsNames bool
	)
	for j, l := range p.Location {
		if l.Mapping != m || j == 0 {
			m = l.Mapping
			mKernel = m != nil && IsKernel(m.File)
			mNeedsNames = m != nil && !m.HasFunctions && !IsPseudoBinary(m.File, m.BuildID)
		}
		if mNeedsNames && len(l.Line) == 0 && l.Address != 0 {
			x.flags[j] |= locNeeds
		}
		if mKernel || l.Address >= 1<<63 {
			x.flags[j] |= locKernel
		}
		if l.ID != uint64(j+1) && x.byPtr == nil {
			x.byPtr = make(map[*profile.Location]int, len(p.Location))
		}
	}
	if x.byPtr != nil {
		for j, l := range p.Location {
			x.byPtr[l] = j
		}
	}
	return x
}

// pos is l's position in the profile's Location list, -1 when it is not
// in it.
func (x *locationIndex) pos(l *profile.Location) int {
	if j := int(l.ID) - 1; l.ID > 0 && j < len(x.locs) && x.locs[j] == l {
		return j
	}
	if j, ok := x.byPtr[l]; ok {
		return j
	}
	return -1
}

// at is l's position (-1 when it is not in the list) and its flags
// (locNeeds, locKernel), in one lookup.
func (x *locationIndex) at(l *profile.Location) (int, uint8) {
	if j := x.pos(l); j >= 0 {
		return j, x.flags[j]
	}
	if kernelFrame(l) {
		return -1, locKernel
	}
	return -1, 0
}

// kernelFrame reports whether a location is in the kernel or one of its
// modules: by its mapping's name, else by the address (the upper half of a
// 64-bit address space is the kernel's on Linux).
func kernelFrame(l *profile.Location) bool {
	return l.Mapping != nil && IsKernel(l.Mapping.File) || l.Address >= 1<<63
}
