package datatype

import (
	"cmp"
	"debug/dwarf"
	"slices"
	"sort"
)

// Sample is a profile sample's leaf address in one binary (an object
// address, as in the ELF file) with its weight (count, or period).
type Sample struct {
	PC     uint64
	Weight int64
	// Func is the profile's name for the sample's leaf function, if it has
	// one: it names the functions of samples whose binary has no debug
	// info (a Go binary built without DWARF still has its names).
	Func string
}

// DSO describes one binary that contributed samples, for the page's list of
// binaries: where its debug info came from, or why there is none.
type DSO struct {
	Name        string `json:"name"`
	BuildID     string `json:"buildId,omitempty"`
	DebugSource string `json:"debugSource,omitempty"` // e.g. "/usr/lib/debug/.build-id/…", "debuginfod https://…"
	Error       string `json:"error,omitempty"`       // why no attribution was possible
	Samples     int64  `json:"samples"`
}

// Profile is a data-type profile: like `perf report -s type,typeoff`, with
// each type's member layout like `perf annotate --data-type`.
type Profile struct {
	Total int64 `json:"total"`
	// Skid is the weight counted on the access before the sampled
	// instruction (Aggregator.Skid); 0 when skid correction is off.
	Skid    int64        `json:"skid"`
	Types   []TypeStat   `json:"types"`   // heaviest first; includes "(stack operation)" and "(unknown)"
	Unknown []ReasonStat `json:"unknown"` // why samples were not attributed, heaviest first
	DSOs    []DSO        `json:"dsos"`
}

// TypeStat is one data type's share of the samples.
type TypeStat struct {
	Name    string       `json:"name"`
	Size    int64        `json:"size"`
	DSO     string       `json:"dso"`
	Weight  int64        `json:"weight"`
	Members []MemberStat `json:"members,omitempty"` // the layout, with the weight on each accessed member
	Funcs   []FuncStat   `json:"funcs,omitempty"`   // functions whose code touched the type, heaviest first
}

// MemberStat is a layout row and the samples that accessed it. Weight
// counts accesses whose innermost member is this row; Total adds those of
// nested members, so a struct member's share includes its fields'.
type MemberStat struct {
	LayoutRow
	Weight int64 `json:"weight"`
	Total  int64 `json:"total"`
}

// FuncStat links a type and a function.
type FuncStat struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight"`
}

// ReasonStat is one reason samples were left unattributed.
type ReasonStat struct {
	Reason string `json:"reason"`
	Func   string `json:"func,omitempty"`
	Insn   string `json:"insn,omitempty"`
	PC     uint64 `json:"pc"`
	DSO    string `json:"dso"`
	Weight int64  `json:"weight"`
}

// Aggregator accumulates samples of several binaries into a Profile. Each
// distinct pc is attributed once.
type Aggregator struct {
	// KeepAccesses, set before Add, records each attributed address's
	// Access for Access (a types flame graph needs each sample's leaf).
	KeepAccesses bool
	accesses     map[string]map[uint64]Access
	// Skid, set before Add, counts a sample whose instruction touches no
	// memory on the access of the instruction before it in its basic block
	// (skid.go): the right reading of interrupt-based samples such as
	// cpu-clock's, which land on the instruction after the one that took
	// the time. Instructions that access memory keep their own access.
	Skid bool

	total   int64
	skid    int64
	types   map[typeKey]*typeAcc
	reasons map[string]*ReasonStat
	dsos    []DSO
	dsoIdx  map[string]int
}

type typeKey struct{ dso, name string }

type typeAcc struct {
	stat    TypeStat
	rows    []LayoutRow
	members map[string]int64 // member path → weight
	offsets map[string]int64 // member path → offset (for members not in the layout)
	sizes   map[string]int64
	funcs   map[string]int64
}

// NewAggregator returns an empty aggregator.
func NewAggregator() *Aggregator {
	return &Aggregator{types: map[typeKey]*typeAcc{}, reasons: map[string]*ReasonStat{}, dsoIdx: map[string]int{}}
}

// AddDSO records a binary (updating it if it was added before). Samples of
// binaries that cannot be attributed should still be added with Add and a
// nil Binary, so their share shows as unknown.
func (a *Aggregator) AddDSO(d DSO) {
	if i, ok := a.dsoIdx[d.Name]; ok {
		n := a.dsos[i].Samples
		a.dsos[i] = d
		a.dsos[i].Samples += n
		return
	}
	a.dsoIdx[d.Name] = len(a.dsos)
	a.dsos = append(a.dsos, d)
}

// Add attributes the samples of one binary. b may be nil when the binary's
// code or debug info is unavailable: the samples count as unknown with the
// DSO's Error as reason.
func (a *Aggregator) Add(dso string, b *Binary, samples []Sample) {
	why := ""
	if b == nil {
		if i, ok := a.dsoIdx[dso]; ok {
			why = a.dsos[i].Error
		}
		if why == "" {
			why = "no debug info for this binary"
		}
	}
	a.add(dso, b, why, samples)
}

// AddUnknown counts samples of dso that cannot be attributed, for the given
// reason (e.g. an address outside the binary's mapping).
func (a *Aggregator) AddUnknown(dso, reason string, samples []Sample) {
	a.add(dso, nil, reason, samples)
}

func (a *Aggregator) add(dso string, b *Binary, why string, samples []Sample) {
	if _, ok := a.dsoIdx[dso]; !ok {
		a.AddDSO(DSO{Name: dso})
	}
	d := &a.dsos[a.dsoIdx[dso]]
	if b == nil {
		acc := unknown("%s", why)
		// Per function the profile names (Sample.Func), in first-seen order.
		type fnAcc struct {
			w     int64
			minPC uint64
		}
		byFn := map[string]*fnAcc{}
		var fns []string
		for _, s := range samples {
			if s.Weight <= 0 {
				continue
			}
			f := byFn[s.Func]
			if f == nil {
				f = &fnAcc{minPC: s.PC}
				byFn[s.Func] = f
				fns = append(fns, s.Func)
			}
			f.w += s.Weight
			f.minPC = min(f.minPC, s.PC)
			d.Samples += s.Weight
			a.total += s.Weight
			if a.KeepAccesses {
				a.keep(dso, s.PC, acc)
			}
		}
		for _, fn := range fns {
			fa := acc
			fa.Func = fn
			a.addAccess(dso, nil, byFn[fn].minPC, fa, byFn[fn].w)
		}
		return
	}
	// Attribute each distinct pc once (the binary's memo answers repeats)
	// and fold equal accesses (same index in the binary's table) in a
	// dense slice before touching the per-type maps. No sort of the
	// samples: only the distinct accesses are ordered, by their lowest pc
	// (the example shown for reasons), as before.
	type group struct {
		pc uint64 // the lowest pc with this access: the example for reasons
		w  int64
	}
	var groups []group // by access id; w == 0: not seen
	var order []int32
	var total int64
	b.mu.Lock()
	b.trimMemo()
	fold := func(pc uint64, id int32, w int64) {
		if int(id) >= len(groups) {
			groups = append(groups, make([]group, int(id)+1-len(groups)+len(groups)/2)...)
		}
		g := &groups[id]
		if g.w == 0 {
			g.pc = pc
			order = append(order, id)
		} else if pc < g.pc {
			g.pc = pc
		}
		g.w += w
	}
	// Remembered addresses fold at once; the others are attributed
	// afterwards in address order, so that the samples of one function use
	// its caches while they are hot.
	var pending []Sample
	lastPC, lastID := uint64(0), int32(-1)
	for i, s := range samples {
		if s.Weight <= 0 {
			continue
		}
		total += s.Weight
		if s.PC != lastPC || lastID < 0 {
			id, ok := b.memo[s.PC]
			if !ok {
				if pending == nil {
					pending = make([]Sample, 0, len(samples)-i)
				}
				pending = append(pending, s)
				continue
			}
			if a.Skid {
				id = b.skidID(s.PC, id)
			}
			lastPC, lastID = s.PC, id
			if a.KeepAccesses {
				a.keep(dso, s.PC, b.distinct[id])
			}
		}
		fold(s.PC, lastID, s.Weight)
	}
	slices.SortFunc(pending, func(x, y Sample) int { return cmp.Compare(x.PC, y.PC) })
	b.ensureSamples(pending) // a lazy index reads the units they are in, at once
	// Room for the new accesses at once: each is large, and growing the
	// table by doubling copied it over and over.
	n := 0
	for i := range pending {
		if i == 0 || pending[i].PC != pending[i-1].PC {
			n++
		}
	}
	b.distinct = slices.Grow(b.distinct, n)
	for i, s := range pending {
		if i == 0 || s.PC != pending[i-1].PC {
			lastID = b.attributeNew(s.PC) // add found none of them in the memo
			if a.Skid {
				lastID = b.skidID(s.PC, lastID)
			}
			if a.KeepAccesses {
				a.keep(dso, s.PC, b.distinct[lastID])
			}
		}
		fold(s.PC, lastID, s.Weight)
	}
	slices.SortFunc(order, func(x, y int32) int { return cmp.Compare(groups[x].pc, groups[y].pc) })
	// Entries of b.distinct are never written after they are appended
	// (trimMemo starts a new slice), so this view stays valid unlocked.
	dist := b.distinct
	b.mu.Unlock()
	d.Samples += total
	a.total += total
	for _, id := range order {
		a.addAccess(dso, b, groups[id].pc, dist[id], groups[id].w)
	}
}

func (a *Aggregator) keep(dso string, pc uint64, acc Access) {
	if a.accesses == nil {
		a.accesses = map[string]map[uint64]Access{}
	}
	m := a.accesses[dso]
	if m == nil {
		m = map[uint64]Access{}
		a.accesses[dso] = m
	}
	m[pc] = acc
}

// Access returns what the instruction at pc of dso accesses, when
// KeepAccesses was set while it was added.
func (a *Aggregator) Access(dso string, pc uint64) (Access, bool) {
	acc, ok := a.accesses[dso][pc]
	return acc, ok
}

func (a *Aggregator) addAccess(dso string, b *Binary, pc uint64, acc Access, w int64) {
	k := typeKey{dso, acc.Type}
	t := a.types[k]
	if t == nil {
		t = &typeAcc{
			stat:    TypeStat{Name: acc.Type, Size: acc.TypeSize, DSO: dso},
			members: map[string]int64{}, offsets: map[string]int64{}, sizes: map[string]int64{},
			funcs: map[string]int64{},
		}
		if acc.typ != nil && b != nil {
			t.rows = b.layout(acc.typ)
		}
		a.types[k] = t
	}
	t.stat.Weight += w
	if acc.Skid {
		a.skid += w
	}
	if acc.Kind != KindUnknown && acc.Kind != KindStackOp {
		t.members[acc.Member] += w
		t.offsets[acc.Member] = acc.MemberOffset
		t.sizes[acc.Member] = acc.MemberSize
	}
	fn := acc.Func
	if fn == "" {
		fn = "[unknown function]"
	}
	t.funcs[fn] += w
	if acc.Kind == KindUnknown {
		r := a.reasons[acc.Reason]
		if r == nil {
			r = &ReasonStat{Reason: acc.Reason, Func: acc.Func, Insn: acc.Insn, PC: pc, DSO: dso}
			if b != nil && r.Insn == "" {
				r.Insn = b.insnText(pc)
			}
			a.reasons[acc.Reason] = r
		}
		r.Weight += w
	}
}

// layout returns the (cached) layout rows of a type.
func (b *Binary) layout(t dwarf.Type) []LayoutRow {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rows, ok := b.layouts[t]; ok {
		return rows
	}
	rows := layout(t)
	b.layouts[t] = rows
	return rows
}

// Profile returns the aggregate so far.
func (a *Aggregator) Profile() Profile {
	p := Profile{Total: a.total, Skid: a.skid, DSOs: append([]DSO(nil), a.dsos...)}
	for _, t := range a.types {
		ts := t.stat
		ts.Members = memberStats(t)
		for name, w := range t.funcs {
			ts.Funcs = append(ts.Funcs, FuncStat{Name: name, Weight: w})
		}
		sort.Slice(ts.Funcs, func(i, j int) bool {
			if ts.Funcs[i].Weight != ts.Funcs[j].Weight {
				return ts.Funcs[i].Weight > ts.Funcs[j].Weight
			}
			return ts.Funcs[i].Name < ts.Funcs[j].Name
		})
		p.Types = append(p.Types, ts)
	}
	sort.Slice(p.Types, func(i, j int) bool {
		if p.Types[i].Weight != p.Types[j].Weight {
			return p.Types[i].Weight > p.Types[j].Weight
		}
		if p.Types[i].Name != p.Types[j].Name {
			return p.Types[i].Name < p.Types[j].Name
		}
		return p.Types[i].DSO < p.Types[j].DSO
	})
	for _, r := range a.reasons {
		p.Unknown = append(p.Unknown, *r)
	}
	sort.Slice(p.Unknown, func(i, j int) bool {
		if p.Unknown[i].Weight != p.Unknown[j].Weight {
			return p.Unknown[i].Weight > p.Unknown[j].Weight
		}
		return p.Unknown[i].Reason < p.Unknown[j].Reason
	})
	return p
}

// memberStats puts the accessed members' weights on the layout rows, adding
// rows for accessed members the layout does not list (elements of arrays of
// structs past the first, and "load[]": an element of load reached through
// an index register), and sums each row's nested members into Total.
func memberStats(t *typeAcc) []MemberStat {
	if len(t.rows) == 0 && len(t.members) == 0 {
		return nil
	}
	rows := make([]MemberStat, 0, len(t.rows)+1)
	seen := map[string]bool{}
	for _, r := range t.rows {
		rows = append(rows, MemberStat{LayoutRow: r, Weight: t.members[r.Name]})
		seen[r.Name] = true
	}
	for name, w := range t.members {
		if seen[name] {
			continue
		}
		rows = append(rows, MemberStat{LayoutRow: LayoutRow{Offset: t.offsets[name], Size: t.sizes[name], Name: name, Field: name, Depth: len(ancestors(name))}, Weight: w})
	}
	if len(rows) > len(t.rows) {
		sort.SliceStable(rows, func(i, j int) bool {
			if rows[i].Name == "" || rows[j].Name == "" {
				return rows[i].Name == ""
			}
			return rows[i].Offset < rows[j].Offset
		})
	}
	// A member's total includes its nested members: add each accessed
	// member's weight to all its ancestors ("in.y" → "in" → "").
	totals := map[string]int64{}
	for name, w := range t.members {
		totals[name] += w
		for _, anc := range ancestors(name) {
			totals[anc] += w
		}
	}
	for i := range rows {
		rows[i].Total = totals[rows[i].Name]
	}
	return rows
}

// ancestors lists the enclosing member paths of a path, innermost first,
// ending with "" (the whole type).
func ancestors(path string) []string {
	var out []string
	for i := len(path) - 1; i > 0; i-- {
		if path[i] == '.' || path[i] == '[' {
			out = append(out, path[:i])
		}
	}
	if path != "" {
		out = append(out, "")
	}
	return out
}
