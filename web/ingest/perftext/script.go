package perftext

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// A `perf script` sample header holds, in this order, whichever of these
// fields -F kept: comm, [pid/]tid, [cpu], time:, period, event:, and, for a
// sample without a call chain, its frame (or a tracepoint's fields). comm may
// hold spaces, event colons (sched:sched_switch, cpu-clock:ppp). The forms
// are tried in order, the ones that end the line first, as
// stackcollapse-perf.pl reads a header that ends with "event:" before any
// other; a comm is only taken when the fields cannot start the line.
const (
	hdrStart = `^\s*(?:(?P<comm>\S.*?)\s+)??(?:(?P<tid>-?\d+)(?:/(?P<tid2>-?\d+))?\s+)?(?:\[(?P<cpu>\d+)\]\s+)?`
	hdrTime  = `(?:(?P<time>\d+\.\d+):\s+)`
	hdrEvent = `(?:(?P<period>\d+)\s+)?(?P<event>\S+):`
	hdrRest  = `(?:\s+(?P<rest>.*?))?\s*$`
)

var scriptHeaders = []*regexp.Regexp{
	regexp.MustCompile(hdrStart + hdrTime + `?` + hdrEvent + `\s*$`), // ... event:
	regexp.MustCompile(`^\s*(?:(?P<comm>\S.*?)\s+)??(?:(?P<tid>-?\d+)(?:/(?P<tid2>-?\d+))?\s+)?(?:\[(?P<cpu>\d+)\]\s+)?(?P<time>\d+\.\d+):(?:\s+(?P<period>\d+))?\s*$`), // ... time: [period]
	regexp.MustCompile(hdrStart + hdrTime + `?` + hdrEvent + hdrRest),                                                                                                   // ... event: frame
	regexp.MustCompile(hdrStart + hdrTime + `(?:(?P<period>\d+)\s+)?` + `(?P<rest>.*?)\s*$`),                                                                            // ... time: [period] frame
	regexp.MustCompile(`^\s*(?:(?P<comm>\S.*?)\s+)??(?P<tid>-?\d+)(?:/(?P<tid2>-?\d+))?(?:\s+\[(?P<cpu>\d+)\])?(?:\s+(?P<period>\d+))?\s*$`),                            // comm tid [period]
	regexp.MustCompile(`^\s*(?:(?P<comm>\S.*?)\s+)??(?P<tid>-?\d+)(?:/(?P<tid2>-?\d+))?\s+(?:\[(?P<cpu>\d+)\]\s+)?(?:(?P<period>\d+)\s+)?(?P<rest>[0-9a-f]+\s.*?)\s*$`), // comm tid [period] frame
}

// fieldColon reports whether s has a colon that ends a field (a time or an
// event): followed by a blank or the end of the line.
func fieldColon(s string) bool {
	for i := strings.IndexByte(s, ':'); i >= 0; {
		if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t' {
			return true
		}
		j := strings.IndexByte(s[i+1:], ':')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// nextLine returns the first of lines that is not blank.
func nextLine(lines [][]byte) (string, bool) {
	for _, l := range lines {
		if s := strings.TrimRight(string(l), "\r"); strings.TrimSpace(s) != "" {
			return s, true
		}
	}
	return "", false
}

// commThenFrame splits "comm  addr sym (dso)", a sample without call chain
// under -F comm,ip,sym: the address is the first hex token of 6 digits or
// more after the comm.
func commThenFrame(s string) (string, Frame, bool) {
	if len(s) > maxHeader {
		return "", Frame{}, false
	}
	f := strings.Fields(s)
	for i := 1; i < len(f)-1; i++ {
		if len(f[i]) < 6 {
			continue
		}
		if _, err := strconv.ParseUint(f[i], 16, 64); err != nil {
			continue
		}
		j := strings.Index(s, " "+f[i]+" ")
		if j < 0 {
			continue
		}
		if fr, ok := parseFrame(s[j+1:]); ok {
			return strings.Join(f[:i], " "), fr, true
		}
	}
	return "", Frame{}, false
}

// numberThenAddress reports whether s is "tid-or-period address sym...", a
// sample without call chain under -F tid,ip,sym or ip,sym,period rather
// than a frame: a decimal number, then a hex address of 6 digits or more.
func numberThenAddress(s string) bool {
	num, rest := nextField(s)
	if !isDigits(num) {
		return false // most frames: a hex address with letters
	}
	addr, rest := nextField(rest)
	sym, _ := nextField(rest)
	if len(addr) < 6 || sym == "" {
		return false
	}
	_, err := strconv.ParseUint(addr, 16, 64)
	return err == nil
}

// nextField returns the first blank-separated field of s and what follows it.
func nextField(s string) (field, rest string) {
	s = strings.TrimLeft(s, " \t")
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// periodColumn returns the period of a header that starts with it, as
// -F ip,sym,period prints it: a number right-aligned in 10 columns (a tid is
// printed in 5), alone or before the sample's frame. It returns 0 otherwise.
func periodColumn(s string) int64 {
	if len(s) < 10 || s[0] != ' ' || (len(s) > 10 && s[10] != ' ' && s[10] != '\t') {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimLeft(s[:10], " "), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	if rest := strings.TrimSpace(s[10:]); rest != "" {
		if _, ok := parseFrame(rest); !ok {
			return 0
		}
	}
	return n
}

// maxBad is how many unreadable lines are read before giving up, once they
// outnumber the samples ten to one: reading a line that is neither header
// nor frame costs a few header regexps, and a file of them is not perf
// script.
const maxBad = 1000

var errNotScript = errors.New("not perf script")

// maxHeader bounds the lines tried as sample headers: perf's are a few
// hundred bytes (a tracepoint's fields a few thousand), and the header
// regexps cost about a second per megabyte of a line that is none.
const maxHeader = 16 << 10

// timeLike matches what a header's time field holds, which is not an event.
var timeLike = regexp.MustCompile(`^\d+\.\d+$`)

// scriptHeader is one sample header; -1 and "" for fields it lacks.
type scriptHeader struct {
	comm, event, rest string
	pid, tid, period  int64
	time              int64 // nanoseconds, 0 when absent
	timed             bool
}

// parseHeader reads a sample header line, reporting false when the line
// is none.
func parseHeader(s string) (scriptHeader, bool) {
	if len(s) > maxHeader || !strings.ContainsAny(s, "0123456789:") {
		return scriptHeader{}, false
	}
	res := scriptHeaders
	if !fieldColon(s) {
		res = res[4:] // the forms with a time or an event need "x: " or a final "x:"
	}
	for _, re := range res {
		m := re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		h := scriptHeader{pid: -1, tid: -1}
		for i, name := range re.SubexpNames() {
			v := m[i]
			if v == "" {
				continue
			}
			switch name {
			case "comm":
				h.comm = v
			case "tid":
				h.tid, _ = strconv.ParseInt(v, 10, 64)
			case "tid2":
				h.pid = h.tid
				h.tid, _ = strconv.ParseInt(v, 10, 64)
			case "time":
				sec, frac, _ := strings.Cut(v, ".")
				secs, _ := strconv.ParseInt(sec, 10, 64)
				ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
				h.time, h.timed = secs*1e9+ns, true
			case "period":
				h.period, _ = strconv.ParseInt(v, 10, 64)
			case "event":
				h.event = v
			case "rest":
				h.rest = v
			}
		}
		if timeLike.MatchString(h.event) {
			continue // "comm tid time:" with no event
		}
		if h.rest != "" {
			if _, ok := parseFrame(h.rest); !ok && h.event == "" {
				continue // "comm 12 time: text" with neither event nor frame
			}
		}
		if h.comm != "" && isDigits(h.comm) && h.tid >= 0 && h.pid < 0 && !h.timed && h.period <= 0 {
			// "14766 2000000 cpu-clock:" is tid and period (-F tid,period,event),
			// not a numeric comm: perf prints comm first only when asked.
			h.comm, h.tid, h.period = "", mustInt(h.comm), h.tid
		}
		if h.comm == "" && h.pid < 0 && h.tid >= 0 && h.period <= 0 && !h.timed && h.event == "" && periodColumn(s) > 0 {
			h.tid, h.period = -1, h.tid
		}
		return h, true
	}
	return scriptHeader{}, false
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func mustInt(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// SniffScript reports whether head looks like `perf script` output: its first
// sample line has the header shape and is followed by a frame line or
// carries its frame itself, or (-F ip,sym) it starts with frame lines.
func SniffScript(head []byte) bool {
	head = DecodeText(head)
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) > 1 {
		lines = lines[:len(lines)-1] // the last line may be cut short
	}
	for i, l := range lines {
		s := strings.TrimRight(string(l), "\r")
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		h, ok := parseHeader(s)
		if !ok {
			if next, more := nextLine(lines[i+1:]); more {
				// -F comm,ip,sym: "comm" over tab-indented frames, or
				// "comm  addr sym" lines with the same comm.
				if _, isFrame := parseFrame(s); !isFrame && !fieldColon(s) && s[0] != ' ' && s[0] != '\t' && next[0] == '\t' {
					_, ok := parseFrame(next)
					return ok
				}
				c1, _, ok1 := commThenFrame(s)
				c2, _, ok2 := commThenFrame(next)
				if ok1 && ok2 && c1 == c2 {
					return true
				}
			}
		}
		if !ok || h.event == "" && !h.timed && h.tid < 0 && h.period <= 0 {
			// Headerless output (-F ip,sym): frame lines with an address.
			f, ok := parseFrame(s)
			return ok && f.Func != "[unknown]" && (s[0] == ' ' || s[0] == '\t')
		}
		if h.rest != "" {
			_, ok := parseFrame(h.rest)
			return ok
		}
		for _, next := range lines[i+1:] {
			n := strings.TrimRight(string(next), "\r")
			if strings.TrimSpace(n) == "" {
				return h.event != "" || h.timed // a sample without frames; still perf script
			}
			_, ok := parseFrame(n)
			// A header with neither event nor time ("comm tid") is only
			// taken with an indented frame under it.
			return ok && (h.event != "" || h.timed || n[0] == ' ' || n[0] == '\t')
		}
		return h.event != "" || h.timed
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

// ParseScript reads `perf script` text with any -F field set that keeps ip
// and sym, with or without call chains, into a profile with one count/period
// pair per event (one count type for an event with no period column). It
// reads what stackcollapse-perf.pl reads: "#" header and comment lines,
// headers with or without pid, tid, cpu, time, period and event, frames with
// or without "+offset" and "(dso)", indented or not; and also headerless
// output (-F ip,sym), where a tab-indented run of frames is one call chain
// and each untabbed frame line is one sample. Source lines (-F +srcline) are
// skipped.
func ParseScript(data []byte, maxSamples int) (*profile.Profile, error) {
	b := newBuilder(maxSamples)
	type pending struct {
		ok             bool
		event, comm    string
		pid, tid, time int64
		period         int64
		frames         []Frame
		inlined        []string // inlined functions awaiting their frame
		bare           bool     // a headerless sample
		commOnly       int      // the line number of a header that may be a comm alone (-F comm,ip,sym)
		commLine       string
	}
	var cur pending
	var first, last int64
	flush := func() error {
		if !cur.ok {
			return nil
		}
		cur.ok = false
		if cur.commOnly > 0 && len(cur.frames) == 0 && len(cur.inlined) == 0 {
			// A line taken for a comm alone had no frames under it.
			b.badLine(cur.commOnly, cur.commLine, "neither a sample header (comm tid time: period event:) nor a frame (address symbol (dso))")
			return nil
		}
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
		event := cur.event
		if event == "" {
			event = "samples"
		}
		b.at = cur.time
		return b.add(event, cur.frames, 1, cur.period, cur.comm, cur.pid, cur.tid)
	}
	start := func(h scriptHeader) {
		cur = pending{ok: true, comm: h.comm, pid: h.pid, tid: h.tid, event: h.event, period: h.period, time: h.time, frames: cur.frames[:0]}
		if h.rest != "" {
			// Without call chains the sample's frame follows the event;
			// tracepoints print their fields there instead.
			if f, ok := parseFrame(h.rest); ok {
				cur.frames = append(cur.frames, f)
			}
		}
	}
	addFrame := func(f Frame) {
		if f.DSO == "inlined" {
			// perf prints each function inlined at an address before the
			// frame it was inlined into; they become that location's lines.
			cur.inlined = append(cur.inlined, f.Func)
			return
		}
		if len(cur.inlined) > 0 {
			f.Inlined, cur.inlined = cur.inlined, nil
		}
		cur.frames = append(cur.frames, f)
	}
	stoppedAt := 0
	err := eachLine(DecodeText(data), func(n int, s string) error {
		if b.bad >= maxBad && b.bad > 10*b.n {
			stoppedAt = n
			return errNotScript
		}
		if strings.TrimSpace(s) == "" {
			return flush()
		}
		if strings.HasPrefix(s, "#") {
			return nil
		}
		indented := s[0] == ' ' || s[0] == '\t'
		if cur.ok && !cur.bare && indented {
			if f, ok := parseFrame(s); ok && !scriptHeaderLike(s) {
				addFrame(f)
				return nil
			}
			if isSrcline(s) {
				return nil
			}
		}
		if h, ok := parseHeader(s); ok && (h.event != "" || h.timed || h.tid >= 0 || h.period > 0) {
			if err := flush(); err != nil {
				return err
			}
			start(h)
			return nil
		}
		if f, ok := parseFrame(s); ok {
			switch {
			case cur.ok && !cur.bare, cur.ok && cur.bare && s[0] == '\t':
				addFrame(f) // unindented call chains (old perf) or -F ip,sym chains
			default:
				if err := flush(); err != nil {
					return err
				}
				start(scriptHeader{pid: -1, tid: -1})
				cur.bare = true
				addFrame(f)
				if s[0] != '\t' {
					// perf indents call chains with a tab; a frame line
					// without one is a sample without call chain (-F ip,sym
					// of a perf record without -g).
					return flush()
				}
			}
			return nil
		}
		if comm, f, ok := commThenFrame(s); ok {
			// -F comm,ip,sym without call chains: "comm  addr sym".
			if err := flush(); err != nil {
				return err
			}
			start(scriptHeader{comm: comm, pid: -1, tid: -1})
			addFrame(f)
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if !indented && !fieldColon(s) {
			// Perhaps a comm alone (-F comm,ip,sym): a sample if frames follow.
			start(scriptHeader{comm: strings.TrimSpace(s), pid: -1, tid: -1})
			cur.commOnly, cur.commLine = n, s
			return nil
		}
		b.badLine(n, s, "neither a sample header (comm tid time: period event:) nor a frame (address symbol (dso))")
		return nil
	})
	if err == errNotScript {
		err = nil
		if b.n > 0 {
			b.p.Comments = append(b.p.Comments, fmt.Sprintf("warning: stopped reading at line %d: over %d unreadable lines, ten times the samples before them; the rest of the file was not read", stoppedAt, maxBad))
		}
	}
	if err != nil {
		return nil, err
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

// isSrcline reports whether an indented line is the source line perf script
// -F +srcline prints under a frame ("  file.c:12", "  libc.so.6[27b25]",
// "  :0" where it knows no file).
func isSrcline(s string) bool {
	t := strings.TrimSpace(s)
	if strings.ContainsAny(t, " \t") {
		return false
	}
	if i := strings.LastIndexByte(t, ':'); i >= 0 && isDigits(t[i+1:]) { // ":0": a line of no known file
		return true
	}
	return strings.HasSuffix(t, "]") && strings.Contains(t, "[")
}

// scriptHeaderLike reports whether an indented line is a right-aligned
// sample header (perf pads short comms with spaces) rather than a frame: it
// has a time, or it starts with a tid and holds an event (-F tid,event,...).
func scriptHeaderLike(s string) bool {
	if periodColumn(s) > 0 || numberThenAddress(s) {
		return true
	}
	if !fieldColon(s) {
		return false // most frames: no regexp to run
	}
	h, ok := parseHeader(s)
	return ok && (h.timed || h.event != "" && h.comm == "" && h.tid >= 0)
}
