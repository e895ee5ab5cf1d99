// Package papyrus reads the script and stack profiles of Papyrus, the
// scripting language of Skyrim and Fallout 4 (Debug.StartScriptProfiling,
// Debug.StartStackProfiling: "Script_NAME log opened (PC)" then
// "TIME:EVENT:STACK:DEPTH:FORM:Script..Function" lines, TIME in ms), into
// a pprof profile, as speedscope reads them: PUSH enters a function and
// POP leaves it, under a "STACK N" frame for the Papyrus stack (thread)
// the function ran on. A stack's frame stays open while functions run
// only on it and closes when one runs on another stack; a POP of a
// function that is not the innermost open one is ignored (unless nothing
// has happened yet: then it ran since the start), and a function that
// ends at the time it starts is left at once. The samples keep their
// times.
package papyrus

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// ErrLimit is wrapped by errors about inputs over the caller's limits.
var ErrLimit = errors.New("over the limit")

// Options bound a read; zero fields mean no limit.
type Options struct {
	MaxLineBytes int
	// MaxSamples bounds the distinct (stack, time bucket) samples.
	MaxSamples int
	// MaxStackDepth bounds how many functions are open at once.
	MaxStackDepth int
}

// header is a Papyrus log's first line.
var header = regexp.MustCompile(`^(Stack_|Script_|Obj_)\S+ log opened \(PC\)\r?$`)

// Sniff accepts a Papyrus profile: its first line opens a Script_, Stack_
// or Obj_ log.
func Sniff(head []byte) bool {
	line, _, _ := strings.Cut(string(head), "\n")
	return header.MatchString(line)
}

// event is one line of the log: at (ms from the first line), what
// happened, on which stack, to which function.
type event struct {
	at    int64
	kind  string
	stack int64
	name  string
}

// Parse reads a Papyrus profile from r.
func Parse(r io.Reader, opt Options) (*profile.Profile, error) {
	maxLine := opt.MaxLineBytes
	if maxLine <= 0 {
		maxLine = 64 << 20
	}
	maxDepth := opt.MaxStackDepth
	if maxDepth <= 0 {
		maxDepth = 1 << 16
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(maxLine, 64<<10)), maxLine)
	var events []event
	n, skipped, firstBad := 0, 0, ""
	start := int64(0)
	for sc.Scan() {
		n++
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || line == "Log closed" || strings.Contains(line, "log opened") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 3 {
			continue // START and STOP lines name no function
		}
		at, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
		st, err2 := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		if err != nil || err2 != nil || at < 0 || at > 1<<40 {
			skipped++
			if firstBad == "" {
				firstBad = fmt.Sprintf("line %d: %.80q", n, line)
			}
			continue
		}
		if len(events) == 0 {
			start = at
		}
		e := event{at: at - start, kind: f[1], stack: st}
		if len(f) > 5 {
			e.name = f[5]
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrLimit, n+1, maxLine)
		}
		return nil, err
	}
	if len(events) == 0 {
		if skipped > 0 {
			return nil, fmt.Errorf("no line of the Papyrus log is TIME:EVENT:STACK:... (%s)", firstBad)
		}
		return nil, errors.New("the Papyrus log has no events")
	}
	t := newTimeline()
	if err := replay(events, t, maxDepth); err != nil {
		return nil, err
	}
	p, err := t.profile(opt.MaxSamples)
	if err != nil {
		return nil, err
	}
	if skipped > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: skipped %d lines that are not TIME:EVENT:STACK:... (first: %s)", skipped, firstBad))
	}
	return p, nil
}

// replay plays the events onto t as speedscope's importer does.
func replay(events []event, t *timeline, maxDepth int) error {
	end := events[len(events)-1].at
	var open []string // the open frames, outermost first
	lastEventAt := int64(0)
	var enter func(stack, at int64, name string) error
	var leave func(at int64)
	push := func(at int64, name string) error {
		if len(open) >= maxDepth {
			return fmt.Errorf("%w: more than %d functions open at once", ErrLimit, maxDepth)
		}
		open = append(open, name)
		t.enter(at, name)
		lastEventAt = at
		return nil
	}
	enter = func(stack, at int64, name string) error {
		frame := "STACK " + strconv.FormatInt(stack, 10)
		upper := ""
		for i := len(open) - 1; i >= 0; i-- {
			if strings.HasPrefix(open[i], "STACK ") {
				upper = open[i]
				break
			}
		}
		if upper != frame {
			// Alone at the bottom, a stack's frame closes when a function
			// runs on another stack.
			if len(open) == 1 {
				leave(lastEventAt)
			}
			if err := push(at, frame); err != nil {
				return err
			}
		}
		return push(at, name)
	}
	leave = func(at int64) {
		if len(open) == 0 {
			return
		}
		open = open[:len(open)-1]
		t.leave(at)
		if len(open) > 1 && strings.HasPrefix(open[len(open)-1], "STACK ") {
			leave(at)
		}
		lastEventAt = at
	}
	tryLeave := func(e event) error {
		switch {
		case len(open) > 0 && open[len(open)-1] == e.name:
			leave(e.at)
		case lastEventAt == 0:
			// Nothing has happened yet: it ran since the start.
			if err := enter(e.stack, 0, e.name); err != nil {
				return err
			}
			leave(e.at)
		}
		return nil
	}
	done := make([]bool, len(events))
	for i, e := range events {
		if done[i] {
			continue
		}
		switch e.kind {
		case "PUSH":
			if err := enter(e.stack, e.at, e.name); err != nil {
				return err
			}
			// A POP of it at the same time, later in the log, leaves it now.
			for j := i + 1; j < len(events) && events[j].at == e.at; j++ {
				n := events[j]
				if !done[j] && n.kind == "POP" && n.name == e.name && n.stack == e.stack {
					if err := tryLeave(n); err != nil {
						return err
					}
					done[j] = true
					break
				}
			}
		case "POP":
			if err := tryLeave(e); err != nil {
				return err
			}
		}
	}
	for len(open) > 0 {
		leave(end)
	}
	return nil
}

// timeline weighs the stack open between two events with the time
// between them (ms), kept per stack and time bucket.
type timeline struct {
	names   []string
	nameIdx map[string]int32
	nodes   []node
	nodeIdx map[node]int32
	cur     int32 // the open stack, -1 if none
	last    int64
	spans   []span
}

type node struct{ parent, name int32 }

type span struct {
	stack  int32
	at, ms int64
}

func newTimeline() *timeline {
	return &timeline{nameIdx: map[string]int32{}, nodeIdx: map[node]int32{}, cur: -1}
}

// advance gives the open stack the time up to at.
func (t *timeline) advance(at int64) {
	if at <= t.last {
		return
	}
	if t.cur >= 0 {
		t.spans = append(t.spans, span{t.cur, t.last, at - t.last})
	}
	t.last = at
}

func (t *timeline) enter(at int64, name string) {
	t.advance(at)
	ni, ok := t.nameIdx[name]
	if !ok {
		ni = int32(len(t.names))
		t.names = append(t.names, name)
		t.nameIdx[name] = ni
	}
	n := node{t.cur, ni}
	id, ok := t.nodeIdx[n]
	if !ok {
		id = int32(len(t.nodes))
		t.nodes = append(t.nodes, n)
		t.nodeIdx[n] = id
	}
	t.cur = id
}

func (t *timeline) leave(at int64) {
	t.advance(at)
	if t.cur >= 0 {
		t.cur = t.nodes[t.cur].parent
	}
}

// profile makes the pprof profile of t's spans: one sample per stack and
// time bucket, a span's time spread over the buckets it covers.
func (t *timeline) profile(maxSamples int) (*profile.Profile, error) {
	if len(t.spans) == 0 {
		return nil, errors.New("the Papyrus log has no function that ran for a millisecond or more")
	}
	const ms = 1_000_000
	span := t.last * ms
	w := int64(sampling.TimeBucket(uint64(span)))
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "time", Unit: "nanoseconds"}},
		DefaultSampleType: "time",
		PeriodType:        &profile.ValueType{Type: "time", Unit: "nanoseconds"},
		Period:            ms,
	}
	fns := make([]*profile.Location, len(t.names))
	for i, name := range t.names {
		fn := &profile.Function{ID: uint64(i + 1), Name: name, SystemName: name}
		p.Function = append(p.Function, fn)
		fns[i] = &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
		p.Location = append(p.Location, fns[i])
	}
	type key struct {
		stack int32
		at    int64
	}
	samples := map[key]*profile.Sample{}
	timeUnit := map[string][]string{sampling.TimeLabel: {"nanoseconds"}}
	add := func(k key, v int64) error {
		s := samples[k]
		if s == nil {
			if maxSamples > 0 && len(samples) >= maxSamples {
				return fmt.Errorf("%w: more than %d distinct samples (restart the server with a larger --max-samples to accept it)", ErrLimit, maxSamples)
			}
			s = &profile.Sample{Value: []int64{0},
				NumLabel: map[string][]int64{sampling.TimeLabel: {k.at}}, NumUnit: timeUnit}
			for n := k.stack; n >= 0; n = t.nodes[n].parent {
				s.Location = append(s.Location, fns[t.nodes[n].name])
			}
			samples[k] = s
			p.Sample = append(p.Sample, s)
		}
		s.Value[0] += v
		return nil
	}
	for _, sp := range t.spans {
		at, v := sp.at*ms, sp.ms*ms
		for v > 0 {
			bucket := at / w * w
			part := min(v, bucket+w-at)
			if err := add(key{sp.stack, bucket}, part); err != nil {
				return nil, err
			}
			v -= part
			at += part
		}
	}
	return p, nil
}
