package jsonprof

import (
	"bytes"
	"fmt"
	"math"

	"github.com/google/pprof/profile"
)

// SniffSpeedscope reports whether head starts a speedscope JSON file:
// its "$schema" names speedscope's file format.
func SniffSpeedscope(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && bytes.Contains(head, []byte("speedscope.app/file-format-schema.json"))
}

// speedscopeUnits are speedscope's value units: the sample type each
// becomes and what one unit is in it.
var speedscopeUnits = map[string]struct {
	typ, unit string
	scale     float64
}{
	"nanoseconds":  {"time", "nanoseconds", 1},
	"microseconds": {"time", "nanoseconds", 1e3},
	"milliseconds": {"time", "nanoseconds", 1e6},
	"seconds":      {"time", "nanoseconds", 1e9},
	"bytes":        {"space", "bytes", 1},
	"none":         {"weight", "count", 1},
}

// ParseSpeedscope reads speedscope's file format
// (https://www.speedscope.app/file-format-schema.json), every version:
// sampled profiles (a stack and a weight per sample) and evented ones
// (frames opened and closed at a value). Each profile is a thread: its
// name becomes the samples' comm. Evented profiles in a time unit keep
// their times.
func ParseSpeedscope(data []byte, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	d := newDecoder(bytes.NewReader(data))
	nframes := -1
	maxFrame := int32(-1)
	err := d.object(func(name string) error {
		switch name {
		case "shared":
			return d.object(func(name string) error {
				if name != "frames" {
					return d.SkipValue()
				}
				err := d.array(func() error {
					var f struct {
						Name string     `json:"name"`
						File string     `json:"file"`
						Line flexNumber `json:"line"`
						Col  flexNumber `json:"col"`
					}
					if err := d.value(&f); err != nil {
						return err
					}
					// Frames keep the file's indexes: no merging.
					b.frames = append(b.frames, Frame{Name: f.Name, File: f.File, Line: int64(f.Line), Col: int64(f.Col)})
					return nil
				})
				nframes = len(b.frames)
				return err
			})
		case "profiles":
			return d.array(func() error {
				m, err := readSpeedscopeProfile(d, b)
				maxFrame = max(maxFrame, m)
				return err
			})
		}
		return d.SkipValue()
	})
	if err != nil {
		return nil, fmt.Errorf("speedscope JSON: %w", d.errAt(err))
	}
	if nframes < 0 {
		return nil, fmt.Errorf("speedscope JSON: the file has no shared.frames")
	}
	if int(maxFrame) >= nframes {
		return nil, fmt.Errorf("speedscope JSON: a sample names frame %d, but shared.frames has %d", maxFrame, nframes)
	}
	return b.finish("speedscope JSON")
}

// readSpeedscopeProfile reads one profile of a speedscope file into b and
// returns the largest frame index it names. A profile whose type comes
// after its samples or events is read once they are all seen.
func readSpeedscopeProfile(d decoder, b *builder) (int32, error) {
	var (
		kind, name, unit string
		start            float64
		samples          []int32 // the stack of each sample
		st               []int32
		weights          []float64
		events           []speedscopeEvent
		maxFrame         = int32(-1)
	)
	err := d.object(func(key string) error {
		var err error
		switch key {
		case "type":
			kind, err = d.string()
		case "name":
			name, err = d.string()
		case "unit":
			unit, err = d.string()
		case "startValue":
			start, err = d.number()
		case "samples":
			err = d.array(func() error {
				st = st[:0]
				err := d.array(func() error {
					f, err := d.int()
					if f < 0 || f > math.MaxInt32 {
						return fmt.Errorf("frame index %d", f)
					}
					st = append(st, int32(f))
					maxFrame = max(maxFrame, int32(f))
					return err
				})
				samples = append(samples, b.stack(st))
				return err
			})
		case "weights":
			weights, err = d.floats(nil)
		case "events":
			err = d.array(func() error {
				var e struct {
					Type  string     `json:"type"`
					At    flexNumber `json:"at"`
					Frame int64      `json:"frame"`
				}
				if err := d.value(&e); err != nil {
					return err
				}
				if e.Frame < 0 || e.Frame > math.MaxInt32 {
					return fmt.Errorf("frame index %d", e.Frame)
				}
				events = append(events, speedscopeEvent{float64(e.At), int32(e.Frame), e.Type == "O"})
				maxFrame = max(maxFrame, int32(e.Frame))
				return nil
			})
		default:
			err = d.SkipValue()
		}
		return err
	})
	if err != nil {
		return maxFrame, err
	}
	u, ok := speedscopeUnits[unit]
	if !ok {
		u = speedscopeUnits["none"]
	}
	th := b.thread(Thread{Comm: name, Pid: -1, Tid: -1})
	typ := b.valueType(u.typ, u.unit)
	if b.defType < 0 {
		b.defType = typ
	}
	switch kind {
	case "sampled":
		if len(weights) != len(samples) {
			return maxFrame, fmt.Errorf("profile %q has %d samples but %d weights", name, len(samples), len(weights))
		}
		for i, st := range samples {
			if err := b.add(st, th, typ, int64(math.Round(weights[i]*u.scale)), noTime, false); err != nil {
				return maxFrame, err
			}
		}
	case "evented":
		t := b.timeline(th, typ, u.typ == "time")
		for _, e := range events {
			at := int64(math.Round((e.at - start) * u.scale))
			var err error
			switch {
			case e.open:
				err = t.open(e.frame, at)
			case t.top() == e.frame:
				err = t.close(at)
			default:
				b.skip(fmt.Sprintf("profile %q closes frame %d at %v, which is not the innermost open frame", name, e.frame, e.at))
			}
			if err != nil {
				return maxFrame, err
			}
		}
		if t.depth() > 0 {
			b.skip(fmt.Sprintf("profile %q leaves %d frames open at its end", name, t.depth()))
		}
	default:
		return maxFrame, fmt.Errorf("profile %q has type %q; speedscope's are \"sampled\" and \"evented\"", name, kind)
	}
	return maxFrame, nil
}

type speedscopeEvent struct {
	at    float64
	frame int32
	open  bool
}
