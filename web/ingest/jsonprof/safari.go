package jsonprof

import (
	"bytes"
	"fmt"
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

// ParseSafari reads a Safari timeline recording's JavaScript samples as
// speedscope reads them: each of recording.sampleStackTraces (frames leaf
// first) weighs its sampleDurations entry (seconds). An unnamed function
// is "(anonymous FILE:LINE)", as DevTools names it. The samples keep
// their timestamps; the recording's displayName is their comm.
func ParseSafari(data []byte, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	d := newDecoder(bytes.NewReader(data))
	typ := b.valueType("time", "nanoseconds")
	b.defType = typ
	var (
		name      string
		stacks    []int32
		times     []float64
		durations []float64
		sawTraces bool
		st        []int32
	)
	err := d.object(func(key string) error {
		if key != "recording" {
			return d.SkipValue()
		}
		return d.object(func(key string) error {
			switch key {
			case "displayName":
				var err error
				name, err = d.string()
				return err
			case "sampleDurations":
				var err error
				durations, err = d.floats(nil)
				return err
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
					stacks = append(stacks, b.stack(st))
					times = append(times, float64(s.Timestamp))
					return b.keep(recordMemory)
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
	if len(durations) != len(stacks) {
		return nil, fmt.Errorf("Safari recording: %d samples but %d sampleDurations", len(stacks), len(durations))
	}
	th := b.thread(Thread{Comm: name, Pid: -1, Tid: -1})
	for i, s := range stacks {
		at := int64(noTime)
		if t := times[i] * 1e9; t > -maxTime && t < maxTime {
			at = int64(math.Round(t))
		}
		if err := b.add(s, th, typ, int64(math.Round(durations[i]*1e9)), at, false); err != nil {
			return nil, err
		}
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
