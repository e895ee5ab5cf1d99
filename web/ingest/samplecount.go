package ingest

import (
	"strings"

	"github.com/google/pprof/profile"
)

// A profile's samples are counted, as perf and pprof count them, by a
// sample type that counts samples: samples/count (Go's CPU profile, the
// legacy pprof formats, folded stacks) or perf's "<event>_count"/count next
// to its "<event>" type (perf.data and perf text). A pprof sample record is
// one distinct stack with summed values, so len(p.Sample) is the number of
// stacks, not of samples (18 stacks for 3,864 perf samples). A profile
// with no such type (time or bytes only: a cpu/nanoseconds-only profile, a
// heap profile) has no sample count; it is shown as its number of stacks,
// labelled "stacks", never as an estimate from the period.

// CountIndex returns the index of the sample type that counts the samples
// behind sample type i: i itself when it counts samples, else its perf
// "<event>_count" twin, else the profile's samples/count type; -1 when
// the profile has none. In a Go CPU profile (samples/count and
// cpu/nanoseconds) both types count with samples/count.
func CountIndex(types []*profile.ValueType, i int) int {
	if i < 0 || i >= len(types) {
		return -1
	}
	if countsSamples(types, i) {
		return i
	}
	for j, t := range types {
		if t.Type == types[i].Type+"_count" && countsSamples(types, j) {
			return j
		}
	}
	for j, t := range types {
		if t.Type == "samples" && countsSamples(types, j) {
			return j
		}
	}
	return -1
}

// countsSamples reports whether sample type i is a number of samples:
// samples/count, or perf's <event>_count/count beside an <event> type.
func countsSamples(types []*profile.ValueType, i int) bool {
	t := types[i]
	if !strings.EqualFold(t.Unit, "count") {
		return false
	}
	if t.Type == "samples" {
		return true
	}
	event, ok := strings.CutSuffix(t.Type, "_count")
	if !ok || event == "" {
		return false
	}
	for _, u := range types {
		if u.Type == event {
			return true
		}
	}
	return false
}

// SampleCounts is how many samples a profile holds per counting sample
// type (one per perf event; one for samples/count), in sample-type order.
// Events is empty when the profile has no counting type; then Stacks, the
// number of sample records, is all there is to show.
type SampleCounts struct {
	Events []EventCount
	Stacks int
}

// EventCount is the number of samples of one event ("" for samples/count).
type EventCount struct {
	Event   string
	Samples int64
}

// CountSamples sums each counting sample type of p (see CountIndex).
func CountSamples(p *profile.Profile) SampleCounts {
	c := SampleCounts{Stacks: len(p.Sample)}
	for i, t := range p.SampleType {
		if !countsSamples(p.SampleType, i) {
			continue
		}
		var n int64
		for _, s := range p.Sample {
			if i < len(s.Value) {
				n += s.Value[i]
			}
		}
		event := strings.TrimSuffix(t.Type, "_count")
		if t.Type == "samples" {
			event = ""
		}
		c.Events = append(c.Events, EventCount{Event: event, Samples: n})
	}
	return c
}
