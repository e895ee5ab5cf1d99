package elfsym

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"path"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// dwarfLiner answers lookups from DWARF. At open it reads only the compile
// unit headers and their address ranges; a unit's line table and function
// tree are decoded the first time an address falls inside it.
type dwarfLiner struct {
	f      *File
	d      *dwarf.Data
	raw    map[string][]byte // .debug_line, .debug_line_str, .debug_str
	units  []*unit
	ranges []unitRange // sorted by lo

	namesMu sync.Mutex
	names   map[dwarf.Offset]fnName // DIEs outside the unit being read
}

type unitRange struct {
	lo, hi uint64
	u      *unit
}

type unit struct {
	entry *dwarf.Entry
	end   dwarf.Offset // where the next unit starts
	unitLoad
}

// unitLoad is a compile unit's decoded data, made once, by the first
// lookup that needs it (both liners' units hold one); a unit that failed
// to decode keeps its error and is not decoded again.
type unitLoad struct {
	mu   sync.Mutex
	data atomic.Pointer[unitData]
	err  error
}

// get returns the unit's data, decoding it with decode the first time. A
// panic in decode becomes the unit's error, naming path; wrap, when not
// nil, adds to any error what the caller knows of the unit.
func (u *unitLoad) get(path string, decode func() (*unitData, error), wrap func(error) error) (*unitData, error) {
	if ud := u.data.Load(); ud != nil {
		return ud, nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if ud := u.data.Load(); ud != nil {
		return ud, nil
	}
	if u.err != nil {
		return nil, u.err
	}
	var ud *unitData
	func() {
		defer recoverInto(&u.err, path)
		ud, u.err = decode()
	}()
	if u.err != nil {
		if wrap != nil {
			u.err = wrap(u.err)
		}
		return nil, u.err
	}
	u.data.Store(ud)
	return ud, nil
}

// unitData is one compile unit decoded for lookups: a sorted line table and
// a tree of functions and inlined calls, each level sorted by address.
type unitData struct {
	rows  []lineRow // sequences in address order, each ending with an end row
	files []string
	nodes []node // nodes[0] is the unit's root; its kids are the functions
}

type lineRow struct {
	addr uint64
	file uint32 // low 24 bits: file index; high 8: discriminator; endRow ends a sequence
	line uint32
}

const endRow = ^uint32(0)

// node is a function (out of line) or one inlined call of a function.
type node struct {
	name      string
	startLine int32
	declFile  int32 // index into the unit's files, -1 if unknown
	callFile  int32 // for inlined calls: where the call is, in the caller
	callLine  int32
	callDisc  int32      // DW_AT_GNU_discriminator of the call
	kids      []kidRange // sorted by lo
}

type kidRange struct {
	lo, hi uint64
	node   int32
	// For a function's own ranges (the root's kids), set by index: the rows
	// of the line table that can hold its addresses, and the symbol that
	// covers the whole range (-1 if none), so that a lookup touches little.
	rowLo, rowHi, sym int32
}

type fnName struct {
	name      string // linkage name, else plain name
	linkage   bool
	startLine int32
	declFile  int32        // in the unit being decoded; -1 unknown or another unit's
	origin    dwarf.Offset // abstract_origin or specification, 0 if none
}

func newDWARFLiner(f *File) (*dwarfLiner, error) {
	var d *dwarf.Data
	var raw map[string][]byte
	var err error
	if f.kind == elf.ET_REL {
		// Relocatable objects (kernel modules, .o files): debug/elf applies
		// the relocations their DWARF needs. The raw file tables would be
		// unrelocated, so file names come from debug/dwarf.
		d, err = f.elf.DWARF()
	} else {
		d, raw, err = loadDWARF(f)
	}
	if err != nil {
		return nil, err
	}
	l := &dwarfLiner{f: f, d: d, raw: raw, names: map[dwarf.Offset]fnName{}}
	r := d.Reader()
	prev := dwarf.Offset(0)
	nulls := 0
	for first := true; ; first = false {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: reading compile units: %w", f.path, err)
		}
		if e == nil {
			break
		}
		// Corrupt DWARF can make the reader go round in circles.
		if !first && e.Tag != 0 && e.Offset <= prev {
			return nil, fmt.Errorf("%s: corrupt .debug_info: entries do not advance at offset %#x", f.path, e.Offset)
		}
		if e.Tag != 0 {
			prev, nulls = e.Offset, 0
		} else if nulls++; nulls > 1024 {
			// debug/dwarf reads an unterminated LEB128 as a null entry
			// without moving on: give up rather than loop forever.
			return nil, fmt.Errorf("%s: corrupt .debug_info after offset %#x", f.path, prev)
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			u := &unit{entry: e}
			l.units = append(l.units, u)
			rs, err := d.Ranges(e)
			if err == nil {
				for _, rg := range rs {
					if rg[1] > rg[0] && (rg[0] != 0 || f.kind == elf.ET_REL) {
						l.ranges = append(l.ranges, unitRange{rg[0], rg[1], u})
					}
				}
			}
		}
		r.SkipChildren()
	}
	for i, u := range l.units {
		u.end = ^dwarf.Offset(0)
		if i+1 < len(l.units) {
			u.end = l.units[i+1].entry.Offset
		}
	}
	sort.Slice(l.ranges, func(i, j int) bool { return l.ranges[i].lo < l.ranges[j].lo })
	f.size.Add(int64(len(l.units))*300 + int64(len(l.ranges))*24)
	return l, nil
}

// lookup appends the frames at pc, innermost first. A frame with an empty
// Name means the line table knows the address but no function DIE does.
func (l *dwarfLiner) lookup(pc uint64, frames []Frame) ([]Frame, bool, error) {
	u := l.unitFor(pc)
	if u == nil {
		return frames, false, nil
	}
	ud, err := l.load(u)
	if err != nil {
		return frames, false, err
	}
	f, named := ud.frames(pc, frames, l.f.symNameTable())
	return f, named, nil
}

// frames appends the frames at pc, innermost first. A frame with an empty
// Name means the line table knows the address but no function DIE does.
// With syms (the symbol table, in llvm-symbolizer's naming), the outermost
// frame is named by the symbol covering the function's range, and named
// reports that it was.
func (ud *unitData) frames(pc uint64, frames []Frame, syms []sym) (_ []Frame, named bool) {
	rows := ud.rows
	ki := findKidIndex(ud.nodes[0].kids, pc)
	var top *kidRange
	if ki >= 0 {
		top = &ud.nodes[0].kids[ki]
		if top.rowHi > top.rowLo {
			rows = rows[top.rowLo:top.rowHi]
		}
	}
	file, line, disc := ud.lineIn(rows, pc)
	if top == nil {
		if file == "" && line == 0 {
			return frames, false
		}
		return append(frames, Frame{File: file, Line: line, Discriminator: disc}), false
	}
	// Walk down the function tree to the innermost inlined call.
	var path [32]int32
	path[0] = top.node
	depth := 1
	n := top.node
	for {
		k := findKid(ud.nodes[n].kids, pc)
		if k < 0 {
			break
		}
		n = k
		if depth < len(path) {
			path[depth] = n
			depth++
		}
	}
	for i := depth - 1; i >= 0; i-- {
		nd := &ud.nodes[path[i]]
		frames = append(frames, Frame{Name: nd.name, File: file, Line: line, StartLine: int(nd.startLine), FuncFile: ud.fileName(nd.declFile), Discriminator: disc})
		file, line, disc = ud.fileName(nd.callFile), int(nd.callLine), int(nd.callDisc)
	}
	if syms != nil && top.sym >= 0 && int(top.sym) < len(syms) {
		frames[len(frames)-1].Name = syms[top.sym].name
		named = true
	}
	return frames, named
}

// index fills in the row span and covering symbol of every function range.
// syms is the symbol table (sorted, one per address) or nil.
func (ud *unitData) index(syms []sym) {
	ub := func(x uint64) int {
		lo, hi := 0, len(ud.rows)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if ud.rows[m].addr <= x {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo
	}
	for i := range ud.nodes[0].kids {
		k := &ud.nodes[0].kids[i]
		k.rowLo, k.rowHi, k.sym = int32(max(ub(k.lo)-1, 0)), int32(ub(k.hi-1)), -1
		if syms == nil {
			continue
		}
		j := sort.Search(len(syms), func(j int) bool { return syms[j].addr > k.lo }) - 1
		if j >= 0 && (syms[j].size > 0 && k.hi <= syms[j].addr+syms[j].size || syms[j].size == 0 && j+1 < len(syms) && k.hi <= syms[j+1].addr) {
			k.sym = int32(j)
		}
	}
}

// findKid returns the node of the range holding pc, or -1.
func findKid(kids []kidRange, pc uint64) int32 {
	if i := findKidIndex(kids, pc); i >= 0 {
		return kids[i].node
	}
	return -1
}

// findKidIndex returns the index of the range holding pc, or -1.
func findKidIndex(kids []kidRange, pc uint64) int {
	lo, hi := 0, len(kids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if kids[m].lo <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	// Ranges at one level rarely overlap; look back a little in case they do.
	for j := i; j >= 0 && j > i-4; j-- {
		if pc < kids[j].hi {
			return j
		}
	}
	return -1
}

func (l *dwarfLiner) unitFor(pc uint64) *unit {
	rs := l.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].lo > pc }) - 1
	for j := i; j >= 0 && j > i-4; j-- {
		if pc < rs[j].hi {
			return rs[j].u
		}
	}
	return nil
}

func (l *dwarfLiner) unit(pc uint64) (CompileUnit, bool, error) {
	u := l.unitFor(pc)
	if u == nil {
		return CompileUnit{}, false, nil
	}
	ud, err := l.load(u)
	if err != nil {
		return CompileUnit{}, false, err
	}
	dir, _ := u.entry.Val(dwarf.AttrCompDir).(string)
	return CompileUnit{Dir: dir, Files: ud.files}, true, nil
}

func (ud *unitData) fileName(i int32) string {
	if i < 0 || int(i) >= len(ud.files) {
		return ""
	}
	return ud.files[i]
}

// lineIn finds the line-table row for pc in rows, a span of the unit's rows
// that holds pc's row: the last row at or below it, unless that row ends
// its sequence.
func (ud *unitData) lineIn(rows []lineRow, pc uint64) (string, int, int) {
	lo, hi := 0, len(rows)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rows[m].addr <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	if i < 0 || rows[i].file == endRow {
		return "", 0, 0
	}
	return ud.fileName(int32(rows[i].file & 0xffffff)), int(rows[i].line), int(rows[i].file >> 24)
}

func (l *dwarfLiner) load(u *unit) (*unitData, error) {
	return u.get(l.f.path, func() (*unitData, error) { return l.decode(u) }, nil)
}

// decode reads one unit's line table and function tree.
func (l *dwarfLiner) decode(u *unit) (*unitData, error) {
	ud := &unitData{}
	var size int64
	lr, err := l.d.LineReader(u.entry)
	if err != nil {
		return nil, fmt.Errorf("%s: line table: %w", l.f.path, err)
	}
	if lr != nil {
		files := lr.Files()
		idx := make(map[*dwarf.LineFile]uint32, len(files))
		ud.files = make([]string, len(files))
		compDir, _ := u.entry.Val(dwarf.AttrCompDir).(string)
		var raw []string
		if off, ok := u.entry.Val(dwarf.AttrStmtList).(int64); ok {
			raw, _ = lineFiles(l.raw["line"], l.raw["line_str"], l.raw["str"], off, compDir, l.f.elf.ByteOrder)
		}
		for i, lf := range files {
			if lf == nil {
				continue
			}
			idx[lf] = uint32(i)
			switch {
			case i < len(raw) && raw[i] != "":
				ud.files[i] = raw[i]
			case compDir != "" && !path.IsAbs(lf.Name):
				// Relative names are relative to the compilation directory.
				ud.files[i] = path.Join(compDir, lf.Name)
			default:
				ud.files[i] = lf.Name
			}
		}
		type seq struct{ start, end int }
		var seqs []seq
		var rows []lineRow
		start := 0
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				break
			}
			if le.EndSequence {
				rows = append(rows, lineRow{addr: le.Address, file: endRow})
				// Sequences at address 0 belong to code the linker dropped.
				if rows[start].addr != 0 || l.f.kind == elf.ET_REL {
					seqs = append(seqs, seq{start, len(rows)})
				}
				start = len(rows)
				continue
			}
			fi := idx[le.File] & 0xffffff
			if le.Discriminator > 0 && le.Discriminator < 256 {
				fi |= uint32(le.Discriminator) << 24
			}
			rows = append(rows, lineRow{addr: le.Address, file: fi, line: uint32(le.Line)})
		}
		sort.SliceStable(seqs, func(i, j int) bool { return rows[seqs[i].start].addr < rows[seqs[j].start].addr })
		sorted := true
		for i := 1; i < len(seqs); i++ {
			if seqs[i].start != seqs[i-1].end {
				sorted = false
			}
		}
		if sorted && len(seqs) > 0 && seqs[0].start == 0 && seqs[len(seqs)-1].end == len(rows) {
			ud.rows = rows
		} else {
			ud.rows = make([]lineRow, 0, len(rows))
			for _, s := range seqs {
				ud.rows = append(ud.rows, rows[s.start:s.end]...)
			}
		}
		size += int64(cap(ud.rows))*16 + int64(len(files))*64
	}

	// The function tree.
	ud.nodes = append(ud.nodes, node{declFile: -1})
	pending := map[int32]dwarf.Offset{} // node -> DIE naming it
	local := map[dwarf.Offset]fnName{}
	r := l.d.Reader()
	r.Seek(u.entry.Offset)
	if _, err := r.Next(); err != nil {
		return nil, err
	}
	stack := []int32{-1} // the node inlined calls attach to; -1 outside functions
	prev := u.entry.Offset
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: reading DIEs: %w", l.f.path, err)
		}
		if e == nil {
			break
		}
		if e.Tag != 0 {
			if e.Offset <= prev {
				return nil, fmt.Errorf("%s: corrupt .debug_info: entries do not advance at offset %#x", l.f.path, e.Offset)
			}
			prev = e.Offset
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := stack[len(stack)-1]
		switch e.Tag {
		case dwarf.TagSubprogram:
			local[e.Offset] = nameOf(e)
			n := int32(-1)
			if hasPC(e) {
				if rs, err := l.d.Ranges(e); err == nil && len(rs) > 0 {
					n = int32(len(ud.nodes))
					ud.nodes = append(ud.nodes, node{declFile: -1})
					pending[n] = e.Offset
					for _, rg := range rs {
						if rg[1] > rg[0] {
							ud.nodes[0].kids = append(ud.nodes[0].kids, kidRange{lo: rg[0], hi: rg[1], node: n, sym: -1})
						}
					}
				}
			}
			if e.Children {
				if n >= 0 {
					stack = append(stack, n)
				} else {
					r.SkipChildren()
				}
			}
		case dwarf.TagInlinedSubroutine:
			n := int32(-1)
			if parent >= 0 {
				if rs, err := l.d.Ranges(e); err == nil && len(rs) > 0 {
					n = int32(len(ud.nodes))
					nd := node{callFile: -1, declFile: -1}
					if v, ok := e.Val(dwarf.AttrCallFile).(int64); ok {
						nd.callFile = int32(v)
					}
					if v, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
						nd.callLine = int32(v)
					}
					if v, ok := e.Val(attrGNUDiscriminator).(int64); ok {
						nd.callDisc = int32(v)
					}
					ud.nodes = append(ud.nodes, nd)
					if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
						pending[n] = o
					}
					for _, rg := range rs {
						if rg[1] > rg[0] {
							ud.nodes[parent].kids = append(ud.nodes[parent].kids, kidRange{lo: rg[0], hi: rg[1], node: n, sym: -1})
						}
					}
				}
			}
			if e.Children {
				if n >= 0 {
					stack = append(stack, n)
				} else {
					r.SkipChildren()
				}
			}
		case dwarf.TagLexDwarfBlock:
			if e.Children {
				if parent >= 0 {
					stack = append(stack, parent)
				} else {
					r.SkipChildren()
				}
			}
		case dwarf.TagNamespace, dwarf.TagModule:
			if e.Children {
				stack = append(stack, -1)
			}
		default:
			if e.Children {
				r.SkipChildren()
			}
		}
	}
	for i := range ud.nodes {
		k := ud.nodes[i].kids
		slices.SortFunc(k, func(a, b kidRange) int {
			if a.lo < b.lo {
				return -1
			}
			if a.lo > b.lo {
				return 1
			}
			return 0
		})
		size += int64(cap(k))*24 + 64
	}
	for n, off := range pending {
		nm := l.resolve(u, off, local, 0)
		ud.nodes[n].name = nm.name
		ud.nodes[n].startLine = nm.startLine
		ud.nodes[n].declFile = nm.declFile
	}
	ud.index(l.f.symNameTable())
	l.f.size.Add(size)
	return ud, nil
}

// attrGNUDiscriminator is GCC's DW_AT_GNU_discriminator on inlined calls.
const attrGNUDiscriminator = dwarf.Attr(0x2136)

func hasPC(e *dwarf.Entry) bool {
	for _, f := range e.Field {
		if f.Attr == dwarf.AttrLowpc || f.Attr == dwarf.AttrRanges {
			return true
		}
	}
	return false
}

func nameOf(e *dwarf.Entry) fnName {
	nm := fnName{declFile: -1}
	for _, f := range e.Field {
		switch f.Attr {
		case dwarf.AttrLinkageName:
			if s, ok := f.Val.(string); ok {
				nm.name, nm.linkage = s, true
			}
		case dwarf.AttrName:
			if s, ok := f.Val.(string); ok && nm.name == "" {
				nm.name = s
			}
		case dwarf.AttrDeclLine:
			if v, ok := f.Val.(int64); ok {
				nm.startLine = int32(v)
			}
		case dwarf.AttrDeclFile:
			if v, ok := f.Val.(int64); ok {
				nm.declFile = int32(v)
			}
		case dwarf.AttrAbstractOrigin, dwarf.AttrSpecification:
			if o, ok := f.Val.(dwarf.Offset); ok && nm.origin == 0 {
				nm.origin = o
			}
		}
	}
	// MIPS_linkage_name (0x2007) from older compilers.
	if v, ok := e.Val(dwarf.Attr(0x2007)).(string); ok {
		nm.name, nm.linkage = v, true
	}
	return nm
}

// resolve follows abstract_origin and specification links from the DIE at off
// to the first name, and the first declaration line.
func (l *dwarfLiner) resolve(u *unit, off dwarf.Offset, local map[dwarf.Offset]fnName, depth int) fnName {
	if depth > 8 {
		return fnName{}
	}
	nm, ok := local[off]
	if !ok {
		l.namesMu.Lock()
		nm, ok = l.names[off]
		l.namesMu.Unlock()
		if !ok {
			r := l.d.Reader()
			r.Seek(off)
			if e, err := r.Next(); err == nil && e != nil {
				nm = nameOf(e)
			}
			l.namesMu.Lock()
			l.names[off] = nm
			l.namesMu.Unlock()
		}
		if off < u.entry.Offset || off >= u.end {
			nm.declFile = -1 // an index into another unit's files
		}
	}
	if nm.origin != 0 && (nm.name == "" || nm.startLine == 0) {
		up := l.resolve(u, nm.origin, local, depth+1)
		if nm.name == "" {
			nm.name, nm.linkage = up.name, up.linkage
		}
		if nm.startLine == 0 {
			nm.startLine, nm.declFile = up.startLine, up.declFile
		}
	}
	return nm
}

// prefetch decodes, using every CPU, the units that hold the given addresses,
// so that a batch of lookups that follows finds them ready.
func (l *dwarfLiner) prefetch(addrs []uint64) {
	seen := map[*unit]bool{}
	var todo []*unit
	for _, a := range addrs {
		if u := l.unitFor(a); u != nil && !seen[u] && u.data.Load() == nil {
			seen[u] = true
			todo = append(todo, u)
		}
	}
	if len(todo) < 2 {
		return
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				l.load(todo[i])
			}
		}()
	}
	wg.Wait()
}
