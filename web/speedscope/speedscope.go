// Package speedscope writes a pprof profile in speedscope's file format
// (https://www.speedscope.app/file-format-schema.json), so that a profile
// viewer holds opens in speedscope: one sampled profile per sample type,
// each sample a stack of frames, root first, and its value as weight. A
// frame is a function as the flame graph names it (web/flame's FrameName:
// inlined calls are frames of their own, an unsymbolized address is
// binary+0xOFFSET), with its file and start line. Samples with a time
// (sampling.TimeLabel) come in time order, so that speedscope's time-order
// view follows the recording.
package speedscope

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/flame"
)

// Schema is the "$schema" of speedscope's file format, which speedscope
// (and viewer's reader) recognise a file by.
const Schema = "https://www.speedscope.app/file-format-schema.json"

// units are speedscope's value units, by pprof's unit names; other units
// are "none".
var units = map[string]string{
	"nanoseconds":  "nanoseconds",
	"microseconds": "microseconds",
	"milliseconds": "milliseconds",
	"seconds":      "seconds",
	"bytes":        "bytes",
}

// ErrNoSamples is what Write returns for a profile without a sample of
// positive weight: speedscope has nothing to show.
var ErrNoSamples = errors.New("the profile has no sample with a positive value to export")

type frame struct {
	name, file string
	line       int64
}

// Write writes p to w in speedscope's file format, named name. Nothing is
// written when it returns ErrNoSamples.
func Write(w io.Writer, p *profile.Profile, name string) error {
	// The frames, and each location's, outermost first: a sample's stack
	// is its locations' frames, expanded as it is written (no copy of
	// the stacks: a profile may hold millions).
	var frames []frame
	frameIdx := map[frame]int32{}
	locFrames := map[*profile.Location][]int32{}
	order := samplesInTimeOrder(p)
	for _, s := range order {
		for _, l := range s.Location {
			if _, ok := locFrames[l]; ok {
				continue
			}
			// One frame per line, outermost first; one for the address
			// when the location has no lines.
			var fs []int32
			for j := len(l.Line) - 1; j >= min(0, len(l.Line)-1); j-- {
				f := frame{name: flame.FrameName(l, j)}
				if j >= 0 && l.Line[j].Function != nil {
					f.file, f.line = l.Line[j].Function.Filename, l.Line[j].Function.StartLine
				}
				fi, ok := frameIdx[f]
				if !ok {
					fi = int32(len(frames))
					frames = append(frames, f)
					frameIdx[f] = fi
				}
				fs = append(fs, fi)
			}
			locFrames[l] = fs
		}
	}
	// The sample types with something to show; speedscope opens on the
	// default one, or the last, as pprof and the flame page do.
	var types []int
	active := -1
	for ti, st := range p.SampleType {
		for _, s := range order {
			if ti < len(s.Value) && s.Value[ti] > 0 {
				if st.Type == p.DefaultSampleType && active < 0 {
					active = len(types)
				}
				types = append(types, ti)
				break
			}
		}
	}
	if len(types) == 0 {
		return ErrNoSamples
	}
	if active < 0 {
		active = len(types) - 1
	}

	e := jsontext.NewEncoder(w, jsontext.AllowInvalidUTF8(true))
	var err error
	tok := func(ts ...jsontext.Token) {
		for _, t := range ts {
			if err == nil {
				err = e.WriteToken(t)
			}
		}
	}
	str := jsontext.String
	tok(jsontext.BeginObject,
		str("$schema"), str(Schema),
		str("name"), str(name),
		str("exporter"), str("viewer"),
		str("activeProfileIndex"), jsontext.Int(int64(active)),
		str("shared"), jsontext.BeginObject, str("frames"), jsontext.BeginArray)
	for _, f := range frames {
		tok(jsontext.BeginObject, str("name"), str(f.name))
		if f.file != "" {
			tok(str("file"), str(f.file))
		}
		if f.line > 0 {
			tok(str("line"), jsontext.Int(f.line))
		}
		tok(jsontext.EndObject)
	}
	tok(jsontext.EndArray, jsontext.EndObject, str("profiles"), jsontext.BeginArray)
	for _, ti := range types {
		st := p.SampleType[ti]
		unit, ok := units[st.Unit]
		if !ok {
			unit = "none"
		}
		tok(jsontext.BeginObject,
			str("type"), str("sampled"),
			str("name"), str(fmt.Sprintf("%s: %s (%s)", name, st.Type, st.Unit)),
			str("unit"), str(unit),
			str("startValue"), jsontext.Int(0),
			str("samples"), jsontext.BeginArray)
		var total int64
		for _, s := range order {
			if ti >= len(s.Value) || s.Value[ti] <= 0 {
				continue
			}
			total += s.Value[ti]
			tok(jsontext.BeginArray)
			for i := len(s.Location) - 1; i >= 0; i-- {
				for _, f := range locFrames[s.Location[i]] {
					tok(jsontext.Int(int64(f)))
				}
			}
			tok(jsontext.EndArray)
		}
		tok(jsontext.EndArray, str("weights"), jsontext.BeginArray)
		for _, s := range order {
			if ti < len(s.Value) && s.Value[ti] > 0 {
				tok(jsontext.Int(s.Value[ti]))
			}
		}
		tok(jsontext.EndArray, str("endValue"), jsontext.Int(total), jsontext.EndObject)
		if err != nil {
			return err
		}
	}
	tok(jsontext.EndArray, jsontext.EndObject)
	return err
}

// samplesInTimeOrder returns p's samples, those with a time first, by
// time, the others in the profile's order.
func samplesInTimeOrder(p *profile.Profile) []*profile.Sample {
	order := append([]*profile.Sample(nil), p.Sample...)
	at := func(s *profile.Sample) (int64, bool) {
		if t := s.NumLabel[sampling.TimeLabel]; len(t) == 1 {
			return t[0], true
		}
		return 0, false
	}
	sort.SliceStable(order, func(i, j int) bool {
		ti, oki := at(order[i])
		tj, okj := at(order[j])
		if oki != okj {
			return oki
		}
		return oki && ti < tj
	})
	return order
}
