package jsonprof

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/pprof/profile"
)

// SniffTraceEvents reports whether head starts a trace-event JSON file
// (chrome://tracing, DevTools' performance panel, Perfetto's JSON,
// Hermes): {"traceEvents": [...]} or the bare array, whose first element
// has a "ph".
func SniffTraceEvents(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) == 0 {
		return false
	}
	if t[0] == '{' {
		return topNames(t)["traceEvents"]
	}
	if t[0] != '[' {
		return false
	}
	first := bytes.TrimLeft(t[1:], " \t\r\n")
	return len(first) > 0 && first[0] == '{' && topNames(first)["ph"]
}

// topNames returns the names of the JSON object head starts with, as far
// as head goes.
func topNames(head []byte) map[string]bool {
	names := map[string]bool{}
	d := newDecoder(bytes.NewReader(head))
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return names
	}
	for {
		t, err := d.ReadToken()
		if err != nil || t.Kind() != '"' {
			return names
		}
		names[t.String()] = true
		if d.SkipValue() != nil {
			return names
		}
	}
}

// traceEvent is one event of a trace, as far as profiles use it.
type traceEvent struct {
	Pid  flexNumber     `json:"pid"`
	Tid  flexNumber     `json:"tid"`
	Ts   flexNumber     `json:"ts"`
	Ph   string         `json:"ph"`
	Name *string        `json:"name"`
	Dur  *flexNumber    `json:"dur"`
	Tdur *flexNumber    `json:"tdur"`
	ID   jsontext.Value `json:"id"`
	Args jsontext.Value `json:"args"`
}

func (e *traceEvent) name() string {
	if e.Name == nil {
		return ""
	}
	return *e.Name
}

type pidTid struct{ pid, tid int64 }

// traceMeta is what a trace's metadata events say of its processes and
// threads.
type traceMeta struct {
	processes map[int64]string
	threads   map[pidTid]string
}

func (m *traceMeta) event(e *traceEvent) {
	if e.Ph != "M" || len(e.Args) == 0 {
		return
	}
	var a struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(e.Args, &a) != nil || a.Name == "" {
		return
	}
	switch e.name() {
	case "process_name":
		m.processes[int64(e.Pid)] = a.Name
	case "thread_name":
		m.threads[pidTid{int64(e.Pid), int64(e.Tid)}] = a.Name
	}
}

// thread is the Thread of pid and tid: comm is the thread's name, or its
// process's.
func (m *traceMeta) thread(pid, tid int64) Thread {
	comm := m.threads[pidTid{pid, tid}]
	if comm == "" {
		comm = m.processes[pid]
	}
	return Thread{Comm: comm, Pid: pid, Tid: tid}
}

// chromeProfileEvent is a ProfileChunk event read before the Profile
// event of its profile, kept until that arrives.
type chromeProfileEvent struct {
	ts   float64
	args jsontext.Value
}

// traceSample is a sample of the "samples" array that some traces carry
// beside their events (Hermes, Android systrace JSON).
type traceSample struct {
	Pid flexNumber `json:"pid"`
	Tid flexNumber `json:"tid"`
	Ts  flexNumber `json:"ts"`
	Sf  flexNumber `json:"sf"`
}

type traceStackFrame struct {
	Name     string      `json:"name"`
	Category string      `json:"category"`
	Parent   *flexNumber `json:"parent"`
}

// traceRead is what reading a trace finds and keeps.
type traceRead struct {
	b           *builder
	meta        traceMeta
	samples     []traceSample
	stackFrames map[string]traceStackFrame
	hermes      bool // the first event has Hermes' args
	truncated   bool

	// The V8 CPU profiles of CpuProfile, Profile and ProfileChunk events,
	// read as they arrive, by profile id (or pid:tid), in order of their
	// first event, with their threads; the chunks of a profile whose
	// Profile event is still to come.
	profiles map[string]*chromeProfile
	order    []string
	waiting  map[string][]chromeProfileEvent
	cpu      int // the sample type of their samples

	// spans are the B, E and X events of each thread, kept until the end
	// (their order of time decides their stacks), until a trace shows it
	// holds V8 CPU profiles, which are read instead.
	spans *spanSet
}

// chromeProfile is one V8 CPU profile of a trace and its thread.
type chromeProfile struct {
	*v8Profile
	pt pidTid
	th int32
}

// ParseTraceEvents reads a trace-event JSON file, as speedscope does:
// when it holds V8 CPU profiles (Profile and ProfileChunk events, or
// CpuProfile events of older Chrome), each is a thread's samples, read
// as ParseCPUProfile reads a .cpuprofile; else when it has a "samples"
// array with "stackFrames", those samples; else its B/E and X events are
// spans, each thread's stack the spans open, weighing the time to the
// next event. Process and thread names come from the metadata (M)
// events; times are kept. A trace cut short inside its event array (as
// Chrome leaves one it had no time to close) is read as far as it goes.
func ParseTraceEvents(data []byte, opt Options) (*profile.Profile, error) {
	return ReadTraceEvents(bytes.NewReader(data), opt)
}

// ReadTraceEvents is ParseTraceEvents of the input r gives, read once,
// as a stream: a V8 CPU profile's chunks are read as they arrive, in the
// order the trace has them (Chrome writes a thread's chunks in order of
// time), keeping the profile's nodes, not its samples; spans and the
// "samples" array are kept until the end, as their order of time decides
// their stacks, and dropped once the trace shows a V8 CPU profile.
func ReadTraceEvents(r io.Reader, opt Options) (*profile.Profile, error) {
	b, err := readTrace(r, opt)
	if err != nil {
		return nil, err
	}
	return b.finish("trace events")
}

// readTrace reads the trace r gives into a builder, for ReadTraceEvents.
func readTrace(r io.Reader, opt Options) (*builder, error) {
	b := newBuilder(opt)
	t := &traceRead{
		b:        b,
		meta:     traceMeta{processes: map[int64]string{}, threads: map[pidTid]string{}},
		profiles: map[string]*chromeProfile{},
		waiting:  map[string][]chromeProfileEvent{},
		cpu:      -1,
		spans:    newSpanSet(),
	}
	first := true
	err := t.eachEvent(r, func(e *traceEvent) error {
		if first {
			t.hermes = isHermesArgs(e.Args)
			first = false
		}
		t.meta.event(e)
		switch n := e.name(); n {
		case "CpuProfile", "Profile", "ProfileChunk":
			return t.profileEvent(e, n)
		}
		if t.spans != nil && len(t.profiles) == 0 && len(t.waiting) == 0 {
			return t.spans.add(t, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("trace events: %w", err)
	}
	if t.truncated {
		b.comments = append(b.comments, "the trace ends inside its event array, as a trace cut short does: read as far as it goes")
	}
	switch {
	case len(t.profiles) > 0 || len(t.waiting) > 0:
		err = t.endProfiles()
	case t.stackFrames != nil && len(t.samples) > 0:
		err = t.readSamples(b)
	default:
		err = t.spans.read(t, b)
	}
	if err != nil {
		return nil, fmt.Errorf("trace events: %w", err)
	}
	return b, nil
}

// eachEvent calls fn with each event of the trace r gives, and reads
// the "samples" and "stackFrames" beside them into t.
func (t *traceRead) eachEvent(r io.Reader, fn func(*traceEvent) error) error {
	d := newDecoder(r)
	events := func() error {
		err := d.array(func() error {
			var e traceEvent
			if err := d.value(&e); err != nil {
				return err
			}
			return fn(&e)
		})
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			t.truncated = true
			return nil
		}
		return err
	}
	var err error
	if d.PeekKind() == '[' {
		err = events()
	} else {
		err = d.object(func(name string) error {
			switch name {
			case "traceEvents":
				return events()
			case "samples":
				if t.samples != nil {
					return d.SkipValue()
				}
				t.samples = []traceSample{}
				return d.array(func() error {
					var s traceSample
					err := d.value(&s)
					t.samples = append(t.samples, s)
					if err == nil && len(t.samples)%4096 == 0 {
						err = t.b.keep(4096 * 2 * 32)
					}
					return err
				})
			case "stackFrames":
				t.stackFrames = map[string]traceStackFrame{}
				return d.object(func(id string) error {
					var f traceStackFrame
					err := d.value(&f)
					t.stackFrames[id] = f
					if err == nil {
						err = t.b.keep(int64(96 + len(id) + len(f.Name) + len(f.Category)))
					}
					return err
				})
			}
			return d.SkipValue()
		})
	}
	if err != nil {
		return d.errAt(err)
	}
	return nil
}

// chromeChunk is the data of a Profile, ProfileChunk or CpuProfile event.
type chromeChunk struct {
	Data *struct {
		CPUProfile *struct {
			Nodes      []v8Node `json:"nodes"`
			Samples    []int64  `json:"samples"`
			TimeDeltas []int64  `json:"timeDeltas"`
			StartTime  *float64 `json:"startTime"`
		} `json:"cpuProfile"`
		TimeDeltas []int64  `json:"timeDeltas"`
		StartTime  *float64 `json:"startTime"`
	} `json:"data"`
}

// profileEvent reads a CpuProfile, Profile or ProfileChunk event (kind)
// into its profile: a Profile or CpuProfile event starts one (ending the
// one of the same id before it), a ProfileChunk adds its nodes and
// samples to it.
func (t *traceRead) profileEvent(e *traceEvent, kind string) error {
	t.spans = nil // the trace's samples are its V8 CPU profiles
	pt := pidTid{int64(e.Pid), int64(e.Tid)}
	id := "pt:" + strconv.FormatInt(pt.pid, 10) + ":" + strconv.FormatInt(pt.tid, 10)
	if len(e.ID) > 0 && string(e.ID) != "null" {
		id = "id:" + string(e.ID)
	}
	ts := float64(e.Ts)
	if kind == "ProfileChunk" {
		p := t.profiles[id]
		if p == nil {
			// Its Profile event may come later in the file, with an
			// earlier time.
			t.waiting[id] = append(t.waiting[id], chromeProfileEvent{ts: ts, args: bytes.Clone(e.Args)})
			return t.b.keep(int64(len(e.Args)) + 64)
		}
		return t.chunk(p, ts, e.Args)
	}
	var c chromeChunk
	if len(e.Args) > 0 {
		if err := json.Unmarshal(e.Args, &c); err != nil {
			t.b.skip(fmt.Sprintf("%s event at ts %v: %v", kind, ts, err))
			return nil
		}
	}
	if kind == "CpuProfile" && (c.Data == nil || c.Data.CPUProfile == nil) {
		return nil
	}
	if t.cpu < 0 {
		t.cpu = t.b.valueType("cpu", "nanoseconds")
		t.b.defType = t.cpu
	}
	if old := t.profiles[id]; old != nil {
		if err := t.endProfile(old); err != nil {
			return err
		}
	} else {
		t.order = append(t.order, id)
	}
	th := t.b.thread(Thread{Pid: pt.pid, Tid: pt.tid})
	p := &chromeProfile{v8Profile: newV8Profile(t.b, th, t.cpu), pt: pt, th: th}
	t.profiles[id] = p
	if kind == "CpuProfile" {
		cp := c.Data.CPUProfile
		if cp.StartTime != nil {
			p.startTime = *cp.StartTime
		}
		if err := p.addNodes(cp.Nodes); err != nil {
			return err
		}
		if err := p.pump(); err != nil {
			return err
		}
		if err := p.samples(cp.Samples...); err != nil {
			return err
		}
		for _, d := range cp.TimeDeltas {
			if err := p.delta(d); err != nil {
				return err
			}
		}
		return nil
	}
	if c.Data != nil && c.Data.StartTime != nil {
		p.startTime = *c.Data.StartTime
	}
	if err := p.pump(); err != nil {
		return err
	}
	// The chunks read before it that come after it in time, in order.
	waiting := t.waiting[id]
	delete(t.waiting, id)
	sort.SliceStable(waiting, func(i, j int) bool { return waiting[i].ts < waiting[j].ts })
	for _, w := range waiting {
		if w.ts < ts {
			t.b.skip(fmt.Sprintf("a ProfileChunk at ts %v of a profile (%s) with no Profile event before it", w.ts, id))
			continue
		}
		if err := t.chunk(p, w.ts, w.args); err != nil {
			return err
		}
	}
	return nil
}

// chunk adds a ProfileChunk's nodes, samples and deltas to p.
func (t *traceRead) chunk(p *chromeProfile, ts float64, args jsontext.Value) error {
	var c chromeChunk
	if len(args) > 0 {
		if err := json.Unmarshal(args, &c); err != nil {
			t.b.skip(fmt.Sprintf("ProfileChunk event at ts %v: %v", ts, err))
			return nil
		}
	}
	if c.Data == nil {
		return nil
	}
	if cp := c.Data.CPUProfile; cp != nil {
		if err := p.addNodes(cp.Nodes); err != nil {
			return err
		}
		if err := p.samples(cp.Samples...); err != nil {
			return err
		}
	}
	for _, d := range c.Data.TimeDeltas {
		if err := p.delta(d); err != nil {
			return err
		}
	}
	if c.Data.StartTime != nil {
		p.startTime = *c.Data.StartTime
	}
	return nil
}

// endProfile puts p's end on its timeline.
func (t *traceRead) endProfile(p *chromeProfile) error {
	unpaired, err := p.end()
	if unpaired > 0 {
		t.b.skip(fmt.Sprintf("the profile of thread %d of process %d: %d samples without a timeDelta", p.pt.tid, p.pt.pid, unpaired))
	}
	return err
}

// endProfiles ends every profile, names their threads from the metadata
// events, and counts the chunks whose Profile event never came.
func (t *traceRead) endProfiles() error {
	for _, id := range t.order {
		p := t.profiles[id]
		if err := t.endProfile(p); err != nil {
			return err
		}
		t.b.threads[p.th].Comm = t.meta.thread(p.pt.pid, p.pt.tid).Comm
	}
	for id, w := range t.waiting {
		for _, c := range w {
			t.b.skip(fmt.Sprintf("a ProfileChunk at ts %v of a profile (%s) with no Profile event before it", c.ts, id))
		}
	}
	return nil
}

// readSamples adds the "samples" array of a trace: each thread's sample
// weighs the time to its next sample; its stack is its stack frame and
// the frames' parents.
func (r *traceRead) readSamples(b *builder) error {
	typ := b.valueType("time", "nanoseconds")
	b.defType = typ
	byThread := map[pidTid][]int{}
	var order []pidTid
	for i, s := range r.samples {
		pt := pidTid{int64(s.Pid), int64(s.Tid)}
		if byThread[pt] == nil {
			order = append(order, pt)
		}
		byThread[pt] = append(byThread[pt], i)
	}
	// Each stack frame's stack is made once, from the first sample whose
	// stack goes through it: samples cost their number, not their depth.
	stackOf := map[string]int32{}
	lacks := map[string]string{} // a frame of a stack with a lacking frame: that frame
	var path []string
	stack := func(id string) (int32, string) {
		path = path[:0]
		node, lacking := int32(-1), ""
		for id != "0" {
			if n, ok := stackOf[id]; ok {
				node = n
				break
			}
			if l, ok := lacks[id]; ok {
				lacking = l
				break
			}
			f, found := r.stackFrames[id]
			if !found || len(path) > 1<<16 {
				lacking = id
				break
			}
			path = append(path, id)
			if f.Parent == nil {
				break
			}
			id = formatID(float64(*f.Parent))
		}
		if lacking != "" {
			for _, id := range path {
				lacks[id] = lacking
			}
			return -1, lacking
		}
		for i := len(path) - 1; i >= 0; i-- {
			node = b.push(node, b.frame(Frame{Name: r.stackFrames[path[i]].Name}))
			stackOf[path[i]] = node
		}
		return node, ""
	}
	for _, pt := range order {
		th := b.thread(r.meta.thread(pt.pid, pt.tid))
		idx := byThread[pt]
		for k, i := range idx {
			s := r.samples[i]
			var weight float64
			if k+1 < len(idx) {
				weight = float64(r.samples[idx[k+1]].Ts) - float64(s.Ts)
			}
			st, lacking := stack(formatID(float64(s.Sf)))
			if err := b.tick(len(path)); err != nil {
				return err
			}
			if lacking != "" {
				b.skip(fmt.Sprintf("a sample's stack names frame %s, which stackFrames lacks", lacking))
				continue
			}
			if err := b.add(st, th, typ, int64(math.Round(weight*1000)), int64(math.Round(float64(s.Ts)*1000)), true); err != nil {
				return err
			}
		}
	}
	return nil
}

func formatID(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// span is a B or E event (an X event is one of each) of one thread: its
// time (µs), the frame it opens or closes as speedscope keys it, and its
// event name (-1: none, which for an E event is any: it closes the
// innermost open frame), both interned in spanNames.
type span struct {
	ts        float64
	key, name int32
}

// spanNames interns the keys and names of spans, and each key's frame.
type spanNames struct {
	ids    map[string]int32
	frames []Frame // of each key; Name "" for an event name
}

func (n *spanNames) id(s string, f Frame) int32 {
	if i, ok := n.ids[s]; ok {
		return i
	}
	i := int32(len(n.frames))
	n.ids[s] = i
	n.frames = append(n.frames, f)
	return i
}

// hermesArgs are the args Hermes' trace events carry for a frame.
type hermesArgs struct {
	URL    *string  `json:"url"`
	Line   *float64 `json:"line"`
	Column *float64 `json:"column"`
}

// isHermesArgs reports whether args hold every field of Hermes' frames.
func isHermesArgs(args jsontext.Value) bool {
	if len(args) == 0 {
		return false
	}
	var m map[string]jsontext.Value
	if json.Unmarshal(args, &m) != nil {
		return false
	}
	for _, k := range []string{"line", "column", "name", "category", "url", "params", "allocatedCategory", "allocatedName"} {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// spanOf makes the span of e. A frame is named by the event's name and
// its args (as JSON), as speedscope names it; Hermes' frames by the name,
// with the file and line the args give.
func (r *traceRead) spanOf(e *traceEvent, ts float64, names *spanNames) span {
	name := e.name()
	if e.Name == nil || name == "" {
		name = "(unnamed)"
	}
	s := span{ts: ts, name: -1}
	if e.Name != nil {
		s.name = names.id("\x00"+*e.Name, Frame{})
	}
	if r.hermes {
		var a hermesArgs
		_ = json.Unmarshal(e.Args, &a)
		f := Frame{Name: name, Line: -1, Col: -1}
		if a.URL != nil {
			f.File = *a.URL
		}
		if a.Line != nil {
			f.Line = int64(*a.Line)
		}
		if a.Column != nil {
			f.Col = int64(*a.Column)
		}
		s.key = names.id(fmt.Sprintf("%s:%s:%d:%d", f.Name, f.File, f.Line, f.Col), f)
		return s
	}
	key := name
	if len(e.Args) > 0 && string(e.Args) != "null" {
		args := jsontext.Value(bytes.Clone(e.Args))
		if args.Compact() == nil {
			key += " " + string(args)
		}
	}
	s.key = names.id(key, Frame{Name: key, Line: -1, Col: -1})
	return s
}

// spanSet is the B, E and X events of a trace, by thread, in the order
// the trace has them, with their names interned.
type spanSet struct {
	threads map[pidTid]*spanThread
	order   []pidTid
	names   *spanNames
	n       int
}

type spanThread struct {
	begins, ends []span
	xs           []spanX
}

// spanX is an X event: a span and its duration.
type spanX struct {
	s   span
	dur float64
}

// spanMemory is what a span kept takes (one slice's worth more while it
// grows).
const spanMemory = 2 * 32

func newSpanSet() *spanSet {
	return &spanSet{threads: map[pidTid]*spanThread{}, names: &spanNames{ids: map[string]int32{}}}
}

// add keeps e when it is a B, E or X event.
func (ss *spanSet) add(r *traceRead, e *traceEvent) error {
	if e.Ph != "B" && e.Ph != "E" && e.Ph != "X" {
		return nil
	}
	pt := pidTid{int64(e.Pid), int64(e.Tid)}
	t := ss.threads[pt]
	if t == nil {
		t = &spanThread{}
		ss.threads[pt] = t
		ss.order = append(ss.order, pt)
	}
	names := len(ss.names.frames)
	s := r.spanOf(e, float64(e.Ts), ss.names)
	switch e.Ph {
	case "B":
		t.begins = append(t.begins, s)
	case "E":
		t.ends = append(t.ends, s)
	case "X":
		dur := 0.0
		if e.Dur != nil {
			dur = float64(*e.Dur)
		} else if e.Tdur != nil {
			dur = float64(*e.Tdur)
		}
		t.xs = append(t.xs, spanX{s, dur})
	}
	ss.n++
	n := int64(spanMemory)
	if len(ss.names.frames) > names {
		n += 128 + int64(len(ss.names.frames[len(ss.names.frames)-1].Name))
	}
	return r.b.keep(n)
}

// read adds each thread's stacks to b, as speedscope's eventListToProfile
// does: B events and X starts in order of time; an E event at the same
// time as others ends the innermost open frame first; an E event whose
// name is not the innermost open frame's is ignored. An E event without
// a name ends the innermost open frame, as the Trace Event Format has it
// ("name" is optional on E events; speedscope ignores such an E, so its
// spans would never end).
func (ss *spanSet) read(r *traceRead, b *builder) error {
	if ss == nil || ss.n == 0 {
		return nil
	}
	typ := b.valueType("time", "nanoseconds")
	b.defType = typ
	order := ss.order
	sort.Slice(order, func(i, j int) bool {
		if order[i].pid != order[j].pid {
			return order[i].pid < order[j].pid
		}
		return order[i].tid < order[j].tid
	})
	for _, pt := range order {
		t := ss.threads[pt]
		sort.SliceStable(t.xs, func(i, j int) bool {
			a, c := t.xs[i], t.xs[j]
			if a.s.ts != c.s.ts {
				return a.s.ts < c.s.ts
			}
			return a.dur > c.dur
		})
		for _, x := range t.xs {
			t.begins = append(t.begins, x.s)
			e := x.s
			e.ts += x.dur
			t.ends = append(t.ends, e)
		}
		t.xs = nil
		sort.SliceStable(t.begins, func(i, j int) bool { return t.begins[i].ts < t.begins[j].ts })
		sort.SliceStable(t.ends, func(i, j int) bool { return t.ends[i].ts < t.ends[j].ts })
		if err := r.replaySpans(b, b.thread(r.meta.thread(pt.pid, pt.tid)), typ, t.begins, t.ends, ss.names); err != nil {
			return err
		}
		t.begins, t.ends = nil, nil
	}
	return nil
}

// replaySpans opens and closes the frames of one thread's begins and
// ends (each in order of time) on a timeline.
func (r *traceRead) replaySpans(b *builder, th int32, typ int, begins, ends []span, names *spanNames) error {
	tl := b.timeline(th, typ, true)
	var open []span
	frames := map[int32]int32{}
	ns := func(ts float64) int64 { return int64(math.Round(ts * 1000)) }
	for len(begins) > 0 || len(ends) > 0 {
		takeBegin := len(ends) == 0 ||
			len(begins) > 0 && (begins[0].ts < ends[0].ts || begins[0].ts == ends[0].ts && begins[0].key == ends[0].key)
		if takeBegin {
			s := begins[0]
			begins = begins[1:]
			f, ok := frames[s.key]
			if !ok {
				f = b.frame(names.frames[s.key])
				frames[s.key] = f
			}
			open = append(open, s)
			if err := tl.open(f, ns(s.ts)); err != nil {
				return err
			}
			continue
		}
		if len(open) > 0 {
			top := open[len(open)-1]
			swapped := false
			for i := 1; i < min(len(ends), maxEndSearch) && ends[i].ts <= ends[0].ts; i++ {
				if ends[i].key == top.key {
					ends[0], ends[i] = ends[i], ends[0]
					swapped = true
					break
				}
			}
			if !swapped && !ends[0].closes(top) {
				for i := 1; i < min(len(ends), maxEndSearch) && ends[i].ts <= ends[0].ts; i++ {
					if ends[i].closes(top) {
						ends[0], ends[i] = ends[i], ends[0]
						break
					}
				}
			}
		}
		e := ends[0]
		ends = ends[1:]
		if len(open) == 0 {
			b.skip(fmt.Sprintf("an end of %q at ts %v with no frame open", names.frames[e.key].Name, e.ts))
			continue
		}
		top := open[len(open)-1]
		if !e.closes(top) {
			b.skip(fmt.Sprintf("an end of %q at ts %v while %q is the innermost open frame", names.frames[e.key].Name, e.ts, names.frames[top.key].Name))
			continue
		}
		open = open[:len(open)-1]
		if err := tl.close(ns(e.ts)); err != nil {
			return err
		}
	}
	return nil
}

// closes reports whether the E event e ends the open frame b: it has
// b's name, or none.
func (e span) closes(b span) bool { return e.name < 0 || e.name == b.name }

// maxEndSearch bounds how many E events of one time replaySpans looks
// through for the one that ends the innermost frame, so that a trace of
// many ends at one time takes linear time (speedscope looks through all).
const maxEndSearch = 1000
