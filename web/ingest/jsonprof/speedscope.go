package jsonprof

import (
	"bytes"
	"fmt"
	"io"
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
var speedscopeUnits = map[string]speedscopeUnit{
	"nanoseconds":  {"time", "nanoseconds", 1},
	"microseconds": {"time", "nanoseconds", 1e3},
	"milliseconds": {"time", "nanoseconds", 1e6},
	"seconds":      {"time", "nanoseconds", 1e9},
	"bytes":        {"space", "bytes", 1},
	"none":         {"weight", "count", 1},
}

// ParseSpeedscope reads speedscope's file format from data
// (ReadSpeedscope).
func ParseSpeedscope(data []byte, opt Options) (*profile.Profile, error) {
	return ReadSpeedscope(bytes.NewReader(data), opt)
}

// ReadSpeedscope reads speedscope's file format
// (https://www.speedscope.app/file-format-schema.json), every version:
// sampled profiles (a stack and a weight per sample) and evented ones
// (frames opened and closed at a value). Each profile is a thread: its
// name becomes the samples' comm. Evented profiles in a time unit keep
// their times. The input is read as a stream: a profile whose type,
// name and unit come before its samples (as speedscope writes them) keeps
// its samples' stacks until their weights arrive, not the samples.
func ReadSpeedscope(r io.Reader, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	d := newDecoder(r)
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
					return b.keep(int64(64 + len(f.Name) + len(f.File)))
				})
				nframes = len(b.frames)
				return err
			})
		case "profiles":
			return d.array(func() error {
				p := speedscopeProfile{b: b, d: d, maxFrame: -1}
				p.q.b = b
				err := p.read()
				maxFrame = max(maxFrame, p.maxFrame)
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

// speedscopeProfile is one profile of a speedscope file being read.
type speedscopeProfile struct {
	b *builder
	d decoder
	// What the profile's keys said so far, and which of them it had.
	kind, name, unit          string
	start                     float64
	hasKind, hasName, hasUnit bool
	hasStart                  bool
	maxFrame                  int32                 // the largest frame index named
	q                         pairs[int32, float64] // samples' stacks, weights
	events                    []speedscopeEvent     // read before the profile was ready
	eventsKept                int64
	started                   bool // th, typ, u and tl are set
	th                        int32
	typ                       int
	u                         speedscopeUnit
	tl                        *timeline
}

type speedscopeUnit struct {
	typ, unit string
	scale     float64
}

// ready says the keys that say how to read the samples or events have
// been read: they are added as they arrive from then on.
func (p *speedscopeProfile) ready() bool {
	switch {
	case !p.hasKind || !p.hasName || !p.hasUnit:
		return false
	case p.kind == "evented":
		return p.hasStart
	}
	return true
}

// begin makes the profile's thread and sample type (once).
func (p *speedscopeProfile) begin() {
	if p.started {
		return
	}
	p.started = true
	u, ok := speedscopeUnits[p.unit]
	if !ok {
		u = speedscopeUnits["none"]
	}
	p.u = u
	p.th = p.b.thread(Thread{Comm: p.name, Pid: -1, Tid: -1})
	p.typ = p.b.valueType(u.typ, u.unit)
	if p.b.defType < 0 {
		p.b.defType = p.typ
	}
	if p.kind == "evented" {
		p.tl = p.b.timeline(p.th, p.typ, u.typ == "time")
	}
}

// pump adds the samples whose weights have arrived, once ready.
func (p *speedscopeProfile) pump() error {
	if p.kind != "sampled" || !p.ready() {
		return nil
	}
	p.begin()
	return p.q.drain(func(st int32, w float64) error {
		return p.b.add(st, p.th, p.typ, int64(math.Round(w*p.u.scale)), noTime, false)
	})
}

// event adds an event of an evented profile at once.
func (p *speedscopeProfile) event(e speedscopeEvent) error {
	p.begin()
	t := p.tl
	at := int64(math.Round((e.at - p.start) * p.u.scale))
	switch {
	case e.open:
		return t.open(e.frame, at)
	case t.top() == e.frame:
		return t.close(at)
	}
	p.b.skip(fmt.Sprintf("profile %q closes frame %d at %v, which is not the innermost open frame", p.name, e.frame, e.at))
	return nil
}

// read reads the profile into p.b. A profile whose type, name or unit
// come after its samples or events is read once they are all seen.
func (p *speedscopeProfile) read() error {
	d, b := p.d, p.b
	var st []int32
	err := d.object(func(key string) error {
		var err error
		switch key {
		case "type":
			p.kind, err = d.string()
			p.hasKind = true
		case "name":
			p.name, err = d.string()
			p.hasName = true
		case "unit":
			p.unit, err = d.string()
			p.hasUnit = true
		case "startValue":
			p.start, err = d.number()
			p.hasStart = true
		case "samples":
			err = d.array(func() error {
				st = st[:0]
				err := d.array(func() error {
					f, err := d.int()
					if f < 0 || f > math.MaxInt32 {
						return fmt.Errorf("frame index %d", f)
					}
					st = append(st, int32(f))
					p.maxFrame = max(p.maxFrame, int32(f))
					return err
				})
				if err != nil {
					return err
				}
				if err := p.q.addA(b.stack(st)); err != nil {
					return err
				}
				return p.pump()
			})
		case "weights":
			err = d.array(func() error {
				w, err := d.number()
				if err != nil {
					return err
				}
				if err := p.q.addB(w); err != nil {
					return err
				}
				return p.pump()
			})
		case "events":
			err = d.array(func() error {
				// Read key by key, not decoded into a struct: a file
				// is mostly events, and this reads them in 30% less CPU
				// time (a 1 GB file: 10.3 s, not 14.6 s).
				var (
					typ   string
					at    float64
					frame int64
				)
				if d.PeekKind() == 'n' {
					if _, err := d.ReadToken(); err != nil {
						return err
					}
				} else if err := d.object(func(key string) error {
					var err error
					switch key {
					case "type":
						typ, err = d.string()
					case "at":
						at, err = d.number()
					case "frame":
						frame, err = d.int()
					default:
						err = d.SkipValue()
					}
					return err
				}); err != nil {
					return err
				}
				if frame < 0 || frame > math.MaxInt32 {
					return fmt.Errorf("frame index %d", frame)
				}
				p.maxFrame = max(p.maxFrame, int32(frame))
				ev := speedscopeEvent{at, int32(frame), typ == "O"}
				if p.kind == "evented" && p.ready() {
					return p.event(ev)
				}
				p.events = append(p.events, ev)
				if n := int64(cap(p.events)) * 24; n > p.eventsKept {
					more := max(n-p.eventsKept, 64<<10)
					p.eventsKept += more
					return b.keep(more)
				}
				return nil
			})
		default:
			err = d.SkipValue()
		}
		return err
	})
	defer p.q.done()
	defer func() { b.unkeep(p.eventsKept) }()
	if err != nil {
		return err
	}
	// Every key is read: the profile is ready as it is.
	p.hasKind, p.hasName, p.hasUnit, p.hasStart = true, true, true, true
	p.begin()
	switch p.kind {
	case "sampled":
		if p.q.na != p.q.nb {
			return fmt.Errorf("profile %q has %d samples but %d weights", p.name, p.q.na, p.q.nb)
		}
		if err := p.pump(); err != nil {
			return err
		}
	case "evented":
		for _, e := range p.events {
			if err := p.event(e); err != nil {
				return err
			}
		}
		if p.tl.depth() > 0 {
			b.skip(fmt.Sprintf("profile %q leaves %d frames open at its end", p.name, p.tl.depth()))
		}
	default:
		return fmt.Errorf("profile %q has type %q; speedscope's are \"sampled\" and \"evented\"", p.name, p.kind)
	}
	return nil
}

type speedscopeEvent struct {
	at    float64
	frame int32
	open  bool
}
