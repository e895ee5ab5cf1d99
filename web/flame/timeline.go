package flame

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// TimelineThreads is how many threads a timeline shows as rows of their
// own; the others are summed in one "other threads" row.
const TimelineThreads = 12

// Timeline is the samples of one sample type over time, per thread: the
// flame page's time axis, from the samples' sampling.TimeLabel. A profile
// without times has no rows. Work and size are proportional to the
// samples and the buckets (at most sampling.MaxTimeBuckets per row).
type Timeline struct {
	BucketNanos int64         `json:"bucket_ns"`   // width of one bucket
	SpanNanos   int64         `json:"span_ns"`     // buckets × width
	StartNanos  int64         `json:"start_ns"`    // wall clock of the first sample (profile.TimeNanos), 0 if unknown
	SampleType  string        `json:"sample_type"` // of the values
	Unit        string        `json:"unit"`
	Total       []int64       `json:"total"` // per bucket, every thread
	Rows        []TimelineRow `json:"rows"`  // busiest first
}

// TimelineRow is one thread's (or the rest's) value per bucket.
type TimelineRow struct {
	Name   string  `json:"name"` // "comm pid/tid", as perf script heads a sample
	Value  int64   `json:"value"`
	Counts []int64 `json:"counts"`
}

// BuildTimeline sums p's values of sample index si per thread and time
// bucket. The bucket width is the one the samples were bucketed with (the
// greatest common divisor of their times), never finer than
// sampling.TimeBucket of the span, whatever the input holds.
func BuildTimeline(p *profile.Profile, si int) *Timeline {
	t := &Timeline{StartNanos: p.TimeNanos, Total: []int64{}, Rows: []TimelineRow{}}
	if si < len(p.SampleType) {
		t.SampleType, t.Unit = p.SampleType[si].Type, p.SampleType[si].Unit
	}
	w, n := timeGrid(p)
	if n == 0 {
		return t
	}
	t.BucketNanos, t.SpanNanos = w, int64(n)*w
	t.Total = make([]int64, n)
	type thread struct {
		name   string
		value  int64
		counts []int64
	}
	byKey := map[string]*thread{}
	var key []byte
	for _, s := range p.Sample {
		ts := s.NumLabel[sampling.TimeLabel]
		if len(ts) != 1 || ts[0] < 0 || si >= len(s.Value) || s.Value[si] == 0 {
			continue
		}
		v := s.Value[si]
		key = threadKey(s, key[:0])
		th := byKey[string(key)]
		if th == nil {
			th = &thread{name: threadName(key), counts: make([]int64, n)}
			byKey[string(key)] = th
		}
		b := int(ts[0] / w)
		th.counts[b] += v
		th.value += v
		t.Total[b] += v
	}
	ths := make([]*thread, 0, len(byKey))
	for _, th := range byKey {
		ths = append(ths, th)
	}
	sort.Slice(ths, func(i, j int) bool {
		if ths[i].value != ths[j].value {
			return ths[i].value > ths[j].value
		}
		return ths[i].name < ths[j].name
	})
	for i, th := range ths {
		if i < TimelineThreads || len(ths) == TimelineThreads+1 {
			t.Rows = append(t.Rows, TimelineRow{Name: th.name, Value: th.value, Counts: th.counts})
			continue
		}
		if i == TimelineThreads {
			t.Rows = append(t.Rows, TimelineRow{Name: strconv.Itoa(len(ths)-TimelineThreads) + " other threads", Counts: make([]int64, n)})
		}
		o := &t.Rows[TimelineThreads]
		o.Value += th.value
		for b, v := range th.counts {
			o.Counts[b] += v
		}
	}
	return t
}

// timeGrid is the time buckets of p's samples: their width (the greatest
// common divisor of the samples' times, never finer than
// sampling.TimeBucket of the span) and how many cover the span; 0 buckets
// when no sample has a time.
func timeGrid(p *profile.Profile) (width int64, n int) {
	var maxT, g int64
	timed := 0
	for _, s := range p.Sample {
		ts := s.NumLabel[sampling.TimeLabel]
		if len(ts) != 1 || ts[0] < 0 {
			continue
		}
		timed++
		maxT = max(maxT, ts[0])
		g = gcd(g, ts[0])
	}
	if timed == 0 {
		return 0, 0
	}
	w := max(g, int64(sampling.TimeBucket(uint64(maxT))))
	return w, int(maxT/w) + 1
}

// threadKey appends to key what keeps s's thread apart from the others:
// "comm pid/tid", as perf script heads a sample, with the parts s has.
func threadKey(s *profile.Sample, key []byte) []byte {
	if c := s.Label["comm"]; len(c) > 0 {
		key = append(key, c[0]...)
		key = append(key, ' ')
	}
	if pid := s.NumLabel["pid"]; len(pid) > 0 {
		key = strconv.AppendInt(key, pid[0], 10)
		key = append(key, '/')
	}
	if tid := s.NumLabel["tid"]; len(tid) > 0 {
		key = strconv.AppendInt(key, tid[0], 10)
	}
	return key
}

// threadName is the name a thread's row shows for its threadKey: "all
// samples" when the samples name no thread.
func threadName(key []byte) string {
	if len(key) == 0 {
		return "all samples"
	}
	return string(key)
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// JSON encodes t.
func (t *Timeline) JSON() []byte {
	b, _ := json.Marshal(t)
	return b
}
