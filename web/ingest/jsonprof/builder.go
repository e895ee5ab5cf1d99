// Package jsonprof reads the JSON profiles of browsers and of the
// language profilers that write speedscope's format: speedscope JSON
// (py-spy, rbspy, Austin, dotnet-trace), V8 CPU and heap-sampling
// profiles (node --cpu-prof, DevTools), Chrome trace events (sampled
// ProfileChunk events, or B/E/X events as spans), node --prof logs,
// Firefox Profiler profiles, GHC JSON profiles and Safari recordings. Each is read as speedscope reads it, so
// stacks and weights equal what speedscope shows, into the pprof profile
// every page uses: threads and processes become the labels perf.data's
// samples carry (comm, pid, tid), and a timestamped format keeps its
// times in sampling.TimeLabel. The input is read with a streaming JSON
// decoder (jsontext): nothing holds a tree of the whole document, only
// the stacks, frames and the sums of samples per stack, thread and time
// bucket the profile is made from.
package jsonprof

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// ErrLimit is wrapped by errors about inputs over the caller's limits.
var ErrLimit = errors.New("over the limit")

// Options bound what a read keeps; zero fields mean no limit.
type Options struct {
	// MaxSamples bounds the distinct samples (stack, thread, time
	// bucket) of the profile; over it, times are dropped first.
	MaxSamples int
	// MaxRecords bounds the samples or events read.
	MaxRecords int
	// Reserve, when set, is asked for memory before the reader takes it:
	// for what it keeps as it grows (the cells samples are summed into,
	// a format's tables), then for the profile's samples and the frames
	// of their stacks. An error stops the read.
	Reserve func(n int64) error
	// MaxFrames bounds the frames of all samples' stacks together, each
	// stack counted up to MaxStackDepth frames; MaxStackDepth cuts a
	// deeper stack to its leaf-most MaxStackDepth-1 frames under a
	// sampling.TruncatedName frame, as ingest's limits cut every
	// format's stacks (--max-frames, --max-stack-depth). Both are applied
	// before any stack is made into a profile's location slice.
	MaxFrames, MaxStackDepth int
	// Context, when set, stops the read with its error once it is done
	// (the client left): checked every workCheck steps of the read.
	Context context.Context
}

// Memory a read takes per cell (a stack, thread, sample type and time
// bucket the samples read are summed into: its map entry, key and value,
// one slice's worth more while they grow) and per sample of the profile
// (its cell, values, labels and profile.Sample; TestJSONMemoryEstimate in
// web/ingest). What a format keeps until its end beside them (a Firefox
// thread's tables, the samples waiting for their weights: pairs) it takes
// with keep as it grows.
const (
	cellMemory   = 160
	sampleMemory = 256
	// stackMemory is what a distinct stack of the profile takes beside
	// its frames (its slice header and map entry), frameMemory a frame
	// of it (a location pointer).
	stackMemory = 96
	frameMemory = 8
	// markMemory is what a sampling.TruncatedName frame takes (its
	// location, function and name), at most one per stack cut.
	markMemory = 256
	// trieMemory is what a stack of the trie takes (push: its node, its
	// map entry, a slice's and a map's growth).
	trieMemory = 56
)

// workCheck is how many steps of a read (events, frames opened or
// closed, frames put in stacks) pass between looks at Options.Context.
const workCheck = 1 << 16

// Frame is one frame as a JSON profile names it.
type Frame struct {
	Name, File string
	Line, Col  int64
}

// Thread is what a sample's labels say of where it ran: comm (the
// thread's or profile's name), and pid and tid when known (-1 if not).
type Thread struct {
	Comm     string
	Pid, Tid int64
}

// noTime marks a record without a time.
const noTime = math.MinInt64

// maxValue bounds a weight (2^60 ns, 36 years) and maxTime a time (2^61
// ns, 73 years: wall clocks in ns since 1970 fit), so that a span's end
// and the span of all times stay within an int64.
const (
	maxValue = 1 << 60
	maxTime  = 1 << 61
)

// node is one stack in the trie of stacks: its leaf frame and the stack
// it was called from (-1 for a root frame).
type node struct{ parent, frame int32 }

// sumCell is where the samples read are summed as they are read: a stack
// and thread (key), a sample type, and the time bucket of width
// builder.width that holds them (noTime: no time), so that a read keeps
// memory in proportion to its distinct stacks and the time buckets they
// fall in, not to its samples.
type sumCell struct {
	at  int64
	key int32
	typ int16
}

type keyID struct{ node, thread int32 }

// builder accumulates stacks into a profile.
type builder struct {
	opt      Options
	frames   []Frame
	frameIdx map[Frame]int32
	nodes    []node
	nodeIdx  map[node]int32
	threads  []Thread
	thIdx    map[Thread]int32
	keys     []keyID
	keyIdx   map[keyID]int32
	types    []*profile.ValueType
	defType  int // index of the default sample type, -1 if none chosen
	cells    map[sumCell]int32
	order    []sumCell
	values   []int64 // of each cell of order
	records  int     // samples and spans read
	// width is the time buckets' width (ns) the timed cells are summed
	// in, aligned to multiples of it: a power of ten times
	// sampling.MinTimeBucket, never more than the width finish buckets
	// the profile's times in (sampling.TimeBucket of their span, t0 to
	// t1), so finish can sum the cells again into its buckets; it grows
	// with the span (coarsen).
	width, t0, t1   int64
	kept            int64 // bytes a format keeps beside the cells (keep)
	comments        []string
	reserved        int64 // what opt.Reserve gave
	work, nextCheck int   // steps of the read, and when to check opt.Context next (tick)
	nodesKept       int   // the trie's nodes whose memory keep took (tick)
	// walked counts the nodes of trees the read visits (a stack pushed,
	// a node of a V8 profile's tree walked), which
	// TestHostileSamplesWalk holds to the input's size.
	walked  int
	bad     int
	badWhat []string
}

func newBuilder(opt Options) *builder {
	return &builder{
		opt:      opt,
		frameIdx: map[Frame]int32{},
		nodeIdx:  map[node]int32{},
		thIdx:    map[Thread]int32{},
		keyIdx:   map[keyID]int32{},
		defType:  -1,
		cells:    map[sumCell]int32{},
		width:    sampling.MinTimeBucket,
		t0:       math.MaxInt64,
		t1:       math.MinInt64,
	}
}

// frame returns the ID of f.
func (b *builder) frame(f Frame) int32 {
	if i, ok := b.frameIdx[f]; ok {
		return i
	}
	i := int32(len(b.frames))
	b.frames = append(b.frames, f)
	b.frameIdx[f] = i
	return i
}

// push returns the stack of frame called from stack parent (-1: none).
// It is a step of the read (tick).
func (b *builder) push(parent, frame int32) int32 {
	b.work++
	b.walked++
	n := node{parent, frame}
	if i, ok := b.nodeIdx[n]; ok {
		return i
	}
	i := int32(len(b.nodes))
	b.nodes = append(b.nodes, n)
	b.nodeIdx[n] = i
	return i
}

// stack returns the stack of frames, root first.
func (b *builder) stack(frames []int32) int32 {
	s := int32(-1)
	for _, f := range frames {
		s = b.push(s, f)
	}
	return s
}

// thread returns the ID of t.
func (b *builder) thread(t Thread) int32 {
	if i, ok := b.thIdx[t]; ok {
		return i
	}
	i := int32(len(b.threads))
	b.threads = append(b.threads, t)
	b.thIdx[t] = i
	return i
}

// valueType returns the index of the sample type typ/unit.
func (b *builder) valueType(typ, unit string) int {
	for i, t := range b.types {
		if t.Type == typ && t.Unit == unit {
			return i
		}
	}
	b.types = append(b.types, &profile.ValueType{Type: typ, Unit: unit})
	return len(b.types) - 1
}

// add records value of type typ on stack (-1: the empty stack, which is
// dropped, as speedscope drops time outside every frame) in thread th,
// at time at (ns; noTime if unknown); a span's value is a duration from
// at, spread over the time buckets it covers. It is summed into its
// cells at once: nothing is kept per record.
func (b *builder) add(stack, th int32, typ int, value, at int64, span bool) error {
	if stack < 0 || value == 0 {
		return nil
	}
	if value < 0 || value > maxValue {
		b.skip(fmt.Sprintf("a weight of %d", value))
		return nil
	}
	if at != noTime && (at < -maxTime || at > maxTime) {
		at = noTime
	}
	if err := b.tick(1); err != nil {
		return err
	}
	if b.opt.MaxRecords > 0 && b.records >= b.opt.MaxRecords {
		return fmt.Errorf("%w: more than %d samples or events (restart the server with a larger --max-records to accept it)", ErrLimit, b.opt.MaxRecords)
	}
	b.records++
	k := keyID{stack, th}
	ki, ok := b.keyIdx[k]
	if !ok {
		ki = int32(len(b.keys))
		b.keys = append(b.keys, k)
		b.keyIdx[k] = ki
	}
	if at == noTime {
		return b.addCell(sumCell{noTime, ki, int16(typ)}, value)
	}
	end := at
	if span {
		end += value - 1
	}
	b.t0, b.t1 = min(b.t0, at), max(b.t1, end)
	b.coarsen()
	w := b.width
	if !span {
		return b.addCell(sumCell{floorTo(at, w), ki, int16(typ)}, value)
	}
	// A span's weight is spread over the buckets it covers.
	for v := value; v > 0; {
		bucket := floorTo(at, w)
		part := min(v, bucket+w-at)
		if err := b.addCell(sumCell{bucket, ki, int16(typ)}, part); err != nil {
			return err
		}
		v -= part
		at += part
	}
	return nil
}

// floorTo is at rounded down to a multiple of w.
func floorTo(at, w int64) int64 {
	q := at / w
	if at%w < 0 {
		q--
	}
	return q * w
}

// addCell adds v to c, taking memory for a new cell.
func (b *builder) addCell(c sumCell, v int64) error {
	i, ok := b.cells[c]
	if !ok {
		if err := b.need(b.kept + int64(len(b.order)+1)*cellMemory); err != nil {
			return err
		}
		i = int32(len(b.order))
		b.cells[c] = i
		b.order = append(b.order, c)
		b.values = append(b.values, 0)
	}
	b.values[i] += v
	return nil
}

// coarsen widens the cells' buckets when the span of times grew past
// what finish buckets at the width: to the largest power of ten times
// sampling.MinTimeBucket that finish's width (1, 2 or 5 times a power of
// ten) is a multiple of, summing the cells again. The cells then cover
// at most 5 × sampling.MaxTimeBuckets buckets.
func (b *builder) coarsen() {
	span := b.t1 - b.t0
	if span/b.width < sampling.MaxTimeBuckets {
		return
	}
	fin := int64(sampling.TimeBucket(uint64(span)))
	w := b.width
	for w*10 <= fin {
		w *= 10
	}
	if w == b.width {
		return
	}
	b.width = w
	order, values := b.order, b.values
	b.order, b.values = nil, nil
	clear(b.cells)
	for i, c := range order {
		if c.at != noTime {
			c.at = floorTo(c.at, w)
		}
		j, ok := b.cells[c]
		if !ok {
			j = int32(len(b.order))
			b.cells[c] = j
			b.order = append(b.order, c)
			b.values = append(b.values, 0)
		}
		b.values[j] += values[i]
	}
}

// keep takes n more bytes from opt.Reserve for what a format keeps until
// its end beside the cells.
func (b *builder) keep(n int64) error {
	b.kept += n
	return b.need(b.kept + int64(len(b.order))*cellMemory)
}

// unkeep gives back n bytes of what keep took, once the format no longer
// keeps them, for what it keeps next (the budget's share is not given
// back: the read's peak stays taken).
func (b *builder) unkeep(n int64) { b.kept = max(b.kept-n, 0) }

// need asks opt.Reserve for memory until the read holds total bytes,
// in steps that double what it holds, so that it is asked a few times.
func (b *builder) need(total int64) error {
	if b.opt.Reserve == nil || total <= b.reserved {
		return nil
	}
	n := max(total-b.reserved, b.reserved, 1<<20)
	if err := b.opt.Reserve(n); err != nil {
		return err
	}
	b.reserved += n
	return nil
}

// tick counts n steps of the read, failing with opt.Context's error
// once it is done, so that a read the client left stops; it takes the
// memory of the trie's new nodes as it grows (push cannot fail).
func (b *builder) tick(n int) error {
	b.work += n
	if b.work < b.nextCheck {
		return nil
	}
	b.nextCheck = b.work + workCheck
	if more := len(b.nodes) - b.nodesKept; more > 0 {
		b.nodesKept = len(b.nodes)
		if err := b.keep(int64(more) * trieMemory); err != nil {
			return err
		}
	}
	if b.opt.Context != nil {
		return b.opt.Context.Err()
	}
	return nil
}

// ticks does what k calls of tick(1) do (k frames closed at once): the
// same checks of opt.Context and takes of the trie's memory at the same
// steps, in a turn of its loop per check, not per step.
func (b *builder) ticks(k int) error {
	for k > 0 {
		// The j-th call (from 0) counts step b.work+j+1.
		j := max(b.nextCheck-b.work-1, 0)
		if j >= k {
			b.work += k
			return nil
		}
		b.work += j
		if err := b.tick(1); err != nil {
			return err
		}
		k -= j + 1
	}
	return nil
}

// reopen does what opening k frames whose stacks the trie holds does
// (each a tick(1), then push's step): the same checks at the same
// steps, in a turn of its loop per check, not per frame.
func (b *builder) reopen(k int) error {
	for k > 0 {
		// The j-th frame's tick (from 0) counts step b.work+2j+1.
		j := max((b.nextCheck-b.work)/2, 0)
		if j >= k {
			b.work += 2 * k
			return nil
		}
		b.work += 2 * j
		if err := b.tick(1); err != nil {
			return err
		}
		b.work++
		k -= j + 1
	}
	return nil
}

// skip counts one unreadable part of the input, naming the first few.
func (b *builder) skip(why string) {
	b.bad++
	if len(b.badWhat) < 3 {
		b.badWhat = append(b.badWhat, why)
	}
}

// timeline adds the weight of an evented profile's stacks: between two
// events, the stack open then weighs the time between them.
type timeline struct {
	b     *builder
	th    int32
	typ   int
	timed bool // values are nanoseconds since a common origin
	stack []int32
	node  int32
	last  int64
	began bool
}

func (b *builder) timeline(th int32, typ int, timed bool) *timeline {
	return &timeline{b: b, th: th, typ: typ, timed: timed, node: -1}
}

// advance gives the open stack the weight up to at.
func (t *timeline) advance(at int64) error {
	if !t.began {
		t.last, t.began = at, true
		return nil
	}
	if at <= t.last {
		return nil
	}
	when := int64(noTime)
	if t.timed {
		when = t.last
	}
	err := t.b.add(t.node, t.th, t.typ, at-t.last, when, t.timed)
	t.last = at
	return err
}

// open enters frame at at.
func (t *timeline) open(frame int32, at int64) error {
	if err := t.b.tick(1); err != nil {
		return err
	}
	if err := t.advance(at); err != nil {
		return err
	}
	t.node = t.b.push(t.node, frame)
	t.stack = append(t.stack, t.node)
	return nil
}

// close leaves the innermost open frame at at.
func (t *timeline) close(at int64) error {
	if err := t.b.tick(1); err != nil {
		return err
	}
	if err := t.advance(at); err != nil {
		return err
	}
	if len(t.stack) == 0 {
		return nil
	}
	t.stack = t.stack[:len(t.stack)-1]
	t.node = t.b.nodes[t.node].parent
	return nil
}

// top is the frame of the innermost open frame, -1 if none.
func (t *timeline) top() int32 {
	if t.node < 0 {
		return -1
	}
	return t.b.nodes[t.node].frame
}

// depth is how many frames are open.
func (t *timeline) depth() int { return len(t.stack) }

// finish returns the profile, or an error when nothing could be read.
// format names the format in errors.
func (b *builder) finish(format string) (*profile.Profile, error) {
	if len(b.order) == 0 {
		if b.bad > 0 {
			return nil, fmt.Errorf("no %s sample could be read (%d unreadable: %s)", format, b.bad, strings.Join(b.badWhat, "; "))
		}
		return nil, fmt.Errorf("the %s input holds no samples", format)
	}
	p := &profile.Profile{SampleType: b.types}
	if b.bad > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: skipped %s: %s", sampling.CountOf(b.bad, "unreadable parts"), strings.Join(b.badWhat, "; ")))
	}
	p.Comments = append(p.Comments, b.comments...)
	if b.defType >= 0 {
		t := b.types[b.defType]
		p.DefaultSampleType = t.Type
		p.PeriodType = &profile.ValueType{Type: t.Type, Unit: t.Unit}
	}
	locs := b.locations(p)
	b.cells = nil // the cells are summed again from b.order and b.values
	w, origin := int64(0), int64(0)
	if b.t0 <= b.t1 {
		// The read's cells sum again into buckets of w (a multiple of
		// their width, coarsen), aligned as they are; a sample's time is
		// its bucket's start from the first bucket's.
		w = int64(sampling.TimeBucket(uint64(b.t1 - b.t0)))
		origin = floorTo(b.t0, w)
	}
	// Each sample's values are a slice of one array; samples of a thread
	// share its label maps, and of a thread and time their numeric ones.
	type sampleCell struct {
		key int32
		at  int64
	}
	cells := map[sampleCell]int32{}
	var values []int64
	var order []sampleCell
	nt := len(b.types)
	base := b.kept + int64(len(b.order))*cellMemory
	var needErr error
	bucketed := func(timed bool) {
		clear(cells)
		order, values = order[:0], values[:0]
		for i, c := range b.order {
			at := int64(noTime)
			if timed && c.at != noTime {
				at = floorTo(c.at, w) - origin
			}
			sc := sampleCell{c.key, at}
			j, ok := cells[sc]
			if !ok {
				if err := b.need(base + int64(len(order)+1)*sampleMemory); err != nil && needErr == nil {
					needErr = err
				}
				j = int32(len(order))
				cells[sc] = j
				order = append(order, sc)
				values = append(values, make([]int64, nt)...)
			}
			values[int(j)*nt+int(c.typ)] += b.values[i]
		}
	}
	bucketed(w > 0)
	if needErr != nil {
		return nil, needErr
	}
	if w > 0 && b.opt.MaxSamples > 0 && len(cells) > b.opt.MaxSamples {
		n := len(cells)
		bucketed(false)
		if len(cells) <= b.opt.MaxSamples {
			p.Comments = append(p.Comments, fmt.Sprintf("warning: sample times dropped: kept per time bucket, the profile would hold %d samples, over the limit of %d; it has no timeline", n, b.opt.MaxSamples))
		}
	}
	if b.opt.MaxSamples > 0 && len(cells) > b.opt.MaxSamples {
		return nil, fmt.Errorf("%w: more than %d distinct stacks (restart the server with a larger --max-samples to accept it)", ErrLimit, b.opt.MaxSamples)
	}
	b.order, b.values = nil, nil
	clear(cells)
	nodes := make([]int32, len(order))
	for i, c := range order {
		nodes[i] = b.keys[c.key].node
	}
	stacks, err := b.stacks(p, locs, nodes, base+int64(len(order))*sampleMemory)
	if err != nil {
		return nil, err
	}
	type threadAt struct {
		thread int32
		at     int64
	}
	labels := make([]map[string][]string, len(b.threads))
	numLabels := map[threadAt]map[string][]int64{}
	timeUnit := map[string][]string{sampling.TimeLabel: {"nanoseconds"}}
	samples := make([]profile.Sample, len(order))
	p.Sample = make([]*profile.Sample, len(order))
	for i, c := range order {
		k := b.keys[c.key]
		s := &samples[i]
		s.Location = stacks[k.node]
		s.Value = values[i*nt : (i+1)*nt : (i+1)*nt]
		th := b.threads[k.thread]
		if th.Comm != "" {
			if labels[k.thread] == nil {
				labels[k.thread] = map[string][]string{"comm": {th.Comm}}
			}
			s.Label = labels[k.thread]
		}
		if th.Pid >= 0 || th.Tid >= 0 || c.at != noTime {
			ta := threadAt{k.thread, c.at}
			num := numLabels[ta]
			if num == nil {
				num = map[string][]int64{}
				if th.Pid >= 0 {
					num["pid"] = []int64{th.Pid}
				}
				if th.Tid >= 0 {
					num["tid"] = []int64{th.Tid}
				}
				if c.at != noTime {
					num[sampling.TimeLabel] = []int64{c.at}
				}
				numLabels[ta] = num
			}
			s.NumLabel = num
			if c.at != noTime {
				s.NumUnit = timeUnit
			}
		}
		p.Sample[i] = s
	}
	return p, nil
}

// stacks makes the location slices of the stacks nodes names (each
// sample's), leaf first: one per stack, which its samples share, all cut
// from one array. A stack deeper than opt.MaxStackDepth keeps its
// leaf-most MaxStackDepth-1 frames under a sampling.TruncatedName frame
// (added to p), as ingest cuts every format's stacks, and p's warnings
// say so. The frames of all samples together are counted from the
// stacks' depths against opt.MaxFrames, and the slices' memory taken
// (held: what the read holds beside them), before any slice is made:
// deep stacks cost the frames the profile keeps, not a walk of every
// sample's whole stack.
func (b *builder) stacks(p *profile.Profile, locs []*profile.Location, nodes []int32, held int64) (map[int32][]*profile.Location, error) {
	// A node's parent is pushed before it: all depths in one pass.
	depth := make([]int32, len(b.nodes))
	for i, n := range b.nodes {
		depth[i] = 1
		if n.parent >= 0 {
			depth[i] += depth[n.parent]
		}
	}
	limit := b.opt.MaxStackDepth
	kept := func(d int) int {
		if limit > 0 && d > limit {
			return limit
		}
		return d
	}
	var frames int64
	cut, deepest, cutStacks, size := 0, 0, 0, 0
	at := map[int32]int{} // a stack's offset in the array
	for _, n := range nodes {
		d := int(depth[n])
		k := kept(d)
		if k < d {
			cut++
			deepest = max(deepest, d)
		}
		if frames += int64(k); b.opt.MaxFrames > 0 && frames > int64(b.opt.MaxFrames) {
			return nil, fmt.Errorf("%w: more than %d frames in the profile's stacks (restart the server with a larger --max-frames to accept it)", ErrLimit, b.opt.MaxFrames)
		}
		if _, ok := at[n]; !ok {
			at[n] = size
			size += k
			if k < d {
				cutStacks++
			}
		}
	}
	mem := held + int64(len(b.nodes))*4 + int64(len(at))*stackMemory + int64(size)*frameMemory + int64(cutStacks)*markMemory
	if err := b.need(mem); err != nil {
		return nil, err
	}
	all := make([]*profile.Location, size)
	stacks := make(map[int32][]*profile.Location, len(at))
	marks := map[int]*profile.Location{}
	for _, n := range nodes {
		if _, ok := stacks[n]; ok {
			continue
		}
		d, off := int(depth[n]), at[n]
		k := kept(d)
		st := all[off : off+k : off+k]
		walk := k
		if k < d {
			walk = k - 1
		}
		m := n
		for i := range walk {
			st[i] = locs[b.nodes[m].frame]
			m = b.nodes[m].parent
		}
		if walk < k {
			st[walk] = mark(p, marks, d-walk)
		}
		stacks[n] = st
		if err := b.tick(k); err != nil {
			return nil, err
		}
	}
	if cut > 0 {
		// Distinct stacks: a stack's samples are kept apart per thread
		// and time bucket, and the warning counted each (400 "stacks"
		// for 20,000 samples of one).
		p.Comments = append(p.Comments, sampling.DeepStacksWarning(cutStacks, limit, deepest))
	}
	return stacks, nil
}

// mark is the location of the frame that stands for n frames cut from a
// stack (sampling.TruncatedName), added to p once per n (marks).
func mark(p *profile.Profile, marks map[int]*profile.Location, n int) *profile.Location {
	if m := marks[n]; m != nil {
		return m
	}
	name := sampling.TruncatedName(n)
	fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
	p.Function = append(p.Function, fn)
	m := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
	p.Location = append(p.Location, m)
	marks[n] = m
	return m
}

// locations makes one location per frame, with a function per name and
// file, and adds them to p.
func (b *builder) locations(p *profile.Profile) []*profile.Location {
	type fnKey struct{ name, file string }
	fns := map[fnKey]*profile.Function{}
	locs := make([]*profile.Location, len(b.frames))
	for i, f := range b.frames {
		k := fnKey{f.Name, f.File}
		fn := fns[k]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.Name, SystemName: f.Name, Filename: f.File}
			fns[k] = fn
			p.Function = append(p.Function, fn)
		}
		l := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn, Line: max(f.Line, 0), Column: max(f.Col, 0)}}}
		locs[i] = l
		p.Location = append(p.Location, l)
	}
	return locs
}
