// Package firefoxprofile writes a pprof profile in the Firefox Profiler's
// processed format, so that profiler.firefox.com opens a profile viewer
// holds (its from-url/ page fetches the file).
//
// Why the processed format: it is the only format the Firefox Profiler
// imports that carries a weight per sample (samples.weight, with
// weightType "tracing-ms", "bytes" or "samples"), so that an aggregated
// pprof sample keeps its value; the Gecko format and Chrome's formats
// count each sample once. It is also the format that names libraries by
// debug name and breakpad ID with frame addresses relative to them, so
// that frames viewer could not name are symbolicated by the symbol server
// the link names (viewer's /symbolicate/v5).
//
// The file is written at processed version 41, with each thread's own
// tables and string array (the shape samply wrote at that version); the
// Firefox Profiler upgrades it to its current version when it loads it,
// as it does every older processed profile. The samples of one sample
// type are written as threads: one per thread the samples' labels name
// (comm, pid and tid, as the flame page's timeline keeps threads apart),
// grouped in processes by pid, or one thread for a profile whose samples
// name none. The pid is written as a number and the tid as a string, as
// the Firefox Profiler's upgrade to version 46 needs them to tell each
// process's main thread (tid = pid) from its other threads, so that
// every thread gets its own track. Each sample keeps its value as samples.weight. A profile
// with times (the sampling.TimeLabel label: ns since the first sample)
// keeps them, in time order, so that the Firefox Profiler's tracks follow
// the recording; in one without, a sample's time is the sum of the
// weights before it (in ms for a time type), so that the time between
// two samples is the first one's weight, as readers that weigh a sample
// by that gap (speedscope) see it too.
package firefoxprofile

import (
	"cmp"
	"errors"
	"io"
	"path"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/flame"
)

// Version is the processed format version written
// (meta.preprocessedProfileVersion).
const Version = 41

// ErrNoSamples is what Write returns when no sample has a positive value
// of the sample type: the Firefox Profiler would show nothing.
var ErrNoSamples = errors.New("the profile has no sample with a positive value of this sample type")

// Options are what Write needs besides the profile.
type Options struct {
	// Name is the profile's name (the product's, and that of a thread
	// or process its samples do not name).
	Name string
	// SampleIndex is the sample type written.
	SampleIndex int
	// BreakpadID turns a GNU build ID into the breakpad ID that the
	// symbol server is asked by; nil: unnamed frames are not given to
	// the symbol server.
	BreakpadID func(buildID string) string
}

// frameKey is a frame: a location's line (or -1 for its address).
type frameKey struct {
	loc  *profile.Location
	line int
}

// thread is one thread of the file: the samples of one thread label, in
// time order when the profile has times, and each one's time (ms since
// meta.startTime).
type thread struct {
	comm     string
	pid, tid int64 // -1: not known
	samples  []*profile.Sample
	times    []float64
	end      float64 // time of a last sample with no stack; -1: none
	t        *tables
}

// tables are one thread's tables and string array, built as its
// samples' stacks are walked.
type tables struct {
	strs                    []string
	strIdx                  map[string]int
	resName, resLib         []int
	resOf                   map[int]int // lib → resource
	funcName, funcResource  []int
	funcIdx                 map[[2]int]int // (name, resource) → func
	frameAddr, frameFunc    []int64
	frameLine               []int64 // 0: none
	frameIdx                map[frameKey]int
	stackPrefix, stackFrame []int
	stackIdx                map[[2]int]int // (prefix, frame) → stack
	sampleStack             []int
}

func (t *tables) str(s string) int {
	i, ok := t.strIdx[s]
	if !ok {
		i = len(t.strs)
		t.strs = append(t.strs, s)
		t.strIdx[s] = i
	}
	return i
}

// libs are the mappings the Firefox Profiler can ask the symbol server
// about, shared by the threads.
type libs struct {
	maps         []*profile.Mapping
	idx          map[*profile.Mapping]int
	breakpadID   func(string) string
	unsymbolized bool
}

// frame is the frame of line j of l (-1: its address) in t.
func (t *tables) frame(ls *libs, l *profile.Location, j int) int {
	k := frameKey{l, j}
	if f, ok := t.frameIdx[k]; ok {
		return f
	}
	addr, res := int64(-1), -1
	if j < 0 && l.Mapping != nil && l.Mapping.BuildID != "" && ls.breakpadID != nil &&
		l.Address >= l.Mapping.Start && l.Address < l.Mapping.Limit {
		m := l.Mapping
		li, ok := ls.idx[m]
		if !ok {
			li = len(ls.maps)
			ls.maps = append(ls.maps, m)
			ls.idx[m] = li
		}
		r, ok := t.resOf[li]
		if !ok {
			r = len(t.resName)
			t.resName = append(t.resName, t.str(path.Base(m.File)))
			t.resLib = append(t.resLib, li)
			t.resOf[li] = r
		}
		addr, res = int64(l.Address-m.Start+m.Offset), r
		ls.unsymbolized = true
	}
	name := t.str(flame.FrameName(l, j))
	fi, ok := t.funcIdx[[2]int{name, res}]
	if !ok {
		fi = len(t.funcName)
		t.funcName = append(t.funcName, name)
		t.funcResource = append(t.funcResource, res)
		t.funcIdx[[2]int{name, res}] = fi
	}
	var line int64
	if j >= 0 {
		line = l.Line[j].Line
	}
	f := len(t.frameFunc)
	t.frameAddr = append(t.frameAddr, addr)
	t.frameFunc = append(t.frameFunc, int64(fi))
	t.frameLine = append(t.frameLine, line)
	t.frameIdx[k] = f
	return f
}

// build makes th's tables: each sample's stack, root first.
func (th *thread) build(ls *libs) {
	t := &tables{strs: []string{}, strIdx: map[string]int{}, resOf: map[int]int{}, funcIdx: map[[2]int]int{},
		frameIdx: map[frameKey]int{}, stackIdx: map[[2]int]int{}, sampleStack: make([]int, len(th.samples))}
	for i, s := range th.samples {
		st := -1
		for li := len(s.Location) - 1; li >= 0; li-- {
			l := s.Location[li]
			for j := len(l.Line) - 1; j >= min(0, len(l.Line)-1); j-- {
				f := t.frame(ls, l, j)
				k := [2]int{st, f}
				n, ok := t.stackIdx[k]
				if !ok {
					n = len(t.stackFrame)
					t.stackPrefix = append(t.stackPrefix, st)
					t.stackFrame = append(t.stackFrame, f)
					t.stackIdx[k] = n
				}
				st = n
			}
		}
		if st < 0 {
			st = t.noStack()
		}
		t.sampleStack[i] = st
	}
	th.t = t
}

// NoStack names the one frame of a sample that has none: the Firefox
// Profiler leaves a sample with a null stack out of its call tree, so
// without it the tree's total would be less than viewer's (a Go heap
// profile has such a sample).
const NoStack = "(no stack)"

// noStack is the stack of a sample without frames: one NoStack frame.
func (t *tables) noStack() int {
	k := frameKey{nil, -2}
	f, ok := t.frameIdx[k]
	if !ok {
		f = len(t.frameFunc)
		t.funcName = append(t.funcName, t.str(NoStack))
		t.funcResource = append(t.funcResource, -1)
		t.frameAddr = append(t.frameAddr, -1)
		t.frameFunc = append(t.frameFunc, int64(len(t.funcName)-1))
		t.frameLine = append(t.frameLine, 0)
		t.frameIdx[k] = f
	}
	sk := [2]int{-1, f}
	n, ok := t.stackIdx[sk]
	if !ok {
		n = len(t.stackFrame)
		t.stackPrefix = append(t.stackPrefix, -1)
		t.stackFrame = append(t.stackFrame, f)
		t.stackIdx[sk] = n
	}
	return n
}

// sampleTime is s's time label (ns since the first sample).
func sampleTime(s *profile.Sample) (int64, bool) {
	if t := s.NumLabel[sampling.TimeLabel]; len(t) == 1 && t[0] >= 0 {
		return t[0], true
	}
	return 0, false
}

// threadsOf splits samples by thread label, in pid, tid and name order;
// each thread's samples in time order, with their times, when timed.
func threadsOf(samples []*profile.Sample, timed bool, weight func(*profile.Sample) float64) []*thread {
	type key struct {
		comm     string
		pid, tid int64
	}
	byKey := map[key]*thread{}
	var out []*thread
	for _, s := range samples {
		k := key{pid: -1, tid: -1}
		if c := s.Label["comm"]; len(c) > 0 {
			k.comm = c[0]
		}
		if v := s.NumLabel["pid"]; len(v) > 0 {
			k.pid = v[0]
		}
		if v := s.NumLabel["tid"]; len(v) > 0 {
			k.tid = v[0]
		}
		th := byKey[k]
		if th == nil {
			th = &thread{comm: k.comm, pid: k.pid, tid: k.tid, end: -1}
			byKey[k] = th
			out = append(out, th)
		}
		th.samples = append(th.samples, s)
	}
	slices.SortStableFunc(out, func(a, b *thread) int {
		return cmp.Or(cmp.Compare(a.pid, b.pid), cmp.Compare(a.tid, b.tid), cmp.Compare(a.comm, b.comm))
	})
	for _, th := range out {
		th.times = make([]float64, len(th.samples))
		if timed {
			// Samples without a time (none in a recording that has
			// times) follow the timed ones, at the last time.
			slices.SortStableFunc(th.samples, func(a, b *profile.Sample) int {
				ta, oka := sampleTime(a)
				tb, okb := sampleTime(b)
				if oka != okb {
					if oka {
						return -1
					}
					return 1
				}
				return cmp.Compare(ta, tb)
			})
			last := 0.0
			for i, s := range th.samples {
				if t, ok := sampleTime(s); ok {
					last = float64(t) / 1e6
				}
				th.times[i] = last
			}
			continue
		}
		at := 0.0
		for i, s := range th.samples {
			th.times[i] = at
			at += weight(s)
		}
		th.end = at
	}
	return out
}

// Write writes p to w. Nothing is written when it returns ErrNoSamples.
func Write(w io.Writer, p *profile.Profile, opt Options) error {
	si := opt.SampleIndex
	var samples []*profile.Sample
	timed := false
	for _, s := range p.Sample {
		if si < len(s.Value) && s.Value[si] > 0 {
			samples = append(samples, s)
			if _, ok := sampleTime(s); ok {
				timed = true
			}
		}
	}
	if len(samples) == 0 || si >= len(p.SampleType) {
		return ErrNoSamples
	}
	unit := p.SampleType[si].Unit
	weightType, scale := "samples", 1.0
	switch unit {
	case "nanoseconds":
		weightType, scale = "tracing-ms", 1e-6
	case "microseconds":
		weightType, scale = "tracing-ms", 1e-3
	case "milliseconds":
		weightType = "tracing-ms"
	case "seconds":
		weightType, scale = "tracing-ms", 1e3
	case "bytes":
		weightType = "bytes"
	}
	weight := func(s *profile.Sample) float64 { return float64(s.Value[si]) * scale }

	threads := threadsOf(samples, timed, weight)
	ls := &libs{idx: map[*profile.Mapping]int{}, breakpadID: opt.BreakpadID}
	for _, th := range threads {
		th.build(ls)
	}
	// A process is named by its main thread (tid = pid), as perf names
	// it, else by its first thread.
	processName := map[int64]string{}
	processThreads := map[int64]int{}
	for _, th := range threads {
		if _, ok := processName[th.pid]; !ok || th.tid == th.pid {
			processName[th.pid] = th.comm
		}
		processThreads[th.pid]++
	}

	e := jsontext.NewEncoder(w, jsontext.AllowInvalidUTF8(true))
	var err error
	tok := func(ts ...jsontext.Token) {
		for _, t := range ts {
			if err == nil {
				err = e.WriteToken(t)
			}
		}
	}
	s := jsontext.String
	num := func(v float64) jsontext.Token { return jsontext.Float(v) }
	ints := func(name string, vs []int) {
		tok(s(name), jsontext.BeginArray)
		for _, v := range vs {
			if v < 0 {
				tok(jsontext.Null)
			} else {
				tok(jsontext.Int(int64(v)))
			}
		}
		tok(jsontext.EndArray)
	}
	repeat := func(name string, t jsontext.Token, n int) {
		tok(s(name), jsontext.BeginArray)
		for range n {
			tok(t)
		}
		tok(jsontext.EndArray)
	}
	or := func(name string) string {
		if name == "" {
			return opt.Name
		}
		return name
	}

	tok(jsontext.BeginObject, s("meta"), jsontext.BeginObject,
		s("version"), jsontext.Int(24),
		s("preprocessedProfileVersion"), jsontext.Int(Version),
		s("interval"), num(1),
		s("startTime"), num(float64(p.TimeNanos)/1e6),
		s("processType"), jsontext.Int(0),
		s("product"), s(opt.Name),
		s("importedFrom"), s("viewer"),
		s("stackwalk"), jsontext.Int(1),
		s("debug"), jsontext.False,
		s("symbolicated"), jsontext.Bool(!ls.unsymbolized),
		s("usesOnlyOneStackType"), jsontext.True,
		s("sourceCodeIsNotOnSearchfox"), jsontext.True,
		s("pausedRanges"), jsontext.BeginArray, jsontext.EndArray,
		s("markerSchema"), jsontext.BeginArray, jsontext.EndArray,
		s("sampleUnits"), jsontext.BeginObject, s("time"), s("ms"), s("eventDelay"), s("ms"), s("threadCPUDelta"), s("µs"), jsontext.EndObject,
		s("extensions"), jsontext.BeginObject, s("length"), jsontext.Int(0),
		s("baseURL"), jsontext.BeginArray, jsontext.EndArray, s("id"), jsontext.BeginArray, jsontext.EndArray, s("name"), jsontext.BeginArray, jsontext.EndArray, jsontext.EndObject,
		s("categories"), jsontext.BeginArray, jsontext.BeginObject, s("name"), s("Other"), s("color"), s("grey"),
		s("subcategories"), jsontext.BeginArray, s("Other"), jsontext.EndArray, jsontext.EndObject, jsontext.EndArray,
		jsontext.EndObject)

	tok(s("libs"), jsontext.BeginArray)
	for _, m := range ls.maps {
		base := path.Base(m.File)
		tok(jsontext.BeginObject, s("name"), s(base), s("path"), s(m.File),
			s("debugName"), s(base), s("debugPath"), s(m.File),
			s("breakpadId"), s(opt.BreakpadID(m.BuildID)), s("codeId"), s(m.BuildID),
			s("arch"), jsontext.Null, jsontext.EndObject)
	}
	tok(jsontext.EndArray, s("threads"), jsontext.BeginArray)
	for _, th := range threads {
		t := th.t
		// The Firefox Profiler's upgrade to version 46 sets isMainThread
		// itself, from the pid and tid as version 41 had them: a string
		// pid made every thread a main thread (each process then showed
		// one of its threads and hid the rest), a numeric pid one whose
		// tid is that number as a string. So the pid is a number (0: not
		// known) and the tid a string: the pid for a process's main
		// thread (tid = pid, or its only thread when no tid is known),
		// null for another thread whose tid is not known.
		pid := max(th.pid, 0)
		main := th.tid >= 0 && th.tid == th.pid || th.tid < 0 && processThreads[th.pid] == 1
		tid := jsontext.Null
		switch {
		case th.tid >= 0:
			tid = s(strconv.FormatInt(th.tid, 10))
		case main:
			tid = s(strconv.FormatInt(pid, 10))
		}
		tok(jsontext.BeginObject,
			s("name"), s(or(th.comm)), s("processName"), s(or(processName[th.pid])), s("processType"), s("default"),
			s("isMainThread"), jsontext.Bool(main),
			s("pid"), jsontext.Int(pid), s("tid"), tid,
			s("processStartupTime"), num(0), s("processShutdownTime"), jsontext.Null,
			s("registerTime"), num(0), s("unregisterTime"), jsontext.Null,
			s("pausedRanges"), jsontext.BeginArray, jsontext.EndArray)

		// Samples; in a profile without times, a last one with no stack
		// at the end of the last sample's weight, so that the gap after
		// each sample is its weight.
		stacks, n := t.sampleStack, len(th.samples)
		if th.end >= 0 {
			stacks = append(stacks, -1)
			n++
		}
		tok(s("samples"), jsontext.BeginObject, s("length"), jsontext.Int(int64(n)), s("weightType"), s(weightType))
		ints("stack", stacks)
		tok(s("time"), jsontext.BeginArray)
		for _, at := range th.times {
			tok(num(at))
		}
		if th.end >= 0 {
			tok(num(th.end))
		}
		tok(jsontext.EndArray, s("weight"), jsontext.BeginArray)
		for _, smp := range th.samples {
			if weightType == "tracing-ms" {
				tok(num(weight(smp)))
			} else {
				tok(jsontext.Int(smp.Value[si]))
			}
		}
		if th.end >= 0 {
			tok(jsontext.Int(0))
		}
		tok(jsontext.EndArray, jsontext.EndObject)

		tok(s("stackTable"), jsontext.BeginObject, s("length"), jsontext.Int(int64(len(t.stackFrame))))
		ints("prefix", t.stackPrefix)
		ints("frame", t.stackFrame)
		repeat("category", jsontext.Int(0), len(t.stackFrame))
		repeat("subcategory", jsontext.Int(0), len(t.stackFrame))
		tok(jsontext.EndObject)

		nf := len(t.frameFunc)
		tok(s("frameTable"), jsontext.BeginObject, s("length"), jsontext.Int(int64(nf)), s("address"), jsontext.BeginArray)
		for _, a := range t.frameAddr {
			tok(jsontext.Int(a))
		}
		tok(jsontext.EndArray)
		repeat("inlineDepth", jsontext.Int(0), nf)
		repeat("category", jsontext.Int(0), nf)
		repeat("subcategory", jsontext.Int(0), nf)
		tok(s("func"), jsontext.BeginArray)
		for _, f := range t.frameFunc {
			tok(jsontext.Int(f))
		}
		tok(jsontext.EndArray)
		repeat("nativeSymbol", jsontext.Null, nf)
		repeat("innerWindowID", jsontext.Int(0), nf)
		repeat("implementation", jsontext.Null, nf)
		tok(s("line"), jsontext.BeginArray)
		for _, l := range t.frameLine {
			if l > 0 {
				tok(jsontext.Int(l))
			} else {
				tok(jsontext.Null)
			}
		}
		tok(jsontext.EndArray)
		repeat("column", jsontext.Null, nf)
		repeat("optimizations", jsontext.Null, nf)
		tok(jsontext.EndObject)

		// Functions carry no file name: a reader that sees "name
		// (file:line)" takes it for JavaScript (the Firefox Profiler's
		// own naming), so native frames are named alone; lines are on
		// the frames.
		nfn := len(t.funcName)
		tok(s("funcTable"), jsontext.BeginObject, s("length"), jsontext.Int(int64(nfn)))
		ints("name", t.funcName)
		repeat("isJS", jsontext.False, nfn)
		repeat("relevantForJS", jsontext.False, nfn)
		tok(s("resource"), jsontext.BeginArray)
		for _, r := range t.funcResource {
			tok(jsontext.Int(int64(r)))
		}
		tok(jsontext.EndArray)
		repeat("fileName", jsontext.Null, nfn)
		repeat("lineNumber", jsontext.Null, nfn)
		repeat("columnNumber", jsontext.Null, nfn)
		tok(jsontext.EndObject)

		tok(s("resourceTable"), jsontext.BeginObject, s("length"), jsontext.Int(int64(len(t.resName))))
		ints("lib", t.resLib)
		ints("name", t.resName)
		repeat("host", jsontext.Null, len(t.resName))
		repeat("type", jsontext.Int(1), len(t.resName))
		tok(jsontext.EndObject)

		tok(s("nativeSymbols"), jsontext.BeginObject, s("length"), jsontext.Int(0),
			s("libIndex"), jsontext.BeginArray, jsontext.EndArray, s("address"), jsontext.BeginArray, jsontext.EndArray,
			s("name"), jsontext.BeginArray, jsontext.EndArray, jsontext.EndObject)
		tok(s("markers"), jsontext.BeginObject, s("length"), jsontext.Int(0))
		for _, c := range []string{"category", "data", "endTime", "name", "phase", "startTime"} {
			tok(s(c), jsontext.BeginArray, jsontext.EndArray)
		}
		tok(jsontext.EndObject)
		tok(s("stringArray"), jsontext.BeginArray)
		for _, str := range t.strs {
			tok(s(str))
		}
		tok(jsontext.EndArray, jsontext.EndObject)
		if err != nil {
			return err
		}
		th.t = nil // its tables are written
	}
	tok(jsontext.EndArray,
		s("pages"), jsontext.BeginArray, jsontext.EndArray,
		s("counters"), jsontext.BeginArray, jsontext.EndArray,
		jsontext.EndObject)
	return err
}
