package jsonprof

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/pprof/profile"
)

// SniffFirefox reports whether head starts a Firefox Profiler profile:
// the Gecko format ({"meta", "threads", "libs", ...}, alone or as the
// "profile" of Firefox DevTools' export with its "systemHost"), or the
// processed format (meta.preprocessedProfileVersion).
func SniffFirefox(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	n := topNames(t)
	return n["meta"] && (n["threads"] || n["libs"] || n["shared"]) ||
		n["profile"] && devtoolsProfile.Match(head) ||
		n["meta"] && bytes.Contains(head, []byte(`"preprocessedProfileVersion"`))
}

// devtoolsProfile is how Firefox DevTools' export starts its profile.
var devtoolsProfile = regexp.MustCompile(`"profile"\s*:\s*\{\s*"(libs|meta|threads)"`)

// geckoLocation is the "name (file:line:col)" of a JavaScript frame in a
// Gecko profile's string table.
var geckoLocation = regexp.MustCompile(`^(.*)\s+\((.*?)(?::(\d+))?(?::(\d+))?\)$`)

// ParseFirefox reads a Firefox Profiler profile: the Gecko format
// (Firefox's own, and Firefox DevTools' export of it) and the processed
// format profiler.firefox.com saves. Every thread of every process is
// read, its name as comm and its pid and tid as labels. A sample's stack
// weighs the time to the thread's next sample, as in speedscope, or, in
// a processed profile whose samples carry weights (samples.weight, as
// viewer's /p/ID/firefox.json writes them), its weight, as the Firefox
// Profiler counts it: of type time for weightType "tracing-ms", samples
// for "samples", space for "bytes". Its
// frames are the JavaScript frames, as speedscope keeps them (not
// Firefox's own resource: and self-hosted code), or, in a thread with no
// JavaScript frame, every frame by its name.
func ParseFirefox(data []byte, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	g := &geckoReader{b: b}
	if err := g.read(data, false); err != nil {
		return nil, fmt.Errorf("Firefox profile: %w", err)
	}
	return b.finish("Firefox profile")
}

type geckoReader struct {
	b *builder
	// shared is the processed format's shared string array.
	shared []string
}

// geckoMeta is the part of a profile's meta the reader needs.
type geckoMeta struct {
	StartTime                  float64 `json:"startTime"`
	PreprocessedProfileVersion int     `json:"preprocessedProfileVersion"`
}

// read reads one profile (wrapped says it is the "profile" of DevTools'
// export, or a subprocess of one): its meta, threads and processes.
func (g *geckoReader) read(data []byte, nested bool) error {
	d := newDecoder(bytes.NewReader(data))
	var meta geckoMeta
	var threads []jsontext.Value
	var processes [][]byte
	err := d.object(func(name string) error {
		switch name {
		case "profile":
			v, err := d.ReadValue()
			if err != nil {
				return err
			}
			return g.read(bytes.Clone(v), true)
		case "meta":
			return d.value(&meta)
		case "shared":
			var s struct {
				StringArray []string `json:"stringArray"`
			}
			err := d.value(&s)
			g.shared = s.StringArray
			return err
		case "threads":
			// Threads are read once meta (and shared) are known: the
			// names come before them in Firefox's files, but need not.
			return d.array(func() error {
				v, err := d.ReadValue()
				threads = append(threads, bytes.Clone(v))
				return err
			})
		case "processes":
			return d.array(func() error {
				v, err := d.ReadValue()
				if err != nil {
					return err
				}
				if v.Kind() == '"' {
					// A subprocess profile as a JSON string.
					var s string
					if err := newDecoder(bytes.NewReader(v)).value(&s); err != nil {
						return err
					}
					processes = append(processes, []byte(s))
					return nil
				}
				processes = append(processes, bytes.Clone(v))
				return nil
			})
		}
		return d.SkipValue()
	})
	if err != nil {
		return d.errAt(err)
	}
	for _, t := range threads {
		if err := g.thread(t, meta); err != nil {
			return err
		}
	}
	for _, p := range processes {
		if err := g.read(p, true); err != nil {
			return err
		}
	}
	return nil
}

// geckoTable is a table of the Gecko format: a schema naming the column
// of each field, and rows.
type geckoTable struct {
	Schema map[string]int     `json:"schema"`
	Data   [][]jsontext.Value `json:"data"`
}

// column returns the index of field, or def when the schema lacks it.
func (t *geckoTable) column(field string, def int) int {
	if i, ok := t.Schema[field]; ok {
		return i
	}
	return def
}

// cell returns row's field at column c as a number, ok false if absent
// or null.
func cell(row []jsontext.Value, c int) (float64, bool) {
	if c < 0 || c >= len(row) || row[c].Kind() != '0' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(row[c]), 64)
	return f, err == nil
}

// geckoThread is a thread of either format: the Gecko format's tables
// (with schema and data) or the processed format's columns.
type geckoThread struct {
	Name string     `json:"name"`
	Pid  flexNumber `json:"pid"`
	Tid  flexNumber `json:"tid"`

	Samples     jsontext.Value `json:"samples"`
	StackTable  jsontext.Value `json:"stackTable"`
	FrameTable  jsontext.Value `json:"frameTable"`
	FuncTable   jsontext.Value `json:"funcTable"`
	StringTable []string       `json:"stringTable"`
	StringArray []string       `json:"stringArray"`
}

// geckoSample is a sample of a thread: its stack (-1: none) and time
// (ms), and its weight (samples.weight; NaN: none).
type geckoSample struct {
	stack  int64
	time   float64
	weight float64
}

// weightTypes are the sample types of the processed format's
// samples.weightType, and the factor to their unit.
var weightTypes = map[string]struct {
	typ, unit string
	scale     float64
}{
	"tracing-ms": {"time", "nanoseconds", 1e6},
	"samples":    {"samples", "count", 1},
	"bytes":      {"space", "bytes", 1},
}

// valueType is the sample type a thread's samples weigh in; the first
// one made is the profile's default.
func (g *geckoReader) valueType(typ, unit string) int {
	i := g.b.valueType(typ, unit)
	if g.b.defType < 0 {
		g.b.defType = i
	}
	return i
}

// thread reads one thread.
func (g *geckoReader) thread(raw []byte, meta geckoMeta) error {
	if jsontext.Value(raw).Kind() == '"' {
		var s string
		if err := newDecoder(bytes.NewReader(raw)).value(&s); err != nil {
			return err
		}
		raw = []byte(s)
	}
	var t geckoThread
	if err := newDecoder(bytes.NewReader(raw)).value(&t); err != nil {
		return err
	}
	var (
		samples    []geckoSample
		weightType string   // of weighed samples; "": by time gap
		prefixes   []int64  // of each stack
		frames     []int64  // of each stack
		names      []string // of each frame: its location string
		err        error
	)
	if meta.PreprocessedProfileVersion > 0 || t.Samples.Kind() == '{' && !bytes.Contains(t.Samples[:min(len(t.Samples), 200)], []byte(`"schema"`)) {
		samples, prefixes, frames, names, weightType, err = g.processedThread(&t)
	} else {
		samples, prefixes, frames, names, err = geckoThreadTables(&t)
	}
	if err != nil {
		return fmt.Errorf("thread %q: %w", t.Name, err)
	}
	pid, tid := int64(-1), int64(-1)
	if t.Pid != 0 {
		pid = int64(t.Pid)
	}
	if t.Tid != 0 {
		tid = int64(t.Tid)
	}
	th := g.b.thread(Thread{Comm: t.Name, Pid: pid, Tid: tid})

	// Each frame as speedscope names it; -1 for a frame it leaves out.
	js := make([]int32, len(names))
	anyJS := false
	for i, loc := range names {
		js[i] = -1
		m := geckoLocation.FindStringSubmatch(loc)
		if m == nil || strings.HasPrefix(m[2], "resource:") || m[2] == "self-hosted" || strings.HasPrefix(m[2], "self-hosted:") {
			continue
		}
		f := Frame{Name: m[1], File: m[2], Line: -1, Col: -1}
		if m[3] != "" {
			f.Line, _ = strconv.ParseInt(m[3], 10, 64)
		}
		if m[4] != "" {
			f.Col, _ = strconv.ParseInt(m[4], 10, 64)
			f.Col++
		}
		js[i] = g.b.frame(f)
		anyJS = true
	}
	if !anyJS {
		for i, loc := range names {
			js[i] = g.b.frame(Frame{Name: loc, Line: -1, Col: -1})
		}
	}
	// The stack of each of the thread's stacks, made once.
	stackOf := make([]int32, len(prefixes))
	done := make([]bool, len(prefixes))
	var resolve func(s int64, depth int) int32
	resolve = func(s int64, depth int) int32 {
		if s < 0 || s >= int64(len(prefixes)) || depth > 1<<14 {
			return -1
		}
		if done[s] {
			return stackOf[s]
		}
		parent := resolve(prefixes[s], depth+1)
		n := parent
		if f := frames[s]; f >= 0 && f < int64(len(js)) && js[f] >= 0 {
			n = g.b.push(parent, js[f])
		}
		stackOf[s], done[s] = n, true
		return n
	}
	if wt, ok := weightTypes[weightType]; ok {
		typ := g.valueType(wt.typ, wt.unit)
		for _, s := range samples {
			if !(s.weight > 0) {
				continue
			}
			at := int64(math.Round((meta.StartTime + s.time) * 1e6))
			if err := g.b.add(resolve(s.stack, 0), th, typ, int64(math.Round(s.weight*wt.scale)), at, false); err != nil {
				return err
			}
		}
		return nil
	}
	typ := g.valueType("time", "nanoseconds")
	for i, s := range samples {
		if i+1 == len(samples) {
			break // the last sample weighs nothing: no sample follows it
		}
		w := samples[i+1].time - s.time
		if w <= 0 {
			continue
		}
		at := int64(math.Round((meta.StartTime + s.time) * 1e6))
		if err := g.b.add(resolve(s.stack, 0), th, typ, int64(math.Round(w*1e6)), at, true); err != nil {
			return err
		}
	}
	return nil
}

// geckoThreadTables reads a Gecko-format thread's tables.
func geckoThreadTables(t *geckoThread) (samples []geckoSample, prefixes, frames []int64, names []string, err error) {
	var st, stk, ft geckoTable
	for _, x := range []struct {
		v   jsontext.Value
		dst *geckoTable
	}{{t.Samples, &st}, {t.StackTable, &stk}, {t.FrameTable, &ft}} {
		if len(x.v) == 0 {
			continue
		}
		if err := newDecoder(bytes.NewReader(x.v)).value(x.dst); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	sc, tc := st.column("stack", 0), st.column("time", 1)
	for _, row := range st.Data {
		s, ok := cell(row, sc)
		if !ok {
			s = -1
		}
		tm, _ := cell(row, tc)
		samples = append(samples, geckoSample{int64(s), tm, math.NaN()})
	}
	pc, fc := stk.column("prefix", 0), stk.column("frame", 1)
	for _, row := range stk.Data {
		p, ok := cell(row, pc)
		if !ok {
			p = -1
		}
		f, ok := cell(row, fc)
		if !ok {
			f = -1
		}
		prefixes = append(prefixes, int64(p))
		frames = append(frames, int64(f))
	}
	lc := ft.column("location", 0)
	for _, row := range ft.Data {
		l, ok := cell(row, lc)
		name := ""
		if ok && l >= 0 && int(l) < len(t.StringTable) {
			name = t.StringTable[int(l)]
		}
		names = append(names, name)
	}
	return samples, prefixes, frames, names, nil
}

// processedThread reads a processed-format thread's columns: a frame is
// named by its function's name and file, as "name (file:line:col)". A
// thread whose samples all carry a weight has their weightType ("" if
// not).
func (g *geckoReader) processedThread(t *geckoThread) (samples []geckoSample, prefixes, frames []int64, names []string, weightType string, err error) {
	strs := t.StringArray
	if strs == nil {
		strs = t.StringTable
	}
	if strs == nil {
		strs = g.shared
	}
	var s struct {
		Stack      []*float64 `json:"stack"`
		Time       []float64  `json:"time"`
		TimeDeltas []float64  `json:"timeDeltas"`
		Weight     []*float64 `json:"weight"`
		WeightType string     `json:"weightType"`
	}
	var stk struct {
		Prefix []*float64 `json:"prefix"`
		Frame  []float64  `json:"frame"`
	}
	var ft struct {
		Func   []float64  `json:"func"`
		Line   []*float64 `json:"line"`
		Column []*float64 `json:"column"`
	}
	var fn struct {
		Name     []float64  `json:"name"`
		FileName []*float64 `json:"fileName"`
	}
	for _, x := range []struct {
		v   jsontext.Value
		dst any
	}{{t.Samples, &s}, {t.StackTable, &stk}, {t.FrameTable, &ft}, {t.FuncTable, &fn}} {
		if len(x.v) == 0 {
			continue
		}
		if err := newDecoder(bytes.NewReader(x.v)).value(x.dst); err != nil {
			return nil, nil, nil, nil, "", err
		}
	}
	weighed := len(s.Weight) == len(s.Stack)
	for _, w := range s.Weight {
		weighed = weighed && w != nil
	}
	if weighed {
		weightType = s.WeightType
		if weightType == "" {
			weightType = "samples" // the Firefox Profiler's default
		}
	}
	str := func(i float64) string {
		if i >= 0 && int(i) < len(strs) {
			return strs[int(i)]
		}
		return ""
	}
	at := 0.0
	for i, st := range s.Stack {
		switch {
		case i < len(s.Time):
			at = s.Time[i]
		case i < len(s.TimeDeltas):
			at += s.TimeDeltas[i]
		}
		stack := int64(-1)
		if st != nil {
			stack = int64(*st)
		}
		w := math.NaN()
		if weighed {
			w = *s.Weight[i]
		}
		samples = append(samples, geckoSample{stack, at, w})
	}
	for i, f := range stk.Frame {
		p := int64(-1)
		if i < len(stk.Prefix) && stk.Prefix[i] != nil {
			p = int64(*stk.Prefix[i])
		}
		prefixes = append(prefixes, p)
		frames = append(frames, int64(f))
	}
	for i, f := range ft.Func {
		k := int(f)
		if k < 0 || k >= len(fn.Name) {
			names = append(names, "")
			continue
		}
		name := str(fn.Name[k])
		if k < len(fn.FileName) && fn.FileName[k] != nil {
			loc := str(*fn.FileName[k])
			if i < len(ft.Line) && ft.Line[i] != nil {
				loc += ":" + strconv.FormatInt(int64(*ft.Line[i]), 10)
				if i < len(ft.Column) && ft.Column[i] != nil {
					loc += ":" + strconv.FormatInt(int64(*ft.Column[i]), 10)
				}
			}
			name += " (" + loc + ")"
		}
		names = append(names, name)
	}
	return samples, prefixes, frames, names, weightType, nil
}
