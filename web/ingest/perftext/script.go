package perftext

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// scriptHeader matches the first line of a `perf script` sample with the
// default fields or -F +pid: "comm [pid/]tid [cpu] time: [period] event: [ip sym (dso)]".
// comm may hold spaces; event may hold colons (sched:sched_switch, cpu-clock:ppp).
var scriptHeader = regexp.MustCompile(`^\s*(.+?)\s+(-?\d+)(?:/(-?\d+))?\s+(?:\[(\d+)\]\s+)?(?:(\d+\.\d+):\s+)?(?:(\d+)\s+)?(\S+):(?:\s+(.*))?$`)

// SniffScript reports whether head looks like `perf script` output: its first
// sample line has the header shape and is followed by a frame line or
// carries its frame itself.
func SniffScript(head []byte) bool {
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) > 1 {
		lines = lines[:len(lines)-1] // the last line may be cut short
	}
	for i, l := range lines {
		s := string(l)
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		m := scriptHeader.FindStringSubmatch(s)
		if m == nil || m[5] == "" && m[6] == "" {
			return false
		}
		if m[8] != "" {
			_, ok := parseFrame(m[8])
			return ok
		}
		for _, next := range lines[i+1:] {
			n := string(next)
			if strings.TrimSpace(n) == "" {
				return true // a sample without frames; still perf script
			}
			_, ok := parseFrame(n)
			return ok && (n[0] == ' ' || n[0] == '\t')
		}
		return true
	}
	return false
}

// parseFrame reads "addr sym+off (dso)" (the sym and dso parts may be absent).
func parseFrame(s string) (Frame, bool) {
	s = strings.TrimSpace(s)
	addrText, rest, _ := strings.Cut(s, " ")
	addr, err := strconv.ParseUint(addrText, 16, 64)
	if err != nil {
		return Frame{}, false
	}
	rest = strings.TrimSpace(rest)
	var f Frame
	f.Addr = addr
	if strings.HasSuffix(rest, ")") {
		if i := strings.LastIndex(rest, " ("); i >= 0 {
			f.DSO = rest[i+2 : len(rest)-1]
			rest = rest[:i]
		} else if rest[0] == '(' {
			f.DSO = rest[1 : len(rest)-1]
			rest = ""
		}
	}
	if i := strings.LastIndex(rest, "+0x"); i > 0 {
		if _, err := strconv.ParseUint(rest[i+3:], 16, 64); err == nil {
			rest = rest[:i]
		}
	}
	if f.DSO == "[unknown]" {
		f.DSO = ""
	}
	f.Func = rest
	if f.Func == "" {
		f.Func = "[unknown]"
	}
	return f, true
}

// ParseScript reads `perf script` text (default fields, -F +pid, with or
// without call chains) into a profile with one count/period pair per event.
func ParseScript(data []byte, maxSamples int) (*profile.Profile, error) {
	b := newBuilder(maxSamples)
	type pending struct {
		ok                     bool
		event, comm            string
		pid, tid, period, time int64
		frames                 []Frame
		inlined                []string // inlined functions awaiting their frame
	}
	var cur pending
	var first, last int64
	flush := func() error {
		if !cur.ok {
			return nil
		}
		cur.ok = false
		for _, name := range cur.inlined { // inlined frames with no frame after them
			cur.frames = append(cur.frames, Frame{Func: name})
		}
		cur.inlined = nil
		if cur.time > 0 {
			if first == 0 || cur.time < first {
				first = cur.time
			}
			last = max(last, cur.time)
		}
		period := cur.period
		if period == 0 {
			period = 1
		}
		return b.add(cur.event, cur.frames, 1, period, cur.comm, cur.pid, cur.tid)
	}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		s := strings.TrimRight(string(line), "\r")
		switch {
		case strings.TrimSpace(s) == "":
			if err := flush(); err != nil {
				return nil, err
			}
		case strings.HasPrefix(s, "#"):
		case (s[0] == ' ' || s[0] == '\t') && cur.ok && !scriptHeaderLike(s):
			f, ok := parseFrame(s)
			if !ok {
				b.badLine(lineNo, s, "not a frame (address symbol (dso))")
				continue
			}
			if f.DSO == "inlined" {
				// perf prints each function inlined at an address before the
				// frame it was inlined into; they become that location's lines.
				cur.inlined = append(cur.inlined, f.Func)
				continue
			}
			if len(cur.inlined) > 0 {
				f.Inlined, cur.inlined = cur.inlined, nil
			}
			cur.frames = append(cur.frames, f)
		default:
			if err := flush(); err != nil {
				return nil, err
			}
			m := scriptHeader.FindStringSubmatch(s)
			if m == nil {
				b.badLine(lineNo, s, "not a sample header (comm tid time: period event:)")
				continue
			}
			cur = pending{ok: true, comm: m[1], pid: -1, event: m[7]}
			cur.tid, _ = strconv.ParseInt(m[2], 10, 64)
			if m[3] != "" {
				cur.pid = cur.tid
				cur.tid, _ = strconv.ParseInt(m[3], 10, 64)
			}
			if m[5] != "" {
				sec, frac, _ := strings.Cut(m[5], ".")
				secs, _ := strconv.ParseInt(sec, 10, 64)
				frac = (frac + "000000000")[:9]
				ns, _ := strconv.ParseInt(frac, 10, 64)
				cur.time = secs*1e9 + ns
			}
			cur.period, _ = strconv.ParseInt(m[6], 10, 64)
			cur.frames, cur.inlined = cur.frames[:0], nil
			if m[8] != "" {
				// Without call chains the sample's frame follows the event;
				// tracepoints print their fields there instead.
				if f, ok := parseFrame(m[8]); ok {
					cur.frames = append(cur.frames, f)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	p, err := b.finish("perf script")
	if err != nil {
		return nil, err
	}
	p.DurationNanos = last - first
	return p, nil
}

// scriptHeaderLike reports whether an indented line is a right-aligned
// sample header (perf pads short comms with spaces) rather than a frame.
func scriptHeaderLike(s string) bool {
	m := scriptHeader.FindStringSubmatch(s)
	return m != nil && m[5] != ""
}
