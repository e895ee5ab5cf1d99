package flame

import "github.com/google/pprof/profile"

// Inlined says how a frame name was met in the profile's locations: never
// as an inlined call, always, or both (a function inlined at some call
// sites and called at others). flame.json's "inlined" holds these values.
const (
	NotInlined uint8 = iota
	Inlined
	SometimesInlined
)

// nameSources is, per frame name ID, where the function is (file and line)
// and whether it was inlined: what the flame page's tooltip shows beside
// the name. Files are interned, as many functions share one.
type nameSources struct {
	file    []int32 // per name ID: index into files, -1 none
	line    []int32
	inlined []uint8
	files   []string
	fileIdx map[string]int32
}

// note records, for name ID nm met as line ln of a location, its file:line
// (the function's start line, else the first line met) and whether this
// was an inlined call (every line of a location but its last).
func (s *nameSources) note(nm int32, ln *profile.Line, inlined bool) {
	for int(nm) >= len(s.file) {
		s.file = append(s.file, -1)
		s.line = append(s.line, 0)
		s.inlined = append(s.inlined, 0xff)
	}
	if s.file[nm] < 0 && ln != nil && ln.Function != nil && ln.Function.Filename != "" {
		s.file[nm] = s.intern(ln.Function.Filename)
		line := ln.Function.StartLine
		if line <= 0 {
			line = ln.Line
		}
		s.line[nm] = int32(line)
	}
	in := NotInlined
	if inlined {
		in = Inlined
	}
	switch s.inlined[nm] {
	case 0xff:
		s.inlined[nm] = in
	case in, SometimesInlined:
	default:
		s.inlined[nm] = SometimesInlined
	}
}

func (s *nameSources) intern(file string) int32 {
	if s.fileIdx == nil {
		s.fileIdx = make(map[string]int32)
	}
	if i, ok := s.fileIdx[file]; ok {
		return i
	}
	i := int32(len(s.files))
	s.files = append(s.files, file)
	s.fileIdx[file] = i
	return i
}

// of returns name nm's file ("" none), line and inlined flag.
func (s *nameSources) of(nm int32) (string, int32, uint8) {
	if s == nil || int(nm) >= len(s.file) {
		return "", 0, NotInlined
	}
	in := s.inlined[nm]
	if in == 0xff {
		in = NotInlined
	}
	if f := s.file[nm]; f >= 0 {
		return s.files[f], s.line[nm], in
	}
	return "", 0, in
}

// Source is a tree's per-name file, line and inlined flag, parallel to
// Tree.Names; File indexes Files, -1 when the name has no file.
type Source struct {
	File    []int32
	Line    []int32
	Inlined []uint8
	Files   []string
}

// add appends the entry of one output name.
func (s *Source) add(file string, line int32, inlined uint8, idx map[string]int32) {
	f := int32(-1)
	if file != "" {
		var ok bool
		if f, ok = idx[file]; !ok {
			f = int32(len(s.Files))
			s.Files = append(s.Files, file)
			idx[file] = f
		}
	}
	s.File = append(s.File, f)
	s.Line = append(s.Line, line)
	s.Inlined = append(s.Inlined, inlined)
}

// perName bounds the JSON of one name's entry: file index (or -1), line
// and flag, with their commas.
func (s *Source) perName() int {
	if len(s.File) == 0 {
		return 0
	}
	var line int32
	for _, l := range s.Line {
		line = max(line, l)
	}
	return max(2, digits(int64(len(s.Files)))) + digits(int64(line)) + 4
}

func digits(v int64) int {
	n := 1
	for ; v >= 10 || v <= -10; v /= 10 {
		n++
	}
	if v < 0 {
		n++
	}
	return n
}

// copyFrom gives name nm the entry of name gnm in g (diff.go's adopt).
func (s *nameSources) copyFrom(nm int32, g *nameSources, gnm int32) {
	file, line, in := g.of(gnm)
	for int(nm) >= len(s.file) {
		s.file = append(s.file, -1)
		s.line = append(s.line, 0)
		s.inlined = append(s.inlined, 0xff)
	}
	if file != "" {
		s.file[nm] = s.intern(file)
		s.line[nm] = line
	}
	s.inlined[nm] = in
}
