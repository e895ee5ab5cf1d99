package jsonprof

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// SniffSafari reports whether head starts a Safari timeline recording
// (Web Inspector's Timelines tab, Export): an object of a version and a
// recording, whose recording starts with its displayName or times.
func SniffSafari(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	n := topNames(t)
	return n["version"] && n["recording"] &&
		(bytes.Contains(head, []byte(`"displayName"`)) || bytes.Contains(head, []byte(`"instrumentTypes"`)))
}

// safariFrame is one frame of a Safari sample, leaf first.
type safariFrame struct {
	Name   string     `json:"name"`
	URL    string     `json:"url"`
	Line   flexNumber `json:"line"`
	Column flexNumber `json:"column"`
}

// ParseSafari reads a Safari timeline recording from data (ReadSafari).
func ParseSafari(data []byte, opt Options) (*profile.Profile, error) {
	return ReadSafari(bytes.NewReader(data), opt)
}

// safariSample is a sample's stack and time (s), waiting for its
// duration.
type safariSample struct {
	stack int32
	at    float64
}

// ReadSafari reads a Safari timeline recording's JavaScript samples as
// speedscope reads them: each of recording.sampleStackTraces (frames leaf
// first) weighs its sampleDurations entry (seconds). An unnamed function
// is "(anonymous FILE:LINE)", as DevTools names it. The samples keep
// their timestamps; the recording's displayName is their comm. The input
// is read as a stream: once the displayName is read (Safari writes it
// first), a sample is added as both its stack and its duration have
// arrived, so the read keeps the stacks of the samples whose durations
// come later, not the recording's records.
func ReadSafari(r io.Reader, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	d := newDecoder(r)
	typ := b.valueType("time", "nanoseconds")
	b.defType = typ
	var (
		name      string
		named     bool // displayName was read
		sawTraces bool
		st        []int32
		th        int32
		started   bool
		q         = pairs[safariSample, float64]{b: b}
	)
	pump := func() error {
		if !named {
			return nil
		}
		if !started {
			th, started = b.thread(Thread{Comm: name, Pid: -1, Tid: -1}), true
		}
		return q.drain(func(s safariSample, dur float64) error {
			at := int64(noTime)
			if t := s.at * 1e9; t > -maxTime && t < maxTime {
				at = int64(math.Round(t))
			}
			return b.add(s.stack, th, typ, int64(math.Round(dur*1e9)), at, false)
		})
	}
	defer q.done()
	err := d.object(func(key string) error {
		if key != "recording" {
			return d.SkipValue()
		}
		return d.object(func(key string) error {
			switch key {
			case "displayName":
				var err error
				name, err = d.string()
				named = err == nil
				return err
			case "sampleDurations":
				return d.array(func() error {
					v, err := d.number()
					if err != nil {
						return err
					}
					if err := q.addB(v); err != nil {
						return err
					}
					return pump()
				})
			case "sampleStackTraces":
				sawTraces = true
				return d.array(func() error {
					var s struct {
						Timestamp   flexNumber    `json:"timestamp"`
						StackFrames []safariFrame `json:"stackFrames"`
					}
					if err := d.value(&s); err != nil {
						return err
					}
					st = st[:0]
					for i := len(s.StackFrames) - 1; i >= 0; i-- {
						st = append(st, b.frame(s.StackFrames[i].frame()))
					}
					if err := q.addA(safariSample{b.stack(st), float64(s.Timestamp)}); err != nil {
						return err
					}
					return pump()
				})
			}
			return d.SkipValue()
		})
	})
	if err != nil {
		return nil, fmt.Errorf("Safari recording: %w", d.errAt(err))
	}
	if !sawTraces {
		return nil, fmt.Errorf("Safari recording: it has no JavaScript samples (recording.sampleStackTraces); record with the JavaScript & Events timeline on")
	}
	if q.na != q.nb {
		return nil, fmt.Errorf("Safari recording: %d samples but %d sampleDurations", q.na, q.nb)
	}
	named = true
	if err := pump(); err != nil {
		return nil, err
	}
	return b.finish("Safari recording")
}

// frame names a Safari frame as speedscope and DevTools do.
func (f safariFrame) frame() Frame {
	name := f.Name
	if name == "" {
		name = "(anonymous)"
		if f.URL != "" {
			name = "(anonymous " + f.URL[strings.LastIndexByte(f.URL, '/')+1:] + ":" + strconv.FormatInt(int64(f.Line), 10) + ")"
		}
	}
	return Frame{Name: name, File: f.URL, Line: int64(f.Line), Col: int64(f.Column)}
}
