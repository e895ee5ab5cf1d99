package jfr

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// The kinds of event read, and the sample types they add to: a thread
// running Java code (cpu, and samples), in native code (samples),
// allocating (bytes) or waiting for a lock or park (nanoseconds).
const (
	kindCPU = iota
	kindNative
	kindAlloc
	kindLock
)

// record is one sample as read.
type record struct {
	kind   int
	value  int64
	stack  string // frame names, leaf first, joined by "\x00"
	thread string
	tid    int64
	at     int64
}

// builder collects the samples of every chunk.
type builder struct {
	opt     Options
	records []record
	bad     int
	badWhat []string
	warns   []string
}

func newBuilder(opt Options) *builder { return &builder{opt: opt} }

func (b *builder) warn(s string) { b.warns = append(b.warns, "warning: "+s) }

func (b *builder) skip(what string) {
	b.bad++
	if len(b.badWhat) < 3 {
		b.badWhat = append(b.badWhat, what)
	}
}

func (b *builder) add(kind int, value int64, stack []string, thread string, tid, at int64) error {
	b.records = append(b.records, record{kind, value, strings.Join(stack, "\x00"), thread, tid, at})
	return nil
}

// finish makes one sample per stack, thread and time bucket, with two
// sample types: cpu counts jdk.ExecutionSample events (threads running
// Java code), samples those and jdk.NativeMethodSample events (threads in
// native code) too, as speedscope's "with native calls" does.
func (b *builder) finish() (*profile.Profile, error) {
	if len(b.records) == 0 {
		if b.bad > 0 {
			return nil, fmt.Errorf("no JFR sample could be read (%d unreadable: %s)", b.bad, strings.Join(b.badWhat, "; "))
		}
		return nil, fmt.Errorf("the recording holds no execution, native, allocation or lock events with a stack")
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "cpu", Unit: "count"}, {Type: "samples", Unit: "count"},
			{Type: "alloc_space", Unit: "bytes"}, {Type: "lock", Unit: "nanoseconds"},
		},
		DefaultSampleType: "cpu",
		PeriodType:        &profile.ValueType{Type: "cpu", Unit: "count"},
	}
	p.Comments = append(p.Comments, b.warns...)
	if b.bad > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: skipped %s: %s", sampling.CountOf(b.bad, "unreadable events"), strings.Join(b.badWhat, "; ")))
	}
	t0, t1 := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range b.records {
		if r.at != math.MinInt64 {
			t0, t1 = min(t0, r.at), max(t1, r.at)
		}
	}
	w := int64(0)
	if t0 <= t1 {
		w = int64(sampling.TimeBucket(uint64(t1 - t0)))
	}
	type key struct {
		stack, thread string
		tid, at       int64
	}
	fns := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	samples := map[key]*profile.Sample{}
	timeUnit := map[string][]string{sampling.TimeLabel: {"nanoseconds"}}
	for _, r := range b.records {
		k := key{r.stack, r.thread, r.tid, math.MinInt64}
		if w > 0 && r.at != math.MinInt64 {
			k.at = (r.at - t0) / w * w
		}
		s := samples[k]
		if s == nil {
			if b.opt.MaxSamples > 0 && len(samples) >= b.opt.MaxSamples {
				return nil, fmt.Errorf("%w: more than %d distinct samples (restart the server with a larger --max-samples to accept it)", ErrLimit, b.opt.MaxSamples)
			}
			s = &profile.Sample{Value: make([]int64, len(p.SampleType))}
			for _, name := range strings.Split(r.stack, "\x00") {
				l := locs[name]
				if l == nil {
					fn := &profile.Function{ID: uint64(len(fns) + 1), Name: name, SystemName: name}
					fns[name] = fn
					p.Function = append(p.Function, fn)
					l = &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: fn}}}
					locs[name] = l
					p.Location = append(p.Location, l)
				}
				s.Location = append(s.Location, l)
			}
			if r.thread != "" {
				s.Label = map[string][]string{"comm": {r.thread}}
			}
			s.NumLabel = map[string][]int64{}
			if r.tid >= 0 {
				s.NumLabel["tid"] = []int64{r.tid}
			}
			if k.at != math.MinInt64 {
				s.NumLabel[sampling.TimeLabel] = []int64{k.at}
				s.NumUnit = timeUnit
			}
			samples[k] = s
			p.Sample = append(p.Sample, s)
		}
		switch r.kind {
		case kindCPU:
			s.Value[0]++
			s.Value[1]++
		case kindNative:
			s.Value[1]++
		case kindAlloc:
			s.Value[2] += r.value
		case kindLock:
			s.Value[3] += r.value
		}
	}
	return p, nil
}
