package jsonprof

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

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

// ParseFirefox reads a Firefox Profiler profile from data (ReadFirefox).
func ParseFirefox(data []byte, opt Options) (*profile.Profile, error) {
	return ReadFirefox(bytes.NewReader(data), opt)
}

// ReadFirefox reads a Firefox Profiler profile: the Gecko format
// (Firefox's own, and Firefox DevTools' export of it) and the processed
// format profiler.firefox.com saves. Every thread of every process is
// read, its name as comm and its pid and tid as labels. A sample's stack
// weighs the time to the thread's next sample, as in speedscope, or, in
// a processed profile whose samples carry weights (samples.weight, as
// viewer's /p/ID/firefox.json writes them), its weight, as the Firefox
// Profiler counts it: of type time for weightType "tracing-ms", samples
// for "samples", space for "bytes". Its frames are the JavaScript frames, as speedscope keeps them (not
// Firefox's own resource: and self-hosted code), or, in a thread with no
// JavaScript frame, every frame by its name.
//
// The input is read as a stream: a thread's tables are kept as columns of
// the fields the reader uses (8 bytes a cell: a sample's stack and time,
// a stack's prefix and frame, a frame's location), not as JSON, and a
// thread's columns are given back once its samples are added, when its
// profile's meta has been read (Firefox writes it first).
func ReadFirefox(r io.Reader, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	g := &geckoReader{b: b}
	d := newDecoder(r)
	if err := g.read(d, nil); err != nil {
		return nil, fmt.Errorf("Firefox profile: %w", d.errAt(err))
	}
	return b.finish("Firefox profile")
}

type geckoReader struct {
	b *builder
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

// geckoMeta is the part of a profile's meta the reader needs.
type geckoMeta struct {
	StartTime                  float64 `json:"startTime"`
	PreprocessedProfileVersion int     `json:"preprocessedProfileVersion"`
}

// read reads one profile object from d (the whole input, the "profile"
// of DevTools' export, or a subprocess): its meta, threads and
// processes. shared is the processed format's shared string array of the
// profile it is part of (nil if none). A thread is added as it ends when
// the meta (and, for a processed thread without strings of its own, the
// shared strings) came before it; otherwise at the profile's end.
func (g *geckoReader) read(d decoder, shared *[]string) error {
	var meta geckoMeta
	sawMeta, sawShared := false, false
	var waiting []*geckoThread
	add := func(t *geckoThread) error {
		err := g.thread(t, meta, shared)
		g.b.unkeep(t.kept)
		return err
	}
	err := d.object(func(name string) error {
		switch name {
		case "profile":
			return g.read(d, shared)
		case "meta":
			sawMeta = true
			return d.value(&meta)
		case "shared":
			var s struct {
				StringArray []string `json:"stringArray"`
			}
			err := d.value(&s)
			shared, sawShared = &s.StringArray, true
			return err
		case "threads":
			return d.array(func() error {
				t := &geckoThread{b: g.b}
				if err := g.readThread(d, t); err != nil {
					return err
				}
				ownStrings := t.stringArray != nil || t.stringTable != nil || !t.processed(meta)
				if sawMeta && (ownStrings || sawShared) && len(waiting) == 0 {
					return add(t)
				}
				waiting = append(waiting, t)
				return nil
			})
		case "processes":
			return d.array(func() error {
				if d.PeekKind() == '"' {
					// A subprocess profile as a JSON string.
					s, err := d.string()
					if err != nil {
						return err
					}
					sd := newDecoder(strings.NewReader(s))
					if err := g.read(sd, shared); err != nil {
						return sd.errAt(err)
					}
					return nil
				}
				return g.read(d, shared)
			})
		}
		return d.SkipValue()
	})
	if err != nil {
		return err
	}
	for _, t := range waiting {
		if err := add(t); err != nil {
			return err
		}
	}
	return nil
}

// readThread reads a thread of either format into t: the Gecko format's
// tables (a schema and rows) or the processed format's columns. A thread
// written as a JSON string (a subprocess's, in DevTools' export) is read
// from that string.
func (g *geckoReader) readThread(d decoder, t *geckoThread) error {
	if d.PeekKind() == '"' {
		s, err := d.string()
		if err != nil {
			return err
		}
		sd := newDecoder(strings.NewReader(s))
		if err := g.readThread(sd, t); err != nil {
			return sd.errAt(err)
		}
		return nil
	}
	return d.object(func(key string) error {
		var err error
		switch key {
		case "name":
			t.name, err = d.string()
		case "pid":
			t.pid, err = d.number()
		case "tid":
			t.tid, err = d.number()
		case "samples":
			t.hasSamples = true
			err = t.samples.read(d, t, geckoSampleColumns)
		case "stackTable":
			err = t.stackTable.read(d, t, geckoStackColumns)
		case "frameTable":
			err = t.frameTable.read(d, t, geckoFrameColumns)
		case "funcTable":
			err = t.funcTable.read(d, t, geckoFuncColumns)
		case "stringTable":
			t.stringTable, err = t.readStrings(d)
		case "stringArray":
			t.stringArray, err = t.readStrings(d)
		default:
			err = d.SkipValue()
		}
		return err
	})
}

// readStrings reads a string table; null is none.
func (t *geckoThread) readStrings(d decoder) ([]string, error) {
	if d.PeekKind() == 'n' {
		_, err := d.ReadToken()
		return nil, err
	}
	strs := []string{}
	err := d.array(func() error {
		s, err := d.string()
		strs = append(strs, s)
		if err == nil {
			err = t.keep(int64(16 + len(s)))
		}
		return err
	})
	return strs, err
}

// The columns the reader uses of each table, and the column of each in a
// Gecko-format row when the table's schema does not name it.
var (
	geckoSampleColumns = []geckoColumn{{"stack", 0}, {"time", 1}, {"timeDeltas", -1}, {"weight", -1}}
	geckoStackColumns  = []geckoColumn{{"prefix", 0}, {"frame", 1}}
	geckoFrameColumns  = []geckoColumn{{"location", 0}, {"func", -1}, {"line", -1}, {"column", -1}}
	geckoFuncColumns   = []geckoColumn{{"name", -1}, {"fileName", -1}}
)

type geckoColumn struct {
	name string
	def  int // its index in a Gecko row when the schema lacks it; -1: none
}

// geckoTable is a table of either format, as the columns the reader uses:
// the Gecko format's rows (each an array, its fields at the columns its
// schema names), or the processed format's columns (arrays of a field
// each). A cell is a number, NaN for null or any other value.
type geckoTable struct {
	cols      []geckoColumn
	schema    map[string]int
	rows      [][]float64 // the used columns of the Gecko rows, by cols
	columns   [][]float64 // the processed format's columns, by cols
	sawSchema bool
	nrows     int // Gecko rows read
	// weightType is the processed samples' weightType ("" if none).
	weightType string
	// Gecko rows read before the schema: every cell, and where each row
	// starts in raw.
	raw      []float64
	rawStart []int
}

// read reads a table of either format from d, keeping the columns cols
// names and taking their memory with t.keep.
func (tb *geckoTable) read(d decoder, t *geckoThread, cols []geckoColumn) error {
	tb.cols = cols
	tb.rows = make([][]float64, len(cols))
	tb.columns = make([][]float64, len(cols))
	if d.PeekKind() == 'n' {
		_, err := d.ReadToken()
		return err
	}
	err := d.object(func(key string) error {
		switch key {
		case "schema":
			tb.sawSchema = true
			return d.value(&tb.schema)
		case "weightType":
			if d.PeekKind() != '"' {
				return d.SkipValue()
			}
			var err error
			tb.weightType, err = d.string()
			return err
		case "data":
			if d.PeekKind() == 'n' {
				_, err := d.ReadToken()
				return err
			}
			at := tb.rowColumns()
			return d.array(func() error {
				if tb.sawSchema {
					return tb.readRow(d, t, at)
				}
				tb.rawStart = append(tb.rawStart, len(tb.raw))
				return tb.readRaw(d, t)
			})
		}
		for i, c := range cols {
			if c.name == key {
				return d.array(func() error {
					v, err := cell(d)
					tb.columns[i] = append(tb.columns[i], v)
					if err == nil {
						err = t.keep(8)
					}
					return err
				})
			}
		}
		return d.SkipValue()
	})
	if err != nil || tb.rawStart == nil {
		return err
	}
	// Rows read before the schema are sorted into columns now.
	at := tb.rowColumns()
	for r, start := range tb.rawStart {
		end := len(tb.raw)
		if r+1 < len(tb.rawStart) {
			end = tb.rawStart[r+1]
		}
		row := tb.raw[start:end]
		for i, c := range at {
			if c >= 0 && c < len(row) {
				tb.rows[i] = append(tb.rows[i], row[c])
			}
		}
		tb.fill(at, r)
	}
	tb.nrows = len(tb.rawStart)
	tb.raw, tb.rawStart = nil, nil
	return nil
}

// rowColumns is the column of each of tb.cols in a Gecko row: the
// schema's, or the default.
func (tb *geckoTable) rowColumns() []int {
	at := make([]int, len(tb.cols))
	for i, c := range tb.cols {
		at[i] = c.def
		if k, ok := tb.schema[c.name]; ok {
			at[i] = k
		}
	}
	return at
}

// readRow reads a Gecko row, keeping the cells at columns at (a column
// at -1, which no row has, is left empty).
func (tb *geckoTable) readRow(d decoder, t *geckoThread, at []int) error {
	n := tb.nrows
	tb.nrows++
	if d.PeekKind() == 'n' {
		_, err := d.ReadToken()
		tb.fill(at, n)
		return err
	}
	k := 0
	err := d.array(func() error {
		v, err := cell(d)
		for i, c := range at {
			if c == k {
				tb.rows[i] = append(tb.rows[i], v)
			}
		}
		k++
		return err
	})
	tb.fill(at, n)
	if err == nil {
		err = t.keep(8 * int64(len(at)))
	}
	return err
}

// fill ends row n (from 0) of the columns at places, with NaN in the
// columns the row has no cell of.
func (tb *geckoTable) fill(at []int, n int) {
	for i, c := range at {
		if c >= 0 && len(tb.rows[i]) == n {
			tb.rows[i] = append(tb.rows[i], math.NaN())
		}
	}
}

// readRaw reads a Gecko row whole, for a table whose schema comes later.
func (tb *geckoTable) readRaw(d decoder, t *geckoThread) error {
	if d.PeekKind() == 'n' {
		_, err := d.ReadToken()
		return err
	}
	return d.array(func() error {
		v, err := cell(d)
		tb.raw = append(tb.raw, v)
		if err == nil {
			err = t.keep(8 + 8)
		}
		return err
	})
}

// cell reads a table's cell: a number, NaN for null or any other value.
func cell(d decoder) (float64, error) {
	switch d.PeekKind() {
	case '0':
		t, err := d.ReadToken()
		if err != nil {
			return 0, err
		}
		f, err := strconv.ParseFloat(t.String(), 64)
		if err != nil {
			return math.NaN(), nil
		}
		return f, nil
	}
	return math.NaN(), d.SkipValue()
}

// column is column i of the table, of either format.
func (tb *geckoTable) column(i int, processed bool) []float64 {
	if tb.rows == nil {
		return nil
	}
	if processed {
		return tb.columns[i]
	}
	return tb.rows[i]
}

// geckoThread is a thread as read, of either format.
type geckoThread struct {
	b        *builder
	name     string
	pid, tid float64

	hasSamples                                 bool
	samples, stackTable, frameTable, funcTable geckoTable
	stringTable, stringArray                   []string
	// samplesSchema says the samples are a Gecko table (with a schema).
	kept int64 // bytes taken with keep
}

// keep takes n more bytes for the thread's tables.
func (t *geckoThread) keep(n int64) error {
	t.kept += n
	return t.b.keep(n)
}

// processed says the thread is in the processed format: its profile
// says so, or its samples are columns, not a Gecko table with a schema.
func (t *geckoThread) processed(meta geckoMeta) bool {
	return meta.PreprocessedProfileVersion > 0 || t.hasSamples && t.samples.rows != nil && !t.samples.sawSchema && t.samples.nrows == 0
}

// at is column c of a table at row i, ok false if absent or null.
func at(c []float64, i int) (float64, bool) {
	if i < 0 || i >= len(c) || math.IsNaN(c[i]) {
		return 0, false
	}
	return c[i], true
}

// thread adds a thread's samples.
func (g *geckoReader) thread(t *geckoThread, meta geckoMeta, shared *[]string) error {
	var (
		nsamples int
		sampleAt func(i int) (stack int64, time float64)
		prefixes []int64  // of each stack
		frames   []int64  // of each stack
		names    []string // of each frame: its location string
	)
	if t.processed(meta) {
		nsamples, sampleAt, prefixes, frames, names = processedThread(t, shared)
	} else {
		nsamples, sampleAt, prefixes, frames, names = geckoThreadTables(t)
	}
	pid, tid := int64(-1), int64(-1)
	if t.pid != 0 {
		pid = int64(t.pid)
	}
	if t.tid != 0 {
		tid = int64(t.tid)
	}
	th := g.b.thread(Thread{Comm: t.name, Pid: pid, Tid: tid})

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
	if nsamples == 0 {
		return nil
	}
	if weights := t.samples.column(3, true); t.processed(meta) && weighed(weights, nsamples) {
		wtName := t.samples.weightType
		if wtName == "" {
			wtName = "samples" // the Firefox Profiler's default
		}
		if wt, ok := weightTypes[wtName]; ok {
			typ := g.valueType(wt.typ, wt.unit)
			for i := range nsamples {
				s, tm := sampleAt(i)
				if !(weights[i] > 0) {
					continue
				}
				at := int64(math.Round((meta.StartTime + tm) * 1e6))
				if err := g.b.add(resolve(s, 0), th, typ, int64(math.Round(weights[i]*wt.scale)), at, false); err != nil {
					return err
				}
			}
			return nil
		}
	}
	typ := g.valueType("time", "nanoseconds")
	s, tm := sampleAt(0)
	for i := 1; i < nsamples; i++ { // the last sample weighs nothing: no sample follows it
		next, nextTime := sampleAt(i)
		if w := nextTime - tm; w > 0 {
			at := int64(math.Round((meta.StartTime + tm) * 1e6))
			if err := g.b.add(resolve(s, 0), th, typ, int64(math.Round(w*1e6)), at, true); err != nil {
				return err
			}
		}
		s, tm = next, nextTime
	}
	return nil
}

// geckoThreadTables reads a Gecko-format thread's tables.
func geckoThreadTables(t *geckoThread) (nsamples int, sampleAt func(int) (int64, float64), prefixes, frames []int64, names []string) {
	stacks, times := t.samples.column(0, false), t.samples.column(1, false)
	nsamples = t.samples.nrows
	sampleAt = func(i int) (int64, float64) {
		s, ok := at(stacks, i)
		if !ok {
			s = -1
		}
		tm, _ := at(times, i)
		return int64(s), tm
	}
	pc, fc := t.stackTable.column(0, false), t.stackTable.column(1, false)
	for i := range t.stackTable.nrows {
		p, ok := at(pc, i)
		if !ok {
			p = -1
		}
		f, ok := at(fc, i)
		if !ok {
			f = -1
		}
		prefixes = append(prefixes, int64(p))
		frames = append(frames, int64(f))
	}
	lc := t.frameTable.column(0, false)
	for i := range t.frameTable.nrows {
		l, ok := at(lc, i)
		name := ""
		if ok && l >= 0 && int(l) < len(t.stringTable) {
			name = t.stringTable[int(l)]
		}
		names = append(names, name)
	}
	return nsamples, sampleAt, prefixes, frames, names
}

// processedThread reads a processed-format thread's columns: a frame is
// named by its function's name and file, as "name (file:line:col)".
func processedThread(t *geckoThread, shared *[]string) (nsamples int, sampleAt func(int) (int64, float64), prefixes, frames []int64, names []string) {
	strs := t.stringArray
	if strs == nil {
		strs = t.stringTable
	}
	if strs == nil && shared != nil {
		strs = *shared
	}
	str := func(i float64) string {
		if i >= 0 && int(i) < len(strs) {
			return strs[int(i)]
		}
		return ""
	}
	// null is 0 in the columns of numbers, none in those that may be null.
	zero := func(c []float64, i int) float64 {
		v, _ := at(c, i)
		return v
	}
	stacks, times, deltas := t.samples.column(0, true), t.samples.column(1, true), t.samples.column(2, true)
	nsamples = len(stacks)
	last, elapsed := -1, 0.0
	sampleAt = func(i int) (int64, float64) {
		// Samples are asked for in order, each once or twice.
		if i != last {
			switch {
			case i < len(times):
				elapsed = zero(times, i)
			case i < len(deltas):
				elapsed += zero(deltas, i)
			}
			last = i
		}
		stack := int64(-1)
		if s, ok := at(stacks, i); ok {
			stack = int64(s)
		}
		return stack, elapsed
	}
	pc, fc := t.stackTable.column(0, true), t.stackTable.column(1, true)
	for i := range fc {
		p := int64(-1)
		if v, ok := at(pc, i); ok {
			p = int64(v)
		}
		prefixes = append(prefixes, p)
		frames = append(frames, int64(zero(fc, i)))
	}
	fn, line, col := t.frameTable.column(1, true), t.frameTable.column(2, true), t.frameTable.column(3, true)
	fnName, fnFile := t.funcTable.column(0, true), t.funcTable.column(1, true)
	for i := range fn {
		k := int(zero(fn, i))
		if k < 0 || k >= len(fnName) {
			names = append(names, "")
			continue
		}
		name := str(zero(fnName, k))
		if file, ok := at(fnFile, k); ok {
			loc := str(file)
			if l, ok := at(line, i); ok {
				loc += ":" + strconv.FormatInt(int64(l), 10)
				if c, ok := at(col, i); ok {
					loc += ":" + strconv.FormatInt(int64(c), 10)
				}
			}
			name += " (" + loc + ")"
		}
		names = append(names, name)
	}
	return nsamples, sampleAt, prefixes, frames, names
}

// weighed says every one of n samples carries a weight (samples.weight,
// no null): the processed format's weighed samples.
func weighed(weights []float64, n int) bool {
	if len(weights) != n {
		return false
	}
	for _, w := range weights {
		if math.IsNaN(w) {
			return false
		}
	}
	return true
}
