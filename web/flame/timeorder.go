package flame

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// TimeOrderThreads is how many threads a time-order view draws: the
// busiest in its range, as many as the timeline shows rows of their own.
const TimeOrderThreads = TimelineThreads

// MaxTimeOrderBoxes bounds the boxes of one time-order view, whatever its
// width, threads and stack depths: past it, the narrowest are left out.
const MaxTimeOrderBoxes = 60_000

// MaxTimeOrderWidth bounds the width, in columns (pixels), a view is
// asked for.
const MaxTimeOrderWidth = 4096

// TimeOrder is a profile's samples per thread in time order: the input of
// the time-order view (speedscope's "time order", the Firefox Profiler's
// stack chart). Each thread's samples are kept as (time, stack, value),
// by time, then by stack in the flame graph's order; the stacks, names and
// filter are a Stacks'. A time is the start of the sample's time bucket
// (sampling.TimeLabel): every reader keeps times per bucket, so within a
// bucket the order of the samples is not known.
type TimeOrder struct {
	st      *Stacks
	Bucket  int64 // the width of a time bucket (the timeline's), ns; 0: no sample has a time
	Span    int64 // the buckets' span, ns
	threads []orderThread
}

// orderThread is one thread's samples, by time, then stack.
type orderThread struct {
	name string
	at   []int64 // the bucket's start
	pos  []int32 // the stack: its index in st.ws
	val  []int64
}

// NewTimeOrder indexes p's samples of sample index si that opt.Filter
// keeps (but for its Time range, which View takes) by thread and time.
// Work and memory are in proportion to p's samples.
func NewTimeOrder(p *profile.Profile, si int, opt Options) *TimeOrder {
	opt.Filter.Time = nil
	st, of, pos := sortedStacks(p, si, opt)
	o := &TimeOrder{st: st}
	w, n := timeGrid(p)
	if n == 0 {
		return o
	}
	o.Bucket, o.Span = w, int64(n)*w
	type entry struct {
		th  int32
		pos int32
		at  int64
		v   int64
	}
	var es []entry
	byKey := map[string]int32{}
	var key []byte
	for k, s := range p.Sample {
		g := of[k]
		if g < 0 || pos[g] < 0 {
			continue
		}
		ts := s.NumLabel[sampling.TimeLabel]
		if len(ts) != 1 || ts[0] < 0 {
			continue
		}
		opt.work.tick()
		key = threadKey(s, key[:0])
		th, ok := byKey[string(key)]
		if !ok {
			th = int32(len(o.threads))
			byKey[string(key)] = th
			o.threads = append(o.threads, orderThread{name: threadName(key)})
		}
		es = append(es, entry{th, pos[g], ts[0], s.Value[si]})
	}
	slices.SortFunc(es, func(a, b entry) int {
		if a.th != b.th {
			return int(a.th - b.th)
		}
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return int(a.pos - b.pos)
	})
	for i, e := range es {
		t := &o.threads[e.th]
		if i > 0 && e.th == es[i-1].th && e.at == es[i-1].at && e.pos == es[i-1].pos {
			t.val[len(t.val)-1] += e.v // one stack's samples of one bucket with other labels
			continue
		}
		t.at = append(t.at, e.at)
		t.pos = append(t.pos, e.pos)
		t.val = append(t.val, e.v)
	}
	return o
}

// TimeOrderView is one range of a TimeOrder drawn at a width: time.json.
// Each thread's samples are laid out in time order, a column per time
// bucket, or per pixel (Column) when a bucket is narrower; a column's
// stacks share it in proportion to their values, in the flame graph's
// order, and consecutive stacks' common frames are one box. Boxes under
// half a column's pixel are left out (Hidden counts them): the boxes are
// at most twice the width per depth and thread, and MaxTimeOrderBoxes in
// all.
type TimeOrderView struct {
	Version      int           `json:"version"`
	SampleType   string        `json:"sample_type"`
	Unit         string        `json:"unit"`
	BucketNanos  int64         `json:"bucket_ns"` // the samples' time resolution; 0 when they have no times
	SpanNanos    int64         `json:"span_ns"`   // the whole recording's
	FromNanos    int64         `json:"from_ns"`   // the range shown, since the first sample
	ToNanos      int64         `json:"to_ns"`
	ColumnNanos  int64         `json:"column_ns"` // the width of a column
	Names        []string      `json:"names"`
	Mapping      []int32       `json:"mapping"`  // per name: index into Mappings, -1 none
	Mappings     []string      `json:"mappings"` // binaries' paths
	Threads      []OrderThread `json:"threads"`  // the busiest in the range first
	OtherThreads int           `json:"other_threads"`
	Hidden       int           `json:"hidden"` // boxes too narrow to draw, left out
}

// OrderThread is one thread's boxes: five numbers each, its start and end
// (ns since the first sample), depth (0: the outermost frame), name index
// and the value of its samples.
type OrderThread struct {
	Name  string  `json:"name"` // as the timeline names it
	Value int64   `json:"value"`
	Depth int     `json:"depth"` // the deepest box's depth + 1
	Boxes []int64 `json:"boxes"`
}

// TimeOrderVersion is time.json's version.
const TimeOrderVersion = 1

// View lays out the samples in r (nil: the whole recording) for width
// columns, checking opt's context (WithContext) as it goes. Work is in
// proportion to the samples in r and their depth; the view's size to
// width (see TimeOrderView).
func (o *TimeOrder) View(r *TimeRange, width int, opt Options) *TimeOrderView {
	v := &TimeOrderView{Version: TimeOrderVersion, SampleType: o.st.SampleType, Unit: o.st.Unit,
		BucketNanos: o.Bucket, SpanNanos: o.Span, Names: []string{}, Mapping: []int32{}, Mappings: []string{}, Threads: []OrderThread{}}
	if o.Bucket == 0 {
		return v
	}
	width = min(max(width, 1), MaxTimeOrderWidth)
	from, to := int64(0), o.Span
	if r != nil {
		from, to = max(r.From, 0), min(r.To, o.Span)
	}
	if to <= from {
		from, to = 0, 0
	}
	v.FromNanos, v.ToNanos = from, to
	if to == from {
		return v
	}
	// A column is a whole number of buckets, at least a pixel wide.
	px := (to - from + int64(width) - 1) / int64(width)
	cw := max(1, (px+o.Bucket-1)/o.Bucket) * o.Bucket
	v.ColumnNanos = cw
	minBox := float64(to-from) / float64(width) / 2

	// The threads with samples in the range, busiest first.
	type inRange struct {
		t      *orderThread
		lo, hi int
		value  int64
	}
	var ths []inRange
	for i := range o.threads {
		t := &o.threads[i]
		lo := sort.Search(len(t.at), func(k int) bool { return t.at[k] >= from })
		hi := lo + sort.Search(len(t.at)-lo, func(k int) bool { return t.at[lo+k] >= to })
		if lo == hi {
			continue
		}
		var sum int64
		for _, x := range t.val[lo:hi] {
			sum += x
		}
		ths = append(ths, inRange{t, lo, hi, sum})
	}
	sort.Slice(ths, func(i, j int) bool {
		if ths[i].value != ths[j].value {
			return ths[i].value > ths[j].value
		}
		return ths[i].t.name < ths[j].t.name
	})
	if len(ths) > TimeOrderThreads {
		v.OtherThreads = len(ths) - TimeOrderThreads
		ths = ths[:TimeOrderThreads]
	}

	type box struct {
		start, end int64
		depth      int32
		name       int32
		v          int64
	}
	var boxes [][]box // per thread
	total := 0
	fr := o.st.withWork(opt.work)
	for _, th := range ths {
		t := th.t
		var out []box
		var open []box // by depth: the boxes the last stack is in
		closeFrom := func(d int) {
			for k := len(open) - 1; k >= d; k-- {
				if b := open[k]; float64(b.end-b.start) >= minBox {
					out = append(out, b)
				} else {
					v.Hidden++
				}
			}
			open = open[:d]
		}
		type part struct {
			pos int32
			v   int64
		}
		var col []part
		var prevEnd int64 = -1
		for i := th.lo; i < th.hi; {
			c := t.at[i] / cw
			col = col[:0]
			for ; i < th.hi && t.at[i]/cw == c; i++ {
				fr.tick()
				col = append(col, part{t.pos[i], t.val[i]})
			}
			// One bucket's stacks are in order already; a column of
			// several buckets is sorted and its stacks merged.
			slices.SortFunc(col, func(a, b part) int { return int(a.pos - b.pos) })
			k := 0
			var sum int64
			for _, p := range col {
				if k > 0 && col[k-1].pos == p.pos {
					col[k-1].v += p.v
				} else {
					col[k] = p
					k++
				}
				sum += p.v
			}
			col = col[:k]
			cs, ce := max(c*cw, from), min((c+1)*cw, to)
			if cs != prevEnd {
				closeFrom(0) // the thread had no samples in between
			}
			prevEnd = ce
			var cum int64
			a := cs
			for _, p := range col {
				cum += p.v
				b := ce
				if sum > 0 && cum < sum {
					b = cs + int64(float64(ce-cs)*float64(cum)/float64(sum))
				}
				seq := o.st.ws[p.pos].seq
				l := 0
				for l < len(open) && l < len(seq) && open[l].name == seq[l] {
					l++
				}
				closeFrom(l)
				for d := range open {
					open[d].end = b
					open[d].v += p.v
				}
				for d := l; d < len(seq); d++ {
					fr.tick()
					open = append(open, box{a, b, int32(d), seq[d], p.v})
				}
				a = b
			}
		}
		closeFrom(0)
		boxes = append(boxes, out)
		total += len(out)
	}
	// Past the bound, the narrowest boxes go: a box is never wider than
	// the one it is in, so what stays is whole from the outermost frame.
	// Widths are compared in eighths of a pixel, so that boxes of one
	// width (but for rounding) stay or go together.
	keep := func(box) bool { return true }
	if total > MaxTimeOrderBoxes {
		q := max(1, int64(minBox/4))
		ws := make([]int64, 0, total)
		for _, out := range boxes {
			for _, b := range out {
				ws = append(ws, (b.end-b.start)/q)
			}
		}
		slices.Sort(ws)
		cut := ws[len(ws)-MaxTimeOrderBoxes]
		keep = func(b box) bool { return (b.end-b.start)/q > cut }
	}
	outName := make([]int32, len(fr.names)) // name ID → output index+1
	outMap := map[int32]int32{}
	label := func(nm int32) int64 {
		if o := outName[nm]; o > 0 {
			return int64(o - 1)
		}
		o := int32(len(v.Names))
		v.Names = append(v.Names, fr.names[nm])
		m := int32(-1)
		if fm := fr.nameMapping[nm]; fm >= 0 {
			var ok bool
			if m, ok = outMap[fm]; !ok {
				m = int32(len(v.Mappings))
				v.Mappings = append(v.Mappings, fr.mappings[fm])
				outMap[fm] = m
			}
		}
		v.Mapping = append(v.Mapping, m)
		outName[nm] = o + 1
		return int64(o)
	}
	for i, th := range ths {
		ot := OrderThread{Name: th.t.name, Value: th.value, Boxes: []int64{}}
		for _, b := range boxes[i] {
			if !keep(b) {
				v.Hidden++
				continue
			}
			ot.Boxes = append(ot.Boxes, b.start, b.end, int64(b.depth), label(b.name), b.v)
			ot.Depth = max(ot.Depth, int(b.depth)+1)
		}
		v.Threads = append(v.Threads, ot)
	}
	return v
}

// JSON encodes v.
func (v *TimeOrderView) JSON() []byte {
	b, _ := json.Marshal(v)
	return b
}
