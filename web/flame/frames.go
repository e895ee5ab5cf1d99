// Package flame builds flamegraph call trees, their JSON and SVG encodings,
// and the top-functions table from a pprof profile.
package flame

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unsafe"

	"github.com/google/pprof/profile"
)

// RootName is the label of the tree's root; MergedName labels a node that
// stands for sibling frames too narrow to draw (the name is reserved).
const (
	RootName   = "root"
	MergedName = "…"
)

// frames labels every location of a profile once, so that walking samples
// costs slice indexing rather than string work. A location expands to one
// frame per Line (inlined calls are separate frames), outermost first.
type frames struct {
	names       []string // label per name ID; 0 is RootName
	nameMapping []int32  // per name ID: index into mappings, -1 none
	mappings    []string
	byName      map[string]int32

	// The frames of the location with index i are flat[off[i]:off[i+1]].
	flat []int32
	off  []int32
	// one[i] is the frame of the location with index i when it has one
	// frame (most do), else -1: expanding a stack then reads one array
	// per location instead of off and flat.
	one []int32
	// locIndex maps a location to its index: byID for small dense IDs,
	// byPtr otherwise.
	byID  []int32
	byPtr map[*profile.Location]int32
	// The first inArray locations of p.Location lie in one array from
	// address base, in order (what web/ingest's decoder makes): their
	// index is their address's offset, without loading the Location,
	// which cost a cache miss per frame of every stack.
	base    uintptr
	inArray int
	work    *work // checked by long loops (budget.go)
	src     *nameSources
}

func newFrames(p *profile.Profile) *frames {
	f := &frames{
		names:       []string{RootName},
		nameMapping: []int32{-1},
		byName:      make(map[string]int32, nameCount(p)),
		src:         &nameSources{},
		off:         make([]int32, 0, len(p.Location)+1),
		flat:        make([]int32, 0, len(p.Location)+len(p.Location)/4),
		one:         make([]int32, len(p.Location)),
	}
	f.byName[RootName] = 0
	mappingIndex := make(map[*profile.Mapping]int32)
	mappingFile := make(map[string]int32)
	mapIdx := func(m *profile.Mapping) int32 {
		if m == nil {
			return -1
		}
		if i, ok := mappingIndex[m]; ok {
			return i
		}
		file := m.File
		if file == "" {
			file = "[unknown]"
		}
		i, ok := mappingFile[file]
		if !ok {
			i = int32(len(f.mappings))
			f.mappings = append(f.mappings, file)
			mappingFile[file] = i
		}
		mappingIndex[m] = i
		return i
	}
	var maxID uint64
	for _, l := range p.Location {
		maxID = max(maxID, l.ID)
	}
	if maxID <= uint64(4*len(p.Location)+1024) {
		f.byID = make([]int32, maxID+1)
		for i := range f.byID {
			f.byID[i] = -1
		}
	} else {
		f.byPtr = make(map[*profile.Location]int32, len(p.Location))
	}
	if len(p.Location) > 0 {
		f.base = uintptr(unsafe.Pointer(p.Location[0]))
		for f.inArray < len(p.Location) && uintptr(unsafe.Pointer(p.Location[f.inArray])) == f.base+uintptr(f.inArray)*locationSize {
			f.inArray++
		}
	}
	names := newFunctionNames(p.Function)
	f.off = append(f.off, 0)
	for i, l := range p.Location {
		if f.byID != nil {
			f.byID[l.ID] = int32(i)
		} else {
			f.byPtr[l] = int32(i)
		}
		mi := mapIdx(l.Mapping)
		if n := len(l.Line); n > 0 {
			// Line[0] is the innermost (inlined) call; emit outermost first.
			for j := n - 1; j >= 0; j-- {
				nm := names.frame(f, l, &l.Line[j], mi)
				f.src.note(nm, &l.Line[j], j < n-1)
				f.flat = append(f.flat, nm)
			}
		} else {
			nm := f.intern(addrName(l), mi)
			f.src.note(nm, nil, false)
			f.flat = append(f.flat, nm)
		}
		f.off = append(f.off, int32(len(f.flat)))
		f.one[i] = -1
		if lo, hi := f.off[i], f.off[i+1]; hi == lo+1 {
			f.one[i] = f.flat[lo]
		}
	}
	return f
}

// functionNames is the name ID of each function of a profile, interned
// once per function rather than once per location line: a profile of 8
// locations a function hashed and compared its names 8 times each (the
// 2M-sample "locs" shape: 340 ms of newFrames' 450). The functions that
// lie in one array from base, in order (what web/ingest's decoder makes),
// are found by their address's offset, without a map or loading the
// Function; others are interned by name as before.
type functionNames struct {
	base    uintptr
	inArray int
	id      []int32 // per function in the array: its name ID, -1 not yet
}

func newFunctionNames(fns []*profile.Function) *functionNames {
	n := &functionNames{}
	if len(fns) > 0 {
		n.base = uintptr(unsafe.Pointer(fns[0]))
		for n.inArray < len(fns) && uintptr(unsafe.Pointer(fns[n.inArray])) == n.base+uintptr(n.inArray)*functionSize {
			n.inArray++
		}
	}
	n.id = make([]int32, n.inArray)
	for i := range n.id {
		n.id[i] = -1
	}
	return n
}

// functionSize is the size of a profile.Function, the stride of an array
// of them.
const functionSize = unsafe.Sizeof(profile.Function{})

// frame is the name ID of line ln of location l (lineName's, interned in
// f with mapping mi when new).
func (n *functionNames) frame(f *frames, l *profile.Location, ln *profile.Line, mi int32) int32 {
	k := -1
	if d := uintptr(unsafe.Pointer(ln.Function)) - n.base; ln.Function != nil && d < uintptr(n.inArray)*functionSize && d%functionSize == 0 {
		if k = int(d / functionSize); n.id[k] >= 0 {
			return n.id[k]
		}
	}
	nm := f.intern(lineName(l, ln), mi)
	if k >= 0 && (ln.Function.Name != "" || ln.Function.SystemName != "") {
		n.id[k] = nm // named by its function, not by l's address
	}
	return nm
}

// nameCount bounds the distinct frame names of p: one per function, and
// one per location without lines (named by its address). Sizing the name
// map to it up front spares growing it location by location.
func nameCount(p *profile.Profile) int {
	n := len(p.Function) + 1
	for _, l := range p.Location {
		if len(l.Line) == 0 {
			n++
		}
	}
	return n
}

// withWork is f checking w: a copy, for another goroutine or request.
func (f *frames) withWork(w *work) *frames {
	c := *f
	c.work = w
	return &c
}

func (f *frames) intern(name string, mapping int32) int32 {
	if name == RootName || name == MergedName || strings.HasPrefix(name, MergedName+"<") {
		// Keep reserved labels and zoom path elements unambiguous.
		name += " "
	}
	if i, ok := f.byName[name]; ok {
		return i
	}
	i := int32(len(f.names))
	f.names = append(f.names, name)
	f.nameMapping = append(f.nameMapping, mapping)
	f.byName[name] = i
	return i
}

// locationSize is the size of a profile.Location, the stride of an array
// of them.
const locationSize = unsafe.Sizeof(profile.Location{})

// loc returns the frames of l, outermost first.
func (f *frames) loc(l *profile.Location) []int32 {
	i := f.index(l)
	if i < 0 {
		return nil // not in p.Location: an invalid profile
	}
	return f.flat[f.off[i]:f.off[i+1]]
}

// appendLoc appends the frames of l, outermost first, to dst.
func (f *frames) appendLoc(dst []int32, l *profile.Location) []int32 {
	i := f.index(l)
	if i < 0 {
		return dst
	}
	return f.appendFrames(dst, i)
}

// appendFrames appends the frames of location i, outermost first, to dst:
// most locations have one, and an inlined call's few are copied one by
// one, where append's memmove call per location was 15% of the server's
// CPU on a profile of four inlined frames a location.
func (f *frames) appendFrames(dst []int32, i int32) []int32 {
	if nm := f.one[i]; nm >= 0 {
		return append(dst, nm)
	}
	for _, nm := range f.flat[f.off[i]:f.off[i+1]] {
		dst = append(dst, nm)
	}
	return dst
}

// index is l's index in p.Location, -1 when it is not there.
func (f *frames) index(l *profile.Location) int32 {
	if i, ok := f.arrayIndex(l); ok {
		return i
	}
	return f.mappedIndex(l)
}

// mappedIndex is index for a location outside the decoder's array: by ID
// or by pointer.
func (f *frames) mappedIndex(l *profile.Location) int32 {
	var i int32 = -1
	if f.byID != nil {
		if l.ID < uint64(len(f.byID)) {
			i = f.byID[l.ID]
		}
	} else if j, ok := f.byPtr[l]; ok {
		i = j
	}
	return i
}

// arrayIndex is l's index when it lies in the array of p.Location's first
// inArray locations: its address's offset, without loading the Location.
// Small enough to be inlined where index, with its map, is not.
func (f *frames) arrayIndex(l *profile.Location) (int32, bool) {
	if d := uintptr(unsafe.Pointer(l)) - f.base; d < uintptr(f.inArray)*locationSize && d%locationSize == 0 {
		return int32(d / locationSize), true
	}
	return 0, false
}

func lineName(l *profile.Location, ln *profile.Line) string {
	if fn := ln.Function; fn != nil {
		if fn.Name != "" {
			return fn.Name
		}
		if fn.SystemName != "" {
			return fn.SystemName
		}
	}
	return addrName(l)
}

// FrameName is the label the flame graph gives a frame: line i of location
// l (its function's name, else its address as addrName has it), or l's
// address when i is out of l.Line (a location without lines). Exporters
// (web/speedscope) name frames so, so that their stacks are the flame
// graph's.
func FrameName(l *profile.Location, i int) string {
	if i < 0 || i >= len(l.Line) {
		return addrName(l)
	}
	return lineName(l, &l.Line[i])
}

// addrName labels an unsymbolized location as basename(mapping)+0xOFFSET,
// where OFFSET is the address's offset in the object file (as addr2line
// wants it), or the bare address when the location has no mapping.
func addrName(l *profile.Location) string {
	m := l.Mapping
	if m == nil || m.File == "" {
		return "0x" + strconv.FormatUint(l.Address, 16)
	}
	off := l.Address
	if l.Address >= m.Start && l.Address < m.Limit {
		off = l.Address - m.Start + m.Offset
	}
	return path.Base(m.File) + "+0x" + strconv.FormatUint(off, 16)
}

// SampleIndex resolves pprof's si parameter: a sample type name (e.g.
// "cpu", "alloc_space") or its index. Empty means the profile's default
// sample type, else the last one, as in pprof.
func SampleIndex(p *profile.Profile, si string) (int, error) {
	if len(p.SampleType) == 0 {
		return 0, fmt.Errorf("the profile has no sample types")
	}
	if si == "" {
		if p.DefaultSampleType != "" {
			for i, st := range p.SampleType {
				if st.Type == p.DefaultSampleType {
					return i, nil
				}
			}
		}
		return len(p.SampleType) - 1, nil
	}
	for i, st := range p.SampleType {
		if st.Type == si {
			return i, nil
		}
	}
	if n, err := strconv.Atoi(si); err == nil && n >= 0 && n < len(p.SampleType) {
		return n, nil
	}
	names := make([]string, len(p.SampleType))
	for i, st := range p.SampleType {
		names[i] = st.Type
	}
	return 0, fmt.Errorf("unknown sample type %q; this profile has %q", si, names)
}
