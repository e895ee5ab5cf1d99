package perftext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// SniffJSON reports whether head starts like `perf data convert --to-json` output.
func SniffJSON(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && bytes.Contains(head, []byte(`"linux-perf-json-version"`))
}

type perfJSON struct {
	Version *int `json:"linux-perf-json-version"`
	Headers struct {
		CapturedOn  string   `json:"captured-on"`
		Hostname    string   `json:"hostname"`
		OSRelease   string   `json:"os-release"`
		Arch        string   `json:"arch"`
		PerfVersion string   `json:"perf-version"`
		Cmdline     []string `json:"cmdline"`
	} `json:"headers"`
	Samples []json.RawMessage `json:"samples"`
}

type jsonSample struct {
	Timestamp *int64 `json:"timestamp"`
	Pid       *int64 `json:"pid"`
	Tid       *int64 `json:"tid"`
	Comm      string `json:"comm"`
	// Newer perf versions add the event and its period.
	Event     string `json:"event"`
	Period    int64  `json:"period"`
	Callchain []struct {
		IP     string `json:"ip"`
		Symbol string `json:"symbol"`
		DSO    string `json:"dso"`
	} `json:"callchain"`
}

// ParseJSON reads `perf data convert --to-json` output. Its samples carry
// absolute addresses, symbol names and DSO base names, but (in perf 6.1) no
// event or period, so each sample counts once under "samples".
func ParseJSON(data []byte, maxSamples int) (*profile.Profile, error) {
	var doc perfJSON
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("perf JSON is not valid JSON: %v", err)
	}
	if doc.Version == nil {
		return nil, fmt.Errorf("perf JSON lacks \"linux-perf-json-version\": is this perf data convert --to-json output?")
	}
	b := newBuilder(maxSamples)
	b.badWhat = "samples"
	var first, last int64
	var frames []Frame
	for i, raw := range doc.Samples {
		var s jsonSample
		if err := json.Unmarshal(raw, &s); err != nil {
			b.badSample(i, err.Error())
			continue
		}
		frames = frames[:0]
		bad := ""
		for _, c := range s.Callchain {
			addr, err := strconv.ParseUint(strings.TrimPrefix(c.IP, "0x"), 16, 64)
			if err != nil {
				bad = fmt.Sprintf("frame ip %q is not a hex address", c.IP)
				break
			}
			fn := c.Symbol
			if fn == "" {
				fn = "[unknown]"
			}
			frames = append(frames, Frame{Func: fn, DSO: c.DSO, Addr: addr})
		}
		if bad != "" {
			b.badSample(i, bad)
			continue
		}
		pid, tid := int64(-1), int64(-1)
		if s.Pid != nil {
			pid = *s.Pid
		}
		if s.Tid != nil {
			tid = *s.Tid
		}
		if s.Timestamp != nil {
			if first == 0 || *s.Timestamp < first {
				first = *s.Timestamp
			}
			last = max(last, *s.Timestamp)
		}
		event, period := s.Event, s.Period
		if event == "" {
			event = "samples"
		}
		if period == 0 {
			period = 1
		}
		if err := b.add(event, frames, 1, period, s.Comm, pid, tid); err != nil {
			return nil, err
		}
	}
	p, err := b.finish("perf JSON")
	if err != nil {
		return nil, err
	}
	if _, ok := b.types["samples"]; ok && len(b.types) == 1 {
		// No periods: keep the one count type.
		p.SampleType = p.SampleType[:1]
		p.SampleType[0].Type = "samples"
		for _, s := range p.Sample {
			s.Value = s.Value[:1]
		}
		p.DefaultSampleType = "samples"
		p.PeriodType = nil
	}
	p.DurationNanos = last - first
	if t, err := time.Parse(time.RFC3339, doc.Headers.CapturedOn); err == nil {
		p.TimeNanos = t.UnixNano()
	}
	h := doc.Headers
	var cm []string
	for _, kv := range [][2]string{{"hostname", h.Hostname}, {"os release", h.OSRelease}, {"arch", h.Arch}, {"perf version", h.PerfVersion}, {"cmdline", strings.Join(h.Cmdline, " ")}} {
		if kv[1] != "" {
			cm = append(cm, kv[0]+": "+kv[1])
		}
	}
	p.Comments = append(cm, p.Comments...)
	return p, nil
}

// badSample records a JSON sample that could not be read.
func (b *builder) badSample(i int, why string) {
	b.bad++
	if len(b.badLines) < 3 {
		b.badLines = append(b.badLines, fmt.Sprintf("sample %d: %s", i, why))
	}
}
