package perfdata

import (
	"cmp"
	"math"
	"slices"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
)

// What a conversion will keep, estimated while Scan reads the records, so
// that a recording over the caller's limits or memory is refused in
// seconds, before anything is aggregated, and one whose time buckets would
// keep too many samples can be converted with coarser ones.

// Estimate is what Convert is expected to keep from a Scan'ed File with
// time buckets of width Bucket (0: no time label), counted from the
// sample records' raw call chains (the same thread, bucket and addresses
// make one pprof sample, as in Convert). Counts are exact up to a few
// thousand and sampled above, within about 2%. User stacks that only
// unwinding recovers (--call-graph=dwarf, when Scan keeps them for it:
// Options.UserStacks) are counted by their sampled pc and the words of
// the stack copy that fall in an executable mapping, as return addresses
// do: a few more than unwinding finds (stale words, the auxiliary
// vector's entry point), never fewer, so the estimate stays an upper bound
// for them.
type Estimate struct {
	Bucket uint64
	// Samples are the distinct pprof samples; Frames their frames
	// together, each stack cut to the depth given to Estimates.
	Samples, Frames int64
	// Stacks are the distinct call chains and StackFrames their frames;
	// Locations the distinct addresses;
	// Labels the distinct thread and time bucket pairs (one label map
	// each).
	Stacks, StackFrames, Locations, Labels int64
	// Records is how many records the index holds.
	Records int64
}

// Memory is about the bytes Convert allocates for what e counts, on top
// of the File's index (IndexMemory): per sample its struct, values, map
// entry and slot in the profile (272), per stack its key and shared
// location slice (80 + 12 a frame), per location its struct and map entry
// (120), per thread and bucket its label map (360). Measured on
// system-wide recordings, within a fifth of the live heap.
func (e Estimate) Memory() int64 {
	return 272*e.Samples + 80*e.Stacks + 12*e.StackFrames + 120*e.Locations + 360*e.Labels
}

// IndexMemory is what a Scan'ed File keeps per record: its time and
// position (16 bytes), with room for the index's growth.
func (f *File) IndexMemory() int64 { return int64(cap(f.refs)) * 16 }

// Estimates are what Convert would keep at each time bucket width it
// could be given (ConvertOptions.TimeBucket), finest first: the width
// Convert picks by itself, up to three coarser widths of the 1-2-5
// series, one bucket for the whole recording, and last no time label
// (Bucket 0).
// Frames are counted with stacks cut to depth frames (0: not cut). A
// File from Read, or converted already, has none; one whose samples have
// no time only the last. A
// header without the first and last sample times (pipe mode, perf
// record -z or --buildid-mmap) has them counted from the first sample's
// time at every width up to maxAdaptiveWidth that the span read so far
// leaves possible, and one bucket is counted as no time label is.
func (f *File) Estimates(depth int) []Estimate {
	if f.est == nil {
		return nil
	}
	out := make([]Estimate, 0, len(f.est.byWidth)+1)
	stacks, stackFrames := f.est.stacks.count(0)
	locs, _ := f.est.locs.count(0)
	widths := f.est.byWidth
	if f.sampleFirst != 0 && len(widths) > 1 {
		// Convert's own width, from the samples' span, is the first.
		own := sampling.TimeBucket(f.sampleLast - f.sampleFirst)
		for len(widths) > 1 && widths[0].width < own {
			widths = widths[1:]
		}
		if f.est.adaptive {
			// Convert's own, up to three coarser, then one bucket for the
			// whole, which keeps what no time label does.
			span := f.sampleLast - f.sampleFirst
			var keep []widthSet
			for _, w := range widths {
				if w.width <= span && len(keep) < 4 {
					keep = append(keep, w)
				}
			}
			one := f.est.none
			for one.width = sampling.MinTimeBucket; one.width <= span && one.width != math.MaxUint64; one.width = nextWidth(one.width) {
			}
			widths = append(keep, one)
		}
	}
	for _, w := range append(widths[:len(widths):len(widths)], f.est.none) {
		n, fr := w.samples.count(depth)
		labels, _ := w.labels.count(0)
		out = append(out, Estimate{Bucket: w.width, Samples: n, Frames: fr, Stacks: stacks, StackFrames: stackFrames,
			Locations: locs, Labels: labels, Records: int64(len(f.refs))})
	}
	return out
}

// estimator counts, during a Scan, the distinct keys of what Convert keeps.
type estimator struct {
	t0      uint64
	byWidth []widthSet
	none    widthSet // no time label
	stacks  distinct
	locs    distinct
	// adaptive: the header gave no sample times, so t0 is the first
	// sample's and every width is counted that the latest time read
	// (last) still leaves possible (drop).
	adaptive bool
	last     uint64
	n        int
}

// maxAdaptiveWidth is the coarsest width counted without the header's
// sample times, three coarser than Convert's own for a recording of 80
// minutes: a longer one has fewer estimates.
const maxAdaptiveWidth = 100_000_000_000

// drop stops counting the widths finer than Convert's own for the span
// read so far: the whole span, only longer, makes them finer still.
func (e *estimator) drop() {
	own := sampling.TimeBucket(e.last - e.t0)
	i := 0
	for i < len(e.byWidth)-1 && e.byWidth[i].width < own {
		i++
	}
	e.byWidth = e.byWidth[i:]
}

// codeRanges are the address ranges of the executable user mappings a
// Scan has read, merged, sorted: a word of a copied user stack in one of
// them is counted as a return address the unwinding will find.
type codeRanges []addrRange

type addrRange struct{ lo, hi uint64 }

// add merges [lo, hi) in.
func (c *codeRanges) add(lo, hi uint64) {
	if hi <= lo {
		return
	}
	r := *c
	i, _ := slices.BinarySearchFunc(r, lo, func(a addrRange, lo uint64) int { return cmp.Compare(a.hi, lo) })
	j := i // r[i:j] touch [lo, hi)
	for j < len(r) && r[j].lo <= hi {
		lo, hi = min(lo, r[j].lo), max(hi, r[j].hi)
		j++
	}
	*c = slices.Replace(r, i, j, addrRange{lo, hi})
}

// has reports whether a falls in a range.
func (c codeRanges) has(a uint64) bool {
	if len(c) == 0 || a < c[0].lo || a >= c[len(c)-1].hi {
		return false
	}
	i, _ := slices.BinarySearchFunc(c, a, func(r addrRange, a uint64) int { return cmp.Compare(r.hi, a+1) })
	return i < len(c) && c[i].lo <= a
}

// unwoundFrames calls fn with the frames unwinding is expected to find in
// the user stack of a --call-graph=dwarf sample: its sampled user pc,
// then each word of the stack copy that falls in code.
func (f *File) unwoundFrames(s *Sample, a *Attr, fn func(pc uint64)) {
	if pc, ok := symbolize.SampledUserPC(a.SampleRegsUser, s.RegsUser); ok {
		fn(pc)
	}
	for b := s.Stack; len(b) >= 8; b = b[8:] {
		if w := f.ByteOrder.Uint64(b); f.code.has(w) {
			fn(w)
		}
	}
}

type widthSet struct {
	width           uint64
	samples, labels distinct
}

// newEstimator plans the widths from the header's first and last sample
// times (SAMPLE_TIME), when it has them, else from t, the first sample's.
func newEstimator(first, last, t uint64) *estimator {
	e := &estimator{}
	if (first == 0 || last <= first) && t != 0 {
		e.adaptive, e.t0, e.last = true, t, t
		for w := uint64(sampling.MinTimeBucket); w <= maxAdaptiveWidth; w = nextWidth(w) {
			e.byWidth = append(e.byWidth, widthSet{width: w})
		}
		return e
	}
	if first != 0 && last > first {
		span := last - first
		e.t0 = first
		// From one width finer than the header's span gives (Convert
		// picks from the span of the samples themselves, Estimates), the
		// next four, then one bucket: each width costs the Scan time, and
		// coarser ones keep little less than one bucket does.
		w := prevWidth(sampling.TimeBucket(span))
		for range 5 {
			e.byWidth = append(e.byWidth, widthSet{width: w})
			if w > span {
				return e
			}
			w = nextWidth(w)
		}
		for w <= span {
			w = nextWidth(w)
		}
		e.byWidth = append(e.byWidth, widthSet{width: w})
	}
	return e
}

// nextWidth is the next width of the 1-2-5 series TimeBucket picks from,
// or math.MaxUint64 past the last the series holds in 64 bits, so that a
// loop up to a damaged header's span still ends.
func nextWidth(w uint64) uint64 {
	if w >= math.MaxUint64/10 {
		return math.MaxUint64
	}
	for m := uint64(1); ; m *= 10 {
		switch w {
		case m:
			return 2 * m
		case 2 * m:
			return 5 * m
		case 5 * m:
			return 10 * m
		}
		if w < m {
			return 2 * w
		}
	}
}

// prevWidth is the width of the 1-2-5 series before w, at least
// sampling.MinTimeBucket.
func prevWidth(w uint64) uint64 {
	p := uint64(sampling.MinTimeBucket)
	for n := nextWidth(p); n < w; n = nextWidth(n) {
		p = n
	}
	return p
}

// sample counts one sample record of f: with unwinding (Options.UserStacks),
// a DWARF-mode sample's user frames are counted as f.unwoundFrames finds them.
func (e *estimator) sample(f *File, s *Sample) {
	a := f.Attrs[s.Attr]
	hasIP := a.SampleType&sIP != 0
	kernel := kernelMode(s.CPUMode)
	h := mix(uint64(s.Attr) + 1)
	frames, userFrames := uint32(0), 0
	for _, ip := range s.Callchain {
		h = mix(h ^ ip)
		if ip >= contextMax {
			kernel = switchContext(ip, kernel)
			continue
		}
		frames++
		if !kernel {
			userFrames++
		}
		e.location(ip, kernel)
	}
	if userFrames == 0 && s.RegsUser != nil && f.userStacks { // as converter.stack unwinds
		f.unwoundFrames(s, a, func(pc uint64) {
			h = mix(h ^ pc)
			frames++
			e.location(pc, false)
		})
	}
	if frames == 0 && hasIP {
		h = mix(h ^ s.IP)
		frames = 1
		e.location(s.IP, kernelMode(s.CPUMode))
	}
	e.stacks.add(h, frames)
	thread := mix(uint64(s.Tid)<<32 | uint64(s.Pid))
	e.none.samples.add(mix(h^thread), frames)
	e.none.labels.add(thread, 0)
	if e.adaptive {
		e.last = max(e.last, s.Time)
		if e.n++; e.n%4096 == 0 {
			e.drop()
		}
	}
	for i := range e.byWidth {
		w := &e.byWidth[i]
		var at uint64
		if s.Time >= e.t0 {
			at = (s.Time-e.t0)/w.width + 1
		}
		tb := mix(thread ^ at*0x9e3779b97f4a7c15)
		w.samples.add(mix(h^tb), frames)
		w.labels.add(tb, 0)
	}
}

// location counts a frame's address. Processes running one program or
// library at one load address share its locations (a location is an
// address in a mapping), so the address alone is the key: counting per
// process overestimated the locations of a busy system-wide recording
// threefold.
func (e *estimator) location(addr uint64, kernel bool) {
	if kernel {
		addr = ^addr
	}
	e.locs.add(mix(addr), 0)
}

// mix is a 64-bit finalizer (splitmix64's): its outputs' low bits are
// uniform, which distinct's sampling relies on.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// distinct counts distinct 64-bit hashes, and a sum of one value per
// hash, in bounded memory: it keeps the hashes whose low level bits are
// zero, and when it holds more than distinctCap it keeps half of them
// (adaptive sampling), so a count is len × 2^level.
type distinct struct {
	level uint
	keys  map[uint64]uint32
	// recent holds hashes added lately (+1), by their top bits: the keys
	// every record repeats (the timer interrupt's kernel frames) skip the
	// map, which was most of the estimate's time.
	recent [64]uint64
}

// distinctCap bounds the hashes one distinct keeps: its count's relative
// error is then about 1/sqrt(distinctCap/2), under 2%. Small enough for
// the maps to stay in the CPU's caches: at 1<<15 the Scan of a busy
// recording took 7 times as long as without the estimate.
const distinctCap = 1 << 13

func (d *distinct) add(h uint64, v uint32) {
	if h&(1<<d.level-1) != 0 || d.recent[h>>58] == h+1 {
		return
	}
	d.recent[h>>58] = h + 1
	if d.keys == nil {
		d.keys = map[uint64]uint32{}
	}
	if _, ok := d.keys[h]; ok {
		return
	}
	d.keys[h] = v
	for len(d.keys) > distinctCap {
		// Into a new map: deleting in place leaves tombstones that made
		// every later lookup probe far (a Scan took 7 times as long).
		d.level++
		kept := make(map[uint64]uint32, distinctCap)
		for k, v := range d.keys {
			if k&(1<<d.level-1) == 0 {
				kept[k] = v
			}
		}
		d.keys = kept
	}
}

// count is the estimated number of distinct hashes and the sum of their
// values, each cut to depth (0: not cut).
func (d *distinct) count(depth int) (n, sum int64) {
	for _, v := range d.keys {
		if depth > 0 {
			v = min(v, uint32(depth))
		}
		sum += int64(v)
	}
	return int64(len(d.keys)) << d.level, sum << d.level
}
