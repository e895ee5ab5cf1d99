// Package stackprof reads the JSON profiles of Ruby's stackprof
// (`stackprof --json`, StackProf.results) into a pprof profile, as
// speedscope reads them: object mode counts allocations, cpu mode weighs
// each sample the interval, wall mode the time since the sample before;
// "(garbage collection)" samples sit on the stack sampled before them.
// The times of cpu and wall samples are kept (raw_timestamp_deltas).
package stackprof

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// ErrLimit is wrapped by errors about inputs over the caller's limits.
var ErrLimit = errors.New("over the limit")

// Options bound a read; zero fields mean no limit.
type Options struct {
	MaxSamples int // distinct (stack, time bucket) samples
}

// Sniff accepts a JSON object whose head names stackprof's keys.
func Sniff(head []byte) bool {
	h := bytes.TrimLeft(head, " \t\r\n\ufeff")
	return len(h) > 0 && h[0] == '{' && bytes.Contains(h, []byte(`"mode"`)) &&
		bytes.Contains(h, []byte(`"interval"`)) && bytes.Contains(h, []byte(`"version"`)) && bytes.Contains(h, []byte(`"frames"`))
}

type frame struct {
	Name *string `json:"name"`
	File string  `json:"file"`
	Line int64   `json:"line"`
}

type stackprofJSON struct {
	Mode     string           `json:"mode"`
	Interval float64          `json:"interval"`
	Frames   map[string]frame `json:"frames"`
	Raw      []int64          `json:"raw"`
	RawLines []int64          `json:"raw_lines"`
	Deltas   []int64          `json:"raw_timestamp_deltas"`
}

// Parse reads a stackprof JSON profile.
func Parse(data []byte, opt Options) (*profile.Profile, error) {
	var sp stackprofJSON
	if err := json.Unmarshal(data, &sp); err != nil {
		return nil, err
	}
	if sp.Raw == nil {
		return nil, errors.New(`no "raw" samples: record with StackProf.run(raw: true)`)
	}
	p := &profile.Profile{}
	timed := false
	switch sp.Mode {
	case "object":
		p.SampleType = []*profile.ValueType{{Type: "objects", Unit: "count"}}
	case "cpu":
		p.SampleType = []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}
		timed = sp.Deltas != nil
	default:
		if sp.Deltas == nil {
			return nil, fmt.Errorf("mode %q without raw_timestamp_deltas", sp.Mode)
		}
		p.SampleType = []*profile.ValueType{{Type: "wall", Unit: "nanoseconds"}}
		timed = true
	}
	p.DefaultSampleType = p.SampleType[0].Type
	span := int64(0)
	if timed {
		for _, d := range sp.Deltas {
			span += max(d, 0) * 1000
		}
	}
	w := int64(0)
	if timed && span > 0 {
		w = int64(sampling.TimeBucket(uint64(span)))
	}
	type locKey struct {
		id   string
		line int64
	}
	type fnKey struct{ name, file string }
	fns := map[fnKey]*profile.Function{}
	locs := map[locKey]*profile.Location{}
	type sampleKey struct {
		stack string
		at    int64
	}
	samples := map[sampleKey]*profile.Sample{}
	timeUnit := map[string][]string{sampling.TimeLabel: {"nanoseconds"}}
	var prev, stack []*profile.Location
	var key []byte
	sampleIdx := 0
	at := int64(0)
	add := func(st []*profile.Location, k string, v, at int64) error {
		sk := sampleKey{k, -1}
		if w > 0 {
			sk.at = at / w * w
		}
		s := samples[sk]
		if s == nil {
			if opt.MaxSamples > 0 && len(samples) >= opt.MaxSamples {
				return fmt.Errorf("%w: more than %d distinct samples (restart the server with a larger --max-samples to accept it)", ErrLimit, opt.MaxSamples)
			}
			s = &profile.Sample{Value: []int64{0}, Location: append([]*profile.Location(nil), st...)}
			if sk.at >= 0 {
				s.NumLabel = map[string][]int64{sampling.TimeLabel: {sk.at}}
				s.NumUnit = timeUnit
			}
			samples[sk] = s
			p.Sample = append(p.Sample, s)
		}
		s.Value[0] += v
		return nil
	}
	for i := 0; i < len(sp.Raw); {
		n := sp.Raw[i]
		i++
		if n < 0 || n > int64(len(sp.Raw)-i-1) {
			return nil, fmt.Errorf("raw[%d]: a stack of %d frames, %d values are left", i-1, n, len(sp.Raw)-i)
		}
		stack, key = stack[:0], key[:0]
		for j := 0; j < int(n); j++ {
			id := strconv.FormatInt(sp.Raw[i], 10)
			line := int64(0)
			f, ok := sp.Frames[id]
			if sp.RawLines != nil && i < len(sp.RawLines) {
				line = sp.RawLines[i]
			} else if ok {
				line = f.Line
			}
			i++
			lk := locKey{id, line}
			l := locs[lk]
			if l == nil {
				name := "(unknown)"
				if f.Name != nil {
					name = *f.Name
				}
				fk := fnKey{name, f.File}
				fn := fns[fk]
				if fn == nil {
					fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: f.File}
					fns[fk] = fn
					p.Function = append(p.Function, fn)
				}
				l = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn, Line: max(line, 0)}}}
				locs[lk] = l
				p.Location = append(p.Location, l)
			}
			stack = append(stack, l)
		}
		count := sp.Raw[i]
		i++
		if count < 0 {
			return nil, fmt.Errorf("raw[%d]: a count of %d", i-1, count)
		}
		if len(stack) == 1 && stack[0].Line[0].Function.Name == "(garbage collection)" {
			stack = append(append([]*profile.Location(nil), prev...), stack[0])
		}
		// pprof's stacks are leaf first; stackprof's root first.
		leafFirst := make([]*profile.Location, len(stack))
		for j, l := range stack {
			leafFirst[len(stack)-1-j] = l
			key = strconv.AppendUint(key, l.ID, 10)
			key = append(key, ';')
		}
		switch {
		case sp.Mode == "object":
			if err := add(leafFirst, string(key), count, 0); err != nil {
				return nil, err
			}
		case !timed || sampleIdx >= len(sp.Deltas):
			// No times (left): cpu samples weigh the interval each,
			// wall samples nothing.
			if sp.Mode == "cpu" {
				if err := add(leafFirst, string(key), int64(sp.Interval*1000)*count, at); err != nil {
					return nil, err
				}
			}
		default:
			for k := int64(0); k < count && sampleIdx < len(sp.Deltas); k++ {
				d := max(sp.Deltas[sampleIdx], 0) * 1000
				sampleIdx++
				at += d
				v := d
				if sp.Mode == "cpu" {
					v = int64(sp.Interval * 1000)
				}
				if err := add(leafFirst, string(key), v, at); err != nil {
					return nil, err
				}
			}
		}
		prev = append(prev[:0], stack...)
	}
	if len(p.Sample) == 0 {
		return nil, errors.New("the stackprof profile has no samples")
	}
	return p, nil
}
