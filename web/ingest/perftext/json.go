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
// event or period: those come from the recording's command line in the
// headers (recordEvent), else each sample counts once under "samples".
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
	cmdEvent, cmdPeriod, cmdEvents := recordEvent(doc.Headers.Cmdline)
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
		if event == "" && cmdEvent != "" {
			event = cmdEvent
			if period == 0 {
				period = cmdPeriod
			}
		}
		if event == "" {
			event = "samples"
		}
		if err := b.add(event, frames, 1, period, s.Comm, pid, tid); err != nil {
			return nil, err
		}
	}
	p, err := b.finish("perf JSON")
	if err != nil {
		return nil, err
	}
	if _, merged := b.types["samples"]; merged && len(cmdEvents) > 1 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: the recording had %d events (%s), and perf JSON does not say which a sample is: their samples are counted together as \"samples\"; upload the perf.data itself to see each event apart", len(cmdEvents), strings.Join(cmdEvents, ", ")))
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

// recordArgs are the perf record options that take a separate value: the
// command line's positional arguments (the profiled command) start after them.
var recordArgs = map[string]bool{
	"-e": true, "--event": true, "-F": true, "--freq": true, "-c": true, "--count": true,
	"-o": true, "--output": true, "-p": true, "--pid": true, "-t": true, "--tid": true,
	"-C": true, "--cpu": true, "-m": true, "--mmap-pages": true, "-G": true, "--cgroup": true,
	"-u": true, "--uid": true, "-r": true, "--realtime": true, "-j": true, "--branch-filter": true,
	"-D": true, "--delay": true, "-k": true, "--clockid": true, "--call-graph": true,
}

// recordEvent reads the event and its period from the perf record command
// line that perf JSON's headers keep, since perf 6.1 writes neither per
// sample. It gives the event of a single -e; the period is -c's, or for
// the clock events (whose sampling timer counts nanoseconds) 1e9 / the -F
// frequency (perf's default 4000 Hz without one), as perf.data records it.
// It returns "", 0 when the command line does not say, and every event it
// names.
func recordEvent(cmdline []string) (event string, period int64, events []string) {
	var freq, count int64 = -1, 0
	args := cmdline
	for len(args) > 0 && args[0] != "record" {
		args = args[1:]
	}
	if len(args) == 0 {
		return "", 0, nil
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		if !hasVal && len(a) > 2 && a[1] != '-' && recordArgs[a[:2]] {
			name, val, hasVal = a[:2], a[2:], true // -ecpu-clock, -F500
		}
		if !hasVal && recordArgs[name] && i+1 < len(args) {
			i++
			val = args[i]
		}
		switch name {
		case "-e", "--event":
			events = append(events, strings.Split(val, ",")...)
		case "-F", "--freq":
			freq, _ = strconv.ParseInt(val, 10, 64)
		case "-c", "--count":
			count, _ = strconv.ParseInt(val, 10, 64)
		}
	}
	if len(events) != 1 || strings.ContainsAny(events[0], "{}") {
		return "", 0, events // several events: which one a sample is cannot be told
	}
	event = events[0]
	switch {
	case count > 0:
		return event, count, events
	case periodUnit(event) == "nanoseconds":
		if freq < 0 {
			freq = 4000
		}
		if freq > 0 {
			return event, 1e9 / freq, events
		}
	}
	return event, 0, events
}
