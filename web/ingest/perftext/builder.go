// Package perftext reads the text profiles perf and flame graph tools write:
// `perf script` output, folded stacks (flamegraph.pl's "a;b;c 12") and
// `perf data convert --to-json`. They carry function names already, so frames
// keep the names the text gives, with the DSO as their mapping. Lines that
// cannot be read are counted and named in the profile's comments; an input
// with no readable sample is an error.
package perftext

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
)

// ErrLimit is wrapped by errors about inputs over a caller's limits.
var ErrLimit = errors.New("over the limit")

// Frame is one stack frame as a text format gives it.
type Frame struct {
	Func string
	DSO  string // empty when unknown
	Addr uint64 // 0 when the format has none
	// Inlined are the functions inlined at Addr into Func, innermost first.
	Inlined []string
}

// builder accumulates stacks into a profile, merging equal stacks with equal labels.
type builder struct {
	p          *profile.Profile
	maxSamples int
	types      map[string]int  // event → index of its count type
	events     []string        // events in the order of their types
	periods    map[string]bool // events with a period in the input
	unit       func(event string) string
	funcs      map[string]*profile.Function
	maps       map[string]*profile.Mapping
	locs       map[locKey]*profile.Location
	samples    map[string]*profile.Sample
	key        []byte
	locBuf     []*profile.Location
	n          int

	// at is the time (ns) of the sample add adds next, 0 when the input
	// gives none; timed remembers each timed sample, so that finish can
	// split the aggregated samples by time bucket (sampling.TimeLabel).
	at    int64
	timed []timedSample

	bad      int
	badLines []string
	badWhat  string // what the bad units are: "lines" or "samples"
}

type locKey struct {
	fn, dso, inlined string
	addr             uint64
}

func newBuilder(maxSamples int) *builder {
	return &builder{
		p:          &profile.Profile{},
		maxSamples: maxSamples,
		types:      map[string]int{},
		periods:    map[string]bool{},
		unit:       periodUnit,
		funcs:      map[string]*profile.Function{},
		maps:       map[string]*profile.Mapping{},
		locs:       map[locKey]*profile.Location{},
		samples:    map[string]*profile.Sample{},
		badWhat:    "lines",
	}
}

// periodUnit is the unit of an event's period: perf's clock events count
// nanoseconds, whatever their modifiers (cpu-clock:u, cpu-clock/freq=997/).
func periodUnit(event string) string {
	base := event
	if i := strings.IndexAny(event, ":/"); i >= 0 {
		base = event[:i]
	}
	if base == "cpu-clock" || base == "task-clock" {
		return "nanoseconds"
	}
	return "count"
}

// eventIndex returns the index of event's count type, adding the
// "<event>_count"/count and "<event>"/unit pair on first use.
func (b *builder) eventIndex(event string) int {
	if i, ok := b.types[event]; ok {
		return i
	}
	i := len(b.p.SampleType)
	b.types[event] = i
	b.events = append(b.events, event)
	b.p.SampleType = append(b.p.SampleType,
		&profile.ValueType{Type: event + "_count", Unit: "count"},
		&profile.ValueType{Type: event, Unit: b.unit(event)})
	for _, s := range b.p.Sample {
		s.Value = append(s.Value, 0, 0)
	}
	return i
}

// badLine records an input line that could not be read.
func (b *builder) badLine(n int, line, why string) {
	b.bad++
	if len(b.badLines) < 3 {
		if len(line) > 80 {
			line = line[:80] + "…"
		}
		b.badLines = append(b.badLines, fmt.Sprintf("line %d: %s: %q", n, why, line))
	}
}

func (b *builder) location(f Frame) *profile.Location {
	k := locKey{f.Func, f.DSO, strings.Join(f.Inlined, "\x00"), f.Addr}
	if l := b.locs[k]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: f.Addr}
	if f.DSO != "" {
		m := b.maps[f.DSO]
		if m == nil {
			m = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: f.DSO, HasFunctions: true}
			b.maps[f.DSO] = m
			b.p.Mapping = append(b.p.Mapping, m)
		}
		l.Mapping = m
	}
	for _, name := range append(f.Inlined, f.Func) {
		if name == "" {
			continue
		}
		fn := b.funcs[name]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: symbolize.Demangle(name), SystemName: name}
			b.funcs[name] = fn
			b.p.Function = append(b.p.Function, fn)
		}
		l.Line = append(l.Line, profile.Line{Function: fn})
	}
	b.p.Location = append(b.p.Location, l)
	b.locs[k] = l
	return l
}

// add adds one stack (leaf first) with count and period to event's values.
// A period of 0 means the input gives none: the sample counts once.
func (b *builder) add(event string, frames []Frame, count, period int64, comm string, pid, tid int64) error {
	ei := b.eventIndex(event)
	if period > 0 {
		b.periods[event] = true
	} else {
		period = count
	}
	locs := b.locBuf[:0]
	for _, f := range frames {
		locs = append(locs, b.location(f))
	}
	b.locBuf = locs
	key := b.key[:0]
	key = append(key, comm...)
	key = append(key, 0)
	key = strconv.AppendInt(key, pid, 36)
	key = append(key, ',')
	key = strconv.AppendInt(key, tid, 36)
	key = append(key, 0)
	for _, l := range locs {
		key = strconv.AppendUint(key, l.ID, 36)
		key = append(key, ',')
	}
	b.key = key
	s := b.samples[string(key)]
	if s == nil {
		if b.maxSamples > 0 && len(b.p.Sample) >= b.maxSamples {
			return fmt.Errorf("%w: more than %d distinct stacks", ErrLimit, b.maxSamples)
		}
		s = &profile.Sample{Location: append([]*profile.Location(nil), locs...), Value: make([]int64, len(b.p.SampleType))}
		if comm != "" {
			s.Label = map[string][]string{"comm": {comm}}
		}
		if pid >= 0 || tid >= 0 {
			s.NumLabel = map[string][]int64{}
			if pid >= 0 {
				s.NumLabel["pid"] = []int64{pid}
			}
			if tid >= 0 {
				s.NumLabel["tid"] = []int64{tid}
			}
		}
		b.p.Sample = append(b.p.Sample, s)
		b.samples[string(key)] = s
	}
	s.Value[ei] += count
	s.Value[ei+1] += period
	b.n++
	if b.at > 0 {
		b.timed = append(b.timed, timedSample{s: s, ei: int32(ei), at: b.at, count: count, period: period})
	}
	return nil
}

// timedSample is one input sample with a time: what it added to s.
type timedSample struct {
	s             *profile.Sample
	ei            int32
	at            int64
	count, period int64
}

// splitByTime moves each timed sample's values out of its stack's
// aggregate into a sample of that stack and time bucket, labelled as the
// perf.data converter labels them (sampling.TimeLabel, buckets of
// sampling.TimeBucket of the span): at most sampling.MaxTimeBuckets
// samples per stack, never more than the input's samples. An aggregate
// left with nothing (every sample of it was timed) is dropped.
func (b *builder) splitByTime() {
	if len(b.timed) == 0 {
		return
	}
	t0, t1 := b.timed[0].at, b.timed[0].at
	for _, e := range b.timed {
		t0, t1 = min(t0, e.at), max(t1, e.at)
	}
	w := int64(sampling.TimeBucket(uint64(t1 - t0)))
	type cell struct {
		s  *profile.Sample
		at int64
	}
	if b.maxSamples > 0 {
		seen := map[cell]bool{}
		for _, e := range b.timed {
			seen[cell{e.s, (e.at - t0) / w * w}] = true
		}
		if len(b.p.Sample)+len(seen) > b.maxSamples {
			b.p.Comments = append(b.p.Comments, fmt.Sprintf("warning: sample times dropped: kept per time bucket, the profile would hold %d samples, over the limit of %d; it has no timeline", len(b.p.Sample)+len(seen), b.maxSamples))
			b.timed = nil
			return
		}
	}
	cells := map[cell]*profile.Sample{}
	var added []*profile.Sample
	for _, e := range b.timed {
		at := (e.at - t0) / w * w
		c := cell{e.s, at}
		n := cells[c]
		if n == nil {
			n = &profile.Sample{Location: e.s.Location, Value: make([]int64, len(e.s.Value)), Label: e.s.Label}
			n.NumLabel = map[string][]int64{sampling.TimeLabel: {at}}
			for k, v := range e.s.NumLabel {
				n.NumLabel[k] = v
			}
			n.NumUnit = map[string][]string{sampling.TimeLabel: {"nanoseconds"}}
			cells[c] = n
			added = append(added, n)
		}
		n.Value[e.ei] += e.count
		n.Value[e.ei+1] += e.period
		e.s.Value[e.ei] -= e.count
		e.s.Value[e.ei+1] -= e.period
	}
	kept := b.p.Sample[:0]
	for _, s := range b.p.Sample {
		for _, v := range s.Value {
			if v != 0 {
				kept = append(kept, s)
				break
			}
		}
	}
	b.p.Sample = append(kept, added...)
	b.timed = nil
}

// unreadable counts the bad units: "1 unreadable line", "3 unreadable lines".
func (b *builder) unreadable() string { return sampling.CountOf(b.bad, "unreadable "+b.badWhat) }

// finish returns the profile, or an error when nothing could be read.
func (b *builder) finish(format string) (*profile.Profile, error) {
	if b.n == 0 {
		if b.bad > 0 {
			return nil, fmt.Errorf("no %s sample could be read (%s; %s)", format, b.unreadable(), strings.Join(b.badLines, "; "))
		}
		return nil, fmt.Errorf("the %s input holds no samples", format)
	}
	if b.bad > 0 {
		b.p.Comments = append(b.p.Comments, fmt.Sprintf("warning: skipped %s: %s", b.unreadable(), strings.Join(b.badLines, "; ")))
	}
	if e := b.events[0]; b.periods[e] {
		t := b.p.SampleType[b.types[e]+1]
		b.p.DefaultSampleType = t.Type
		b.p.PeriodType = &profile.ValueType{Type: t.Type, Unit: t.Unit}
	}
	b.splitByTime()
	b.dropMissingPeriods()
	return b.p, nil
}

// dropMissingPeriods removes the period type of each event the input gave
// no period for: its samples are counted, not timed, so only the count
// type is true. A lone such event's count type is "samples"/"count", with
// the event kept as the profile's period type.
func (b *builder) dropMissingPeriods() {
	var keep []int
	for _, e := range b.events {
		i := b.types[e]
		keep = append(keep, i)
		if b.periods[e] {
			keep = append(keep, i+1)
		}
	}
	if len(keep) == len(b.p.SampleType) {
		return
	}
	types := make([]*profile.ValueType, len(keep))
	for j, i := range keep {
		types[j] = b.p.SampleType[i]
	}
	for _, s := range b.p.Sample {
		v := make([]int64, len(keep))
		for j, i := range keep {
			v[j] = s.Value[i]
		}
		s.Value = v
	}
	b.p.SampleType = types
	if e := b.events[0]; len(b.events) == 1 {
		types[0].Type = "samples"
		b.p.DefaultSampleType = "samples"
		if e != "samples" {
			b.p.PeriodType = &profile.ValueType{Type: e, Unit: "count"}
			b.p.Period = 1
			b.p.Comments = append(b.p.Comments, fmt.Sprintf("the input gives no period: values count the %s samples", e))
		}
	}
}
