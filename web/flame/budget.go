package flame

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Default budget of one built view: flame.json of 200,000 nodes is about
// 5 MB and draws in well under a second; past it the frames are too small
// to see anyway.
const (
	DefaultBudgetNodes = 200_000
	DefaultBudgetBytes = 32 << 20
)

// maxWidthFraction is as far as compaction by width goes (frames under
// 1/200 of the root merged: ten pixels of a 2000-pixel graph) before
// compaction by depth takes over.
const maxWidthFraction = 1.0 / 200

// ErrBudget is what Guard returns when a view is over its budget or its
// context ended; the web layer answers 503 with the reason.
var ErrBudget = errors.New("over the rendering budget")

// Budget bounds one built tree: at most Nodes nodes and about Bytes bytes
// of encoding. A tree over it is compacted by width (a larger
// MinFraction), then by depth (frames below a depth dropped), and says so
// in its Compaction. Zero fields mean no bound.
type Budget struct {
	Nodes, Bytes int
}

// Compaction says how a tree was cut down to its budget; nil when it was
// not.
type Compaction struct {
	// MinFraction is the width under which frames were merged.
	MinFraction float64
	// MaxDepth, when positive, is the depth below which frames were cut.
	MaxDepth int
	// Nodes is how many nodes the tree had before compaction.
	Nodes int
}

// Note is the sentence the page shows about a compacted tree.
func (c *Compaction) Note() string {
	if c == nil {
		return ""
	}
	s := fmt.Sprintf("This graph is compacted to fit the server's rendering budget: it had %d frames; frames narrower than %s of the total are merged into %q",
		c.Nodes, strconv.FormatFloat(c.MinFraction*100, 'g', 3, 64)+"%", MergedName)
	if c.MaxDepth > 0 {
		s += fmt.Sprintf(", and frames deeper than %d are not drawn", c.MaxDepth)
	}
	return s + ". Zoom in with a focus filter to see more."
}

// WithContext returns o with ctx checked in the tree building loops: when
// ctx ends, the build stops and Guard returns ErrBudget naming why.
func (o Options) WithContext(ctx context.Context) Options {
	o.work = &work{ctx: ctx}
	return o
}

// work is the context a build checks now and then.
type work struct {
	ctx context.Context
	n   int
}

// fork is a work checking w's context for another goroutine.
func (w *work) fork() *work {
	if w == nil {
		return nil
	}
	return &work{ctx: w.ctx}
}

// stop is the panic value a build stops with; Guard recovers it.
type stop struct{ err error }

// tick checks the context every few thousand calls.
func (w *work) tick() {
	if w == nil {
		return
	}
	if w.n++; w.n&0xfff == 1 { // the first call too
		if err := w.ctx.Err(); err != nil {
			panic(stop{fmt.Errorf("%w: %s", ErrBudget, why(err, w.ctx))})
		}
	}
}

func why(err error, ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && c != err {
		return c.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "building this view took longer than the server's rendering time limit"
	}
	return "the request ended"
}

// Guard runs build, which builds trees with Options from WithContext and
// encodes them, and returns ErrBudget (wrapped with the reason) when a
// build stopped on its context or its budget.
func Guard(build func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(stop)
			if !ok {
				panic(r)
			}
			err = s.err
		}
	}()
	build()
	return nil
}

// tick checks the build's context (WithContext).
func (f *frames) tick() { f.work.tick() }

// fit compacts t (built at minFrac by recompact) until it is within b:
// first by width, raising the fraction fourfold at a time up to
// maxWidthFraction, then by depth.
func (b Budget) fit(t *Tree, minFrac float64, recompact func(minFrac float64) *Tree) *Tree {
	if b.fits(t) {
		return t
	}
	c := &Compaction{Nodes: len(t.Nodes), MinFraction: max(minFrac, 1e-6)}
	for !b.fits(t) && c.MinFraction < maxWidthFraction {
		c.MinFraction = min(c.MinFraction*4, maxWidthFraction)
		t = recompact(c.MinFraction)
	}
	if !b.fits(t) {
		t, c.MaxDepth = b.cutDepth(t)
	}
	if !b.fits(t) {
		panic(stop{fmt.Errorf("%w: even compacted, this view is about %d bytes, over the %d-byte budget (its frame names are too long)", ErrBudget, encodedSize(t), b.Bytes)})
	}
	t.Compaction = c
	return t
}

// fits reports whether t is within b.
func (b Budget) fits(t *Tree) bool {
	return (b.Nodes <= 0 || len(t.Nodes) <= b.Nodes) && (b.Bytes <= 0 || encodedSize(t) <= b.Bytes)
}

// bytesPerNode bounds the JSON of one node: four integers of up to 20
// characters and their commas. nameBytes bounds a name's: each byte of a name
// that needs escaping may take six characters, plus quotes and a comma.
const bytesPerNode = 84

func nameBytes(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return 6*len(s) + 3
		}
	}
	return len(s) + 3 // plain ASCII is copied as is (appendString)
}

// encodedSize bounds the bytes of t's flame.json (SVG's markup per node
// is larger, but it draws far fewer nodes: SVGMinFraction).
func encodedSize(t *Tree) int {
	n := 1536 + len(t.SampleType)*6 + len(t.Unit)*6 + bytesPerNode*len(t.Nodes)
	n += len(t.Names) * t.Source.perName() // file:line and inlined flag
	if t.Samples != nil {
		n += bytesPerNode / 2 * len(t.Nodes) // two more integers per node
	}
	for _, s := range t.Names {
		n += nameBytes(s) + 3 // and its mapping index
	}
	for _, s := range t.Source.Files {
		n += nameBytes(s)
	}
	for _, s := range t.Mappings {
		n += nameBytes(s)
	}
	return n // 1536: the header and the compaction note
}

// cutDepth keeps the shallowest levels of t that fit b and returns the
// deepest level kept.
func (b Budget) cutDepth(t *Tree) (*Tree, int) {
	var perDepth []int
	for _, n := range t.Nodes {
		for int(n.Depth) >= len(perDepth) {
			perDepth = append(perDepth, 0)
		}
		perDepth[n.Depth]++
	}
	maxNodes := len(t.Nodes)
	if b.Nodes > 0 {
		maxNodes = b.Nodes
	}
	if b.Bytes > 0 {
		names := encodedSize(&Tree{Names: t.Names, Mappings: t.Mappings, Source: t.Source})
		per := bytesPerNode
		if t.Samples != nil {
			per += bytesPerNode / 2 // the sample counts
		}
		maxNodes = min(maxNodes, max(1, (b.Bytes-names)/per))
	}
	depth, kept := 0, 0
	for d, k := range perDepth {
		if kept+k > maxNodes {
			break
		}
		depth, kept = d, kept+k
	}
	out := *t
	out.Nodes = make([]Node, 0, kept)
	if t.Base != nil {
		out.Base = make([]int64, 0, kept)
	}
	if t.Samples != nil {
		out.Samples = make([]int64, 0, 2*kept)
	}
	for i, n := range t.Nodes {
		if int(n.Depth) <= depth {
			out.Nodes = append(out.Nodes, n)
			if t.Base != nil {
				out.Base = append(out.Base, t.Base[i])
			}
			if t.Samples != nil {
				out.Samples = append(out.Samples, t.Samples[2*i:2*i+2]...)
			}
		}
	}
	out.dropUnusedNames()
	return &out, depth
}

// dropUnusedNames keeps only the names and mappings t's nodes use, in
// their order, so that a tree cut by depth is not sized by the frames it
// no longer has.
func (t *Tree) dropUnusedNames() {
	newName := make([]int32, len(t.Names))
	newMap := make([]int32, len(t.Mappings))
	var names, mappings []string
	var mapping []int32
	var src Source
	srcFile := make(map[string]int32)
	for i := range t.Nodes {
		o := t.Nodes[i].Name
		if newName[o] == 0 {
			names = append(names, t.Names[o])
			m := t.Mapping[o]
			if m >= 0 {
				if newMap[m] == 0 {
					mappings = append(mappings, t.Mappings[m])
					newMap[m] = int32(len(mappings))
				}
				m = newMap[m] - 1
			}
			mapping = append(mapping, m)
			if int(o) < len(t.Source.File) {
				file := ""
				if f := t.Source.File[o]; f >= 0 {
					file = t.Source.Files[f]
				}
				src.add(file, t.Source.Line[o], t.Source.Inlined[o], srcFile)
			}
			newName[o] = int32(len(names))
		}
		t.Nodes[i].Name = newName[o] - 1
	}
	t.Names, t.Mapping, t.Mappings, t.Source = names, mapping, mappings, src
}

// appendCompaction appends flame.json's "compacted" member when t was
// compacted to fit its budget.
func (t *Tree) appendCompaction(b []byte) []byte {
	c := t.Compaction
	if c == nil {
		return b
	}
	b = append(b, `,"compacted":{"minFraction":`...)
	b = strconv.AppendFloat(b, c.MinFraction, 'g', -1, 64)
	b = append(b, `,"maxDepth":`...)
	b = strconv.AppendInt(b, int64(c.MaxDepth), 10)
	b = append(b, `,"nodes":`...)
	b = strconv.AppendInt(b, int64(c.Nodes), 10)
	b = append(b, `,"note":`...)
	return append(appendString(b, c.Note()), '}')
}
