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
// as it does every older processed profile. One thread holds the
// profile's samples of one sample type, in the profile's order; a
// sample's time is the sum of the weights before it (in ms for a time
// type), so that the time between two samples is the first one's weight,
// as readers that weigh a sample by that gap (speedscope, viewer's own)
// see it too.
package firefoxprofile

import (
	"errors"
	"io"
	"path"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/pprof/profile"

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
	// Name is the profile's name (the thread's and the product's).
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

// lib is a mapping the Firefox Profiler can ask the symbol server about.
type lib struct {
	m        *profile.Mapping
	resource int
}

// Write writes p to w. Nothing is written when it returns ErrNoSamples.
func Write(w io.Writer, p *profile.Profile, opt Options) error {
	si := opt.SampleIndex
	var samples []*profile.Sample
	for _, s := range p.Sample {
		if si < len(s.Value) && s.Value[si] > 0 {
			samples = append(samples, s)
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

	// Tables, built as the samples' stacks are walked.
	strs := []string{}
	strIdx := map[string]int{}
	str := func(s string) int {
		i, ok := strIdx[s]
		if !ok {
			i = len(strs)
			strs = append(strs, s)
			strIdx[s] = i
		}
		return i
	}
	var libs []*lib
	libOf := map[*profile.Mapping]*lib{}
	var resName, resLib []int
	var funcName, funcResource []int
	funcIdx := map[[2]int]int{} // (name, resource) → func
	var frameAddr, frameFunc []int64
	var frameLine []int64 // 0: none
	frameIdx := map[frameKey]int{}
	var stackPrefix, stackFrame []int
	stackIdx := map[[2]int]int{} // (prefix, frame) → stack
	unsymbolized := false

	frame := func(l *profile.Location, j int) int {
		k := frameKey{l, j}
		if f, ok := frameIdx[k]; ok {
			return f
		}
		addr, res := int64(-1), -1
		if j < 0 && l.Mapping != nil && l.Mapping.BuildID != "" && opt.BreakpadID != nil &&
			l.Address >= l.Mapping.Start && l.Address < l.Mapping.Limit {
			m := l.Mapping
			lb := libOf[m]
			if lb == nil {
				lb = &lib{m: m, resource: len(resName)}
				resName = append(resName, str(path.Base(m.File)))
				resLib = append(resLib, len(libs))
				libs = append(libs, lb)
				libOf[m] = lb
			}
			addr, res = int64(l.Address-m.Start+m.Offset), lb.resource
			unsymbolized = true
		}
		name := str(flame.FrameName(l, j))
		fi, ok := funcIdx[[2]int{name, res}]
		if !ok {
			fi = len(funcName)
			funcName = append(funcName, name)
			funcResource = append(funcResource, res)
			funcIdx[[2]int{name, res}] = fi
		}
		var line int64
		if j >= 0 {
			line = l.Line[j].Line
		}
		f := len(frameFunc)
		frameAddr = append(frameAddr, addr)
		frameFunc = append(frameFunc, int64(fi))
		frameLine = append(frameLine, line)
		frameIdx[k] = f
		return f
	}
	sampleStack := make([]int, len(samples))
	for i, s := range samples {
		st := -1
		for li := len(s.Location) - 1; li >= 0; li-- {
			l := s.Location[li]
			for j := len(l.Line) - 1; j >= min(0, len(l.Line)-1); j-- {
				f := frame(l, j)
				k := [2]int{st, f}
				n, ok := stackIdx[k]
				if !ok {
					n = len(stackFrame)
					stackPrefix = append(stackPrefix, st)
					stackFrame = append(stackFrame, f)
					stackIdx[k] = n
				}
				st = n
			}
		}
		sampleStack[i] = st
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
	var total float64
	for _, smp := range samples {
		total += float64(smp.Value[si]) * scale
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
		s("symbolicated"), jsontext.Bool(!unsymbolized),
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
	for _, lb := range libs {
		base := path.Base(lb.m.File)
		tok(jsontext.BeginObject, s("name"), s(base), s("path"), s(lb.m.File),
			s("debugName"), s(base), s("debugPath"), s(lb.m.File),
			s("breakpadId"), s(opt.BreakpadID(lb.m.BuildID)), s("codeId"), s(lb.m.BuildID),
			s("arch"), jsontext.Null, jsontext.EndObject)
	}
	tok(jsontext.EndArray)

	tok(s("threads"), jsontext.BeginArray, jsontext.BeginObject,
		s("name"), s(opt.Name), s("processName"), s(opt.Name), s("processType"), s("default"),
		s("isMainThread"), jsontext.True,
		s("pid"), s("0"), s("tid"), jsontext.Int(0),
		s("processStartupTime"), num(0), s("processShutdownTime"), jsontext.Null,
		s("registerTime"), num(0), s("unregisterTime"), jsontext.Null,
		s("pausedRanges"), jsontext.BeginArray, jsontext.EndArray)

	// Samples, and a last one with no stack at the end of the last
	// sample's weight, so that the gap after each sample is its weight.
	n := len(samples) + 1
	tok(s("samples"), jsontext.BeginObject, s("length"), jsontext.Int(int64(n)), s("weightType"), s(weightType))
	ints("stack", append(sampleStack, -1))
	tok(s("time"), jsontext.BeginArray)
	at := 0.0
	for _, smp := range samples {
		tok(num(at))
		at += float64(smp.Value[si]) * scale
	}
	tok(num(total), jsontext.EndArray, s("weight"), jsontext.BeginArray)
	for _, smp := range samples {
		if weightType == "tracing-ms" {
			tok(num(float64(smp.Value[si]) * scale))
		} else {
			tok(jsontext.Int(smp.Value[si]))
		}
	}
	tok(jsontext.Int(0), jsontext.EndArray, jsontext.EndObject)

	tok(s("stackTable"), jsontext.BeginObject, s("length"), jsontext.Int(int64(len(stackFrame))))
	ints("prefix", stackPrefix)
	ints("frame", stackFrame)
	repeat("category", jsontext.Int(0), len(stackFrame))
	repeat("subcategory", jsontext.Int(0), len(stackFrame))
	tok(jsontext.EndObject)

	nf := len(frameFunc)
	tok(s("frameTable"), jsontext.BeginObject, s("length"), jsontext.Int(int64(nf)), s("address"), jsontext.BeginArray)
	for _, a := range frameAddr {
		tok(jsontext.Int(a))
	}
	tok(jsontext.EndArray)
	repeat("inlineDepth", jsontext.Int(0), nf)
	repeat("category", jsontext.Int(0), nf)
	repeat("subcategory", jsontext.Int(0), nf)
	tok(s("func"), jsontext.BeginArray)
	for _, f := range frameFunc {
		tok(jsontext.Int(f))
	}
	tok(jsontext.EndArray)
	repeat("nativeSymbol", jsontext.Null, nf)
	repeat("innerWindowID", jsontext.Int(0), nf)
	repeat("implementation", jsontext.Null, nf)
	tok(s("line"), jsontext.BeginArray)
	for _, l := range frameLine {
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

	// Functions carry no file name: a reader that sees "name (file:line)"
	// takes it for JavaScript (the Firefox Profiler's own naming), so
	// native frames are named alone; lines are on the frames.
	nfn := len(funcName)
	tok(s("funcTable"), jsontext.BeginObject, s("length"), jsontext.Int(int64(nfn)))
	ints("name", funcName)
	repeat("isJS", jsontext.False, nfn)
	repeat("relevantForJS", jsontext.False, nfn)
	tok(s("resource"), jsontext.BeginArray)
	for _, r := range funcResource {
		tok(jsontext.Int(int64(r)))
	}
	tok(jsontext.EndArray)
	repeat("fileName", jsontext.Null, nfn)
	repeat("lineNumber", jsontext.Null, nfn)
	repeat("columnNumber", jsontext.Null, nfn)
	tok(jsontext.EndObject)

	tok(s("resourceTable"), jsontext.BeginObject, s("length"), jsontext.Int(int64(len(resName))))
	ints("lib", resLib)
	ints("name", resName)
	repeat("host", jsontext.Null, len(resName))
	repeat("type", jsontext.Int(1), len(resName))
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
	for _, t := range strs {
		tok(s(t))
	}
	tok(jsontext.EndArray, jsontext.EndObject, jsontext.EndArray,
		s("pages"), jsontext.BeginArray, jsontext.EndArray,
		s("counters"), jsontext.BeginArray, jsontext.EndArray,
		jsontext.EndObject)
	return err
}
