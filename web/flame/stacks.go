package flame

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
)

// Stacks is one sample type's samples after a filter, as frame sequences
// (root first) sorted so that the stacks through any call path are one
// run. It is the input of zoomed trees (flame.json?z=) and of top tables
// (top.json, /top): built once per profile, then each zoom costs work in
// proportion to the stacks below the zoomed frame.
type Stacks struct {
	SampleType, Unit string
	fr               *frames // names and mappings only
	ws               []weighted
	sum              []int64    // sum[i] is the total value of ws[:i]
	times            *timeIndex // ws's samples by time; nil when they have none

	// CountType is the sample type whose values count the samples (each
	// stack's weighted.base, samplecount.go); "": sample records.
	CountType string
	nsum      []int64 // nsum[i] is the sample count of ws[:i]

	mu      sync.Mutex
	matched map[string]int64 // Matched by regexp, the last few searches
}

// matchedKept bounds how many searches' Matched values a Stacks keeps.
const matchedKept = 64

// NewStacks collects the samples of p for sample index si that opt.Filter
// keeps, checking opt's context (WithContext) as it goes. When p's samples
// have times, the Stacks also indexes them by time (timeindex.go), so that
// InTime cuts a range without going back to p. A Filter with a Time range
// is the Stacks of the other filters, InTime.
func NewStacks(p *profile.Profile, si int, opt Options) *Stacks {
	if r := opt.Filter.Time; r != nil {
		opt.Filter.Time = nil
		return NewStacks(p, si, opt).InTime(*r)
	}
	s, of, pos := sortedStacks(p, si, opt)
	s.times = newTimeIndex(p, si, opt.CountType, of, pos)
	return s
}

// sortedStacks is NewStacks without the time index, with where each
// sample went: of[k] is sample k's stack in the grouped stacks (-1
// skipped), pos[g] that stack's index in the sorted Stacks.ws (-1 filtered
// out). opt.Filter.Time is not used.
func sortedStacks(p *profile.Profile, si int, opt Options) (s *Stacks, of, pos []int32) {
	fr := newFrames(p)
	fr.work = opt.work
	of = make([]int32, len(p.Sample)) // per sample: its stack in uniq
	uniq := groupStacksOf(p, si, of)
	ws, kept := opt.Filter.stacksOf(uniq, fr) // the zero Filter keeps every sample
	// Sorted through a permutation, to know where each stack went.
	order := make([]int32, len(ws))
	for i := range order {
		order[i] = int32(i)
	}
	sortSeqs(order, ws, fr.work)
	sorted := make([]weighted, len(ws))
	pos = make([]int32, len(uniq)) // per stack of uniq: its index in sorted, -1 dropped
	for i := range pos {
		pos[i] = -1
	}
	for i, k := range order {
		sorted[i] = ws[k]
		pos[kept[k]] = int32(i)
	}
	s = &Stacks{
		// Keep only what labels need: not the locations, so the cached
		// Stacks does not hold the profile.
		fr: &frames{names: fr.names, nameMapping: fr.nameMapping, mappings: fr.mappings, byName: fr.byName, src: fr.src},
		ws: sorted,
	}
	s.countSamples(p, opt.CountType, of, pos) // samplecount.go
	s.sumUp()
	if si >= 0 && si < len(p.SampleType) {
		s.SampleType, s.Unit = p.SampleType[si].Type, p.SampleType[si].Unit
	}
	s.CountType = countType(p, opt.CountType)
	return s, of, pos
}

// parallelSortMin is the fewest stacks sortSeqs sorts on two goroutines
// (a variable for the tests).
var parallelSortMin = 1 << 15

// sumUp fills s.sum and s.nsum from s.ws.
func (s *Stacks) sumUp() {
	s.sum = make([]int64, len(s.ws)+1)
	s.nsum = make([]int64, len(s.ws)+1)
	for i, w := range s.ws {
		s.sum[i+1] = s.sum[i] + w.v
		s.nsum[i+1] = s.nsum[i] + w.base
	}
}

// Total is the value of every sample kept.
func (s *Stacks) Total() int64 { return s.sum[len(s.ws)] }

// parseMerged reads a MergedElement.
func parseMerged(e string) (int64, bool) {
	rest, ok := strings.CutPrefix(e, MergedName+"<")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
}

// run is the half-open range [lo, hi) of Stacks.ws.
type run struct{ lo, hi int }

// zoomed is a zoom path resolved against the stacks.
type zoomed struct {
	path  []string    // the elements that resolved
	chain []chainNode // root, then one node per element of path
	runs  []run       // the stacks below the zoomed frame
	depth int         // frames of those stacks above its children
}

// chainNode is a frame on the way from the root to the zoomed frame.
type chainNode struct {
	name        int32 // frame name ID; -1 for a merged block
	total, self int64
	n, nself    int64 // sample counts (samplecount.go)
}

func (s *Stacks) value(r run) int64 { return s.sum[r.hi] - s.sum[r.lo] }

// children splits the stacks of runs that go deeper than depth frames into
// one run per frame at that depth, in name-ID order within each run.
func (s *Stacks) children(runs []run, depth int, w *work) []run {
	var out []run
	for _, r := range runs {
		w.tick()
		i := r.lo
		for i < r.hi && len(s.ws[i].seq) <= depth {
			i++ // stacks that end at the frame: its self
		}
		for i < r.hi {
			w.tick()
			nm := s.ws[i].seq[depth]
			j := i + 1
			for j < r.hi && s.ws[j].seq[depth] == nm {
				j++
			}
			out = append(out, run{i, j})
			i = j
		}
	}
	return out
}

// resolve follows path from the root as far as it exists. An element is a
// frame name, or a MergedElement standing for the merged children of the
// frame reached so far, drawn as one "…" frame above them.
func (s *Stacks) resolve(path []string, w *work) *zoomed {
	z := &zoomed{runs: []run{{0, len(s.ws)}}}
	rootSelf, rootN := int64(0), int64(0)
	for i := 0; i < len(s.ws) && len(s.ws[i].seq) == 0; i++ {
		rootSelf += s.ws[i].v
		rootN += s.ws[i].base
	}
	z.chain = append(z.chain, chainNode{name: 0, total: s.Total(), self: rootSelf, n: s.nsum[len(s.ws)], nself: rootN})
	for _, e := range path {
		kids := s.children(z.runs, z.depth, w)
		if t, ok := parseMerged(e); ok {
			var kept []run
			var total, n int64
			for _, r := range kids {
				if v := s.value(r); abs(v) < t {
					kept = append(kept, r)
					total += v
					n += s.samples(r)
				}
			}
			if len(kept) == 0 {
				break
			}
			z.runs = kept
			z.chain = append(z.chain, chainNode{name: -1, total: total, n: n})
		} else {
			nm, ok := s.fr.byName[e]
			if !ok {
				break
			}
			k := slices.IndexFunc(kids, func(r run) bool { return s.ws[r.lo].seq[z.depth] == nm })
			if k < 0 {
				break
			}
			r := kids[k]
			z.depth++
			self, nself := int64(0), int64(0)
			for i := r.lo; i < r.hi && len(s.ws[i].seq) == z.depth; i++ {
				self += s.ws[i].v
				nself += s.ws[i].base
			}
			z.runs = []run{r}
			z.chain = append(z.chain, chainNode{name: nm, total: s.value(r), self: self, n: s.samples(r), nself: nself})
		}
		z.path = append(z.path, e)
	}
	return z
}

// below returns the stacks of z from frame depth from on, to be read
// only: s's own when they are all of them, whole (the root's tree, the
// first view's: a copy of the 2M profile's 500k stacks was 16 MB of fresh
// memory for nothing).
func (s *Stacks) below(z *zoomed, from int, work *work) []weighted {
	if from == 0 && len(z.runs) == 1 && z.runs[0] == (run{0, len(s.ws)}) {
		return s.ws[:len(s.ws):len(s.ws)]
	}
	n := 0
	for _, r := range z.runs {
		n += r.hi - r.lo
	}
	out := make([]weighted, 0, n)
	for _, r := range z.runs {
		for _, w := range s.ws[r.lo:r.hi] {
			work.tick()
			out = append(out, weighted{seq: w.seq[from:], v: w.v, base: w.base})
		}
	}
	return out
}

// Tree is the flame tree zoomed at path (see resolve): the chain of frames
// from the root to the zoomed frame, each with its own total and self but
// only the next one as child, then the zoomed frame's subtree compacted at
// opt.MinFraction of the zoomed frame's total (negative:
// DefaultMinFraction) and then to opt.Budget, as Build does. Tree.Zoom is
// the part of path that exists. opt.Filter is not used: s is filtered.
func (s *Stacks) Tree(path []string, opt Options) *Tree {
	minFrac := opt.MinFraction
	if minFrac < 0 {
		minFrac = DefaultMinFraction
	}
	fr := s.withWork(opt.work)
	z := s.resolve(path, fr.work)
	// Only what compacting at minFrac or above (MaxNodes and Budget.fit
	// raise it) shows; below keeps ws's order; base: sample counts.
	ft := buildPrunedTrie(s.below(z, z.depth, fr.work), true, minFrac, fr.work)
	// A timeline range's tree merges more (nodecap.go).
	minFrac = ft.fractionFor(minFrac, opt.MaxNodes)
	build := func(minFrac float64) *Tree {
		w := newTreeWriter(fr)
		w.label(0)
		last := len(z.chain) - 1
		for d, c := range z.chain[:last] {
			w.t.Nodes = append(w.t.Nodes, Node{Name: w.chainLabel(c), Depth: int32(d), Total: c.total, Self: c.self})
			w.t.Base = append(w.t.Base, c.n)
		}
		w.subtree(ft, threshold(ft, minFrac), w.chainLabel(z.chain[last]), int32(last))
		w.t.setSamples(z.chain) // samplecount.go
		return w.t
	}
	t := opt.Budget.fit(build(minFrac), minFrac, build)
	t.SampleType, t.Unit, t.CountType = s.SampleType, s.Unit, s.CountType
	t.Zoom = z.path
	return t
}

// withWork is s's frames checking w: a copy, as s is shared by requests.
func (s *Stacks) withWork(w *work) *frames { return s.fr.withWork(w) }

func (w *treeWriter) chainLabel(c chainNode) int32 {
	if c.name < 0 {
		return w.merged()
	}
	return w.label(c.name)
}

// TopTable is the top functions of a zoomed frame's subtree.
type TopTable struct {
	Rows []TopRow // sorted as Top sorts them
	// Total is the value of every sample kept; ZoomTotal the zoomed
	// frame's (Total when not zoomed), which shares are of.
	Total, ZoomTotal int64
	Zoom             []string // the part of the zoom path that exists
}

// Top is the top table of the subtree at path (see resolve), counting
// every sample below it, as Top does for the whole profile: flat where a
// function is the leaf, cum once per stack that contains it. The zoomed
// frame is in the table; frames above it are not. It checks opt's context
// (WithContext) as it goes; its rows are one per function.
func (s *Stacks) Top(path []string, opt Options) *TopTable {
	z := s.resolve(path, opt.work)
	from := z.depth
	if last := z.chain[len(z.chain)-1]; last.name > 0 {
		from-- // the zoomed function itself
	}
	flat, cum, total := flatCum(s.below(z, from, opt.work), len(s.fr.names), false, opt.work)
	tt := &TopTable{Total: s.Total(), ZoomTotal: total, Zoom: z.path}
	for i := 1; i < len(s.fr.names); i++ {
		if flat[i] != 0 || cum[i] != 0 {
			tt.Rows = append(tt.Rows, TopRow{Name: s.fr.names[i], Flat: flat[i], Cum: cum[i]})
		}
	}
	sortTop(tt.Rows)
	return tt
}

// Matched is the value of the samples with a frame whose name re matches:
// the search's share, each sample counted once however many frames match.
// It checks opt's context (WithContext) as it goes.
func (s *Stacks) Matched(re *regexp.Regexp, opt Options) int64 {
	key := re.String()
	s.mu.Lock()
	v, ok := s.matched[key]
	s.mu.Unlock()
	if ok {
		return v
	}
	v = s.match(re, opt.work)
	s.mu.Lock()
	if s.matched == nil || len(s.matched) >= matchedKept {
		s.matched = map[string]int64{}
	}
	s.matched[key] = v
	s.mu.Unlock()
	return v
}

func (s *Stacks) match(re *regexp.Regexp, work *work) int64 {
	hit := make([]bool, len(s.fr.names))
	for i, n := range s.fr.names[1:] {
		work.tick()
		hit[i+1] = re.MatchString(n)
	}
	var v int64
	for _, w := range s.ws {
		work.tick()
		if slices.ContainsFunc(w.seq, func(nm int32) bool { return hit[nm] }) {
			v += w.v
		}
	}
	return v
}
