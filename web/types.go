package web

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/pprof/profile"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"

	"viewer/symbolize"
	"viewer/symbolize/datatype"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
	"viewer/views"
	"viewer/web/flame"
	"viewer/web/profiles"
)

// TypesDebug is where a binary's code and debug info are: the executable
// (instructions are decoded from it) and the file with its DWARF, which is
// the same file for an unstripped binary.
type TypesDebug struct {
	Exec, Debug string
	// Source says where the debug info came from, for the DSO list
	// (e.g. "/usr/lib/debug/.build-id/…", "debuginfod https://…").
	Source string
}

// TypesDebugFinder finds the code and debug info of a profile's binary for
// the data-type page. The error says why nothing was found; it is shown to
// the user next to the binary, so it should say what to do.
type TypesDebugFinder interface {
	FindTypesDebug(ctx context.Context, m *profile.Mapping) (TypesDebug, error)
}

// LocalTypesDebugFinder looks on this machine: the mapping's file (when its
// build ID matches) for code, and DebugDir/.build-id/xx/yyyy.debug or the
// file itself for DWARF.
type LocalTypesDebugFinder struct {
	DebugDir string // "" means /usr/lib/debug
}

// FindTypesDebug implements TypesDebugFinder.
func (f LocalTypesDebugFinder) FindTypesDebug(ctx context.Context, m *profile.Mapping) (TypesDebug, error) {
	dir := f.DebugDir
	if dir == "" {
		dir = "/usr/lib/debug"
	}
	var id string
	if m.BuildID != "" {
		var err error
		if id, err = debuginfod.NormalizeBuildID(m.BuildID); err != nil {
			return TypesDebug{}, fmt.Errorf("invalid build ID: %v", err)
		}
	}
	kernel := symbolize.IsKernel(m.File)
	exec := ""
	if m.File != "" && filepath.IsAbs(m.File) {
		if ef, err := elfsym.OpenContext(ctx, m.File, localfile.Named); err == nil {
			if id == "" || strings.EqualFold(ef.BuildID(), id) {
				exec = m.File
			}
			ef.Close()
		}
	}
	var debug, source string
	if id != "" {
		candidates := []string{filepath.Join(dir, ".build-id", id[:2], id[2:]+".debug")}
		if kernel {
			// Debian's linux-image-*-dbg installs the unstripped vmlinux here.
			if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
				r := strings.TrimSpace(string(rel))
				candidates = append(candidates, filepath.Join(dir, "boot", "vmlinux-"+r), filepath.Join(dir, "lib", "modules", r, "vmlinux"))
			}
		}
		for _, p := range candidates {
			ef, err := elfsym.OpenContext(ctx, p, localfile.Configured)
			if err != nil {
				continue
			}
			match := strings.EqualFold(ef.BuildID(), id)
			ef.Close()
			if match {
				debug, source = p, p
				if exec == "" && hasCode(ctx, p) {
					exec = p // an unstripped file (vmlinux): code and DWARF together
				}
				break
			}
		}
	}
	if debug == "" && exec != "" {
		if ef, err := elfsym.OpenContext(ctx, exec, localfile.Configured); err == nil {
			if ef.HasDWARF() {
				debug, source = exec, exec+" (the binary's own DWARF)"
			}
			ef.Close()
		}
	}
	switch {
	case exec == "" && kernel:
		return TypesDebug{}, fmt.Errorf("no vmlinux with build ID %s on this machine: install the kernel's -dbg package (linux-image-…-dbg) or enable debuginfod", id)
	case exec == "" && id != "":
		return TypesDebug{}, fmt.Errorf("no executable with build ID %s on this machine (its code is needed to decode instructions)", id)
	case exec == "":
		return TypesDebug{}, fmt.Errorf("%s is not on this machine and the profile has no build ID for it", m.File)
	case debug == "":
		return TypesDebug{}, fmt.Errorf("no debug info: %s has no DWARF and %s/.build-id has none for build ID %q; install its -dbg/-dbgsym package or enable debuginfod", exec, dir, id)
	}
	return TypesDebug{Exec: exec, Debug: debug, Source: source}, nil
}

// hasCode reports whether the ELF file at path holds its code (a separate
// .debug file's .text is NOBITS).
func hasCode(ctx context.Context, path string) bool {
	f, err := elfsym.OpenContext(ctx, path, localfile.Configured)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.HasCode()
}

// typesService computes and caches data-type profiles for one Server.
type typesService struct {
	s        *Server
	mu       sync.Mutex
	finder   TypesDebugFinder
	binaries *lru.Cache[string, *typesBinary] // by exec+debug path, within budget
	// budget bounds the estimated bytes of the opened binaries (their
	// debug sections, index and remembered results), as --symbol-cache-size
	// bounds symbolization's; held is their sum.
	budget  atomic.Int64
	held    atomic.Int64
	results *lru.Cache[typesKey, *typesResult]
	flight  singleflight.Group
}

type typesKey struct {
	id, variant string
	si          int
	skid        bool
}

// typesResult is a profile's data-type profile and, for the types flame
// graph, what each sample's leaf location accesses.
type typesResult struct {
	prof   *datatype.Profile
	leaves map[*profile.Location]leafTag

	flameOnce sync.Once
	flame     *encoded // types flame graph JSON, built on first request

	// transient: a binary's search timed out, so the result is not cached
	// and the next request looks again (typesfinder.go).
	transient bool
}

// leafTag names the data a leaf instruction accesses: its type and member.
type leafTag struct{ typ, member string }

type typesBinary struct {
	key  string
	size atomic.Int64 // bytes counted in typesService.held
	bin  *datatype.Binary
	file *elfsym.File // for runtime → object address translation
	// text is _text's address when the file is a vmlinux: kernel samples
	// are moved back by the KASLR shift the mapping records.
	text    uint64
	hasText bool
	err     error
}

// objAddr turns a sample's runtime address in mapping m into an address in
// the file. The kernel's is absolute, less the KASLR shift when the mapping
// records where _text was (perf's does), exactly as symbolization places it.
func (tb *typesBinary) objAddr(m *profile.Mapping, pc uint64) (uint64, error) {
	if symbolize.IsKernel(m.File) && tb.file.Type() == elf.ET_EXEC {
		if tb.hasText {
			if shift, ok := elfsym.KASLRShift(tb.text, m.Offset); ok {
				return pc - shift, nil
			}
		}
		return pc, nil
	}
	return tb.file.ObjAddr(pc, m.Start, m.Limit, m.Offset)
}

// typesServices maps each Server to its data-type state, so the feature
// needs no field in Server (its struct belongs to the core files).
var typesServices sync.Map // *Server → *typesService

// SetTypesDebugFinder replaces how the data-type page finds debug info
// (by default LocalTypesDebugFinder). Cached results are dropped.
func (s *Server) SetTypesDebugFinder(f TypesDebugFinder) {
	ts := s.types()
	ts.mu.Lock()
	ts.finder = f
	ts.mu.Unlock()
	ts.results.Purge()
	ts.binaries.Purge()
}

func (s *Server) types() *typesService {
	if v, ok := typesServices.Load(s); ok {
		return v.(*typesService)
	}
	ts := &typesService{s: s, finder: LocalTypesDebugFinder{}}
	ts.budget.Store(defaultTypesBudget)
	ts.binaries, _ = lru.NewWithEvict[string, *typesBinary](maxTypesBinaries, func(_ string, tb *typesBinary) {
		ts.held.Add(-tb.size.Load())
	})
	ts.results, _ = lru.New[typesKey, *typesResult](16)
	v, _ := typesServices.LoadOrStore(s, ts)
	return v.(*typesService)
}

// typesJSON is the body of /p/ID/types.json (?si= selects the sample type;
// ?skid=0 turns skid correction off):
//
//	{"id", "sampleType", "unit", "skidCorrection", "total", "skid" (weight
//	 counted on the access before the sampled instruction),
//	 "types": [{"name": "struct node", "size": 24, "dso": "app", "weight",
//	            "members": [{"offset", "size", "name": "in.y", "field", "type",
//	                         "depth", "weight" (own), "total" (with nested)}],
//	            "funcs": [{"name", "weight"}]}],          // heaviest first
//	 "unknown": [{"reason", "func", "insn", "pc", "dso", "weight"}],
//	 "dsos": [{"name", "buildId", "debugSource" | "error", "samples"}]}
//
// "(stack operation)" and "(unknown)" appear as types, per binary.
type typesJSON struct {
	ID         string `json:"id"`
	SampleType string `json:"sampleType"`
	Unit       string `json:"unit"`
	// SkidCorrection says samples on instructions that touch no memory
	// were counted on the access before them (datatype.Aggregator.Skid).
	SkidCorrection bool `json:"skidCorrection"`
	*datatype.Profile
}

func (s *Server) handleTypesJSON(c echo.Context) error {
	l, i, p, err := s.typesProfile(c)
	if err != nil {
		return err
	}
	st := l.Meta.SampleTypes[i]
	return c.JSON(http.StatusOK, typesJSON{ID: l.ID, SampleType: st.Type, Unit: st.Unit, SkidCorrection: skidParam(c), Profile: p})
}

// typesProfile loads the profile named in the request and its data-type
// profile for the selected sample type.
func (s *Server) typesProfile(c echo.Context) (*profiles.Loaded, int, *datatype.Profile, error) {
	ctx := c.Request().Context()
	l, err := s.Profile(ctx, c.Param("id"))
	if err != nil {
		return nil, 0, nil, err
	}
	i, err := resolveSI(l.Meta, c.QueryParam("si"))
	if err != nil {
		return nil, 0, nil, err
	}
	r, err := s.types().profile(ctx, l, i, skidParam(c))
	if err != nil {
		return nil, 0, nil, err
	}
	return l, i, r.prof, nil
}

// skidParam reads ?skid=: skid correction is on unless it is "0". On by
// default because most profiles are timer-sampled (perf's cpu-clock, and
// cycles without a precise modifier), whose samples skid.
func skidParam(c echo.Context) bool { return c.QueryParam("skid") != "0" }

// skidValues is the query that keeps skid correction off in links.
func skidValues(on bool) url.Values {
	if on {
		return nil
	}
	return url.Values{"skid": {"0"}}
}

// profile returns the (cached) data-type profile of l for sample type si,
// with or without skid correction.
func (ts *typesService) profile(ctx context.Context, l *profiles.Loaded, si int, skid bool) (*typesResult, error) {
	key := typesKey{id: l.ID, variant: l.Variant(), si: si, skid: skid}
	if r, ok := ts.results.Get(key); ok {
		return r, nil
	}
	v, err, _ := ts.flight.Do(fmt.Sprintf("%s/%s/%d/%v", key.id, key.variant, si, skid), func() (any, error) {
		// The upload's own "don't ask debuginfod" choice (typesfinder.go).
		cctx := withTypesNoDebuginfod(background(ctx), ts.s.uploadNoDebuginfod(ctx, l.ID))
		r := ts.compute(cctx, l.Profile, si, skid)
		if !r.transient {
			ts.results.Add(key, r)
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*typesResult), nil
}

// noAddressDSO collects samples whose leaf has no address to attribute.
const noAddressDSO = "(no address)"

// compute attributes every sample's leaf address. Binaries without code or
// debug info are listed with the reason and their samples count as unknown:
// one bad binary never fails the page.
func (ts *typesService) compute(ctx context.Context, p *profile.Profile, si int, skid bool) *typesResult {
	ts.mu.Lock()
	finder := ts.finder
	ts.mu.Unlock()
	type group struct {
		m       *profile.Mapping
		samples []datatype.Sample
		locs    []*profile.Location // the leaf of each sample
	}
	groups := map[*profile.Mapping]*group{}
	var order []*profile.Mapping
	var noAddr []datatype.Sample
	for _, s := range p.Sample {
		if si >= len(s.Value) || s.Value[si] == 0 {
			continue
		}
		w := s.Value[si]
		if len(s.Location) == 0 || s.Location[0].Mapping == nil || s.Location[0].Address == 0 {
			noAddr = append(noAddr, datatype.Sample{Weight: w})
			continue
		}
		loc := s.Location[0]
		g := groups[loc.Mapping]
		if g == nil {
			g = &group{m: loc.Mapping}
			groups[loc.Mapping] = g
			order = append(order, loc.Mapping)
		}
		g.samples = append(g.samples, datatype.Sample{PC: loc.Address, Weight: w})
		g.locs = append(g.locs, loc)
	}
	agg := datatype.NewAggregator()
	agg.KeepAccesses = true
	agg.Skid = skid
	res := &typesResult{leaves: map[*profile.Location]leafTag{}}
	unknownLeaf := leafTag{typ: "(unknown)"}
	names := dsoNames(order)
	for _, m := range order {
		g := groups[m]
		d := datatype.DSO{Name: names[m], BuildID: m.BuildID}
		tb, dbg, err := ts.binary(ctx, finder, m)
		if err != nil {
			d.Error = err.Error()
			res.transient = res.transient || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
			agg.AddDSO(d)
			agg.Add(d.Name, nil, g.samples)
			for _, loc := range g.locs {
				res.leaves[loc] = unknownLeaf
			}
			continue
		}
		d.DebugSource = dbg.Source
		agg.AddDSO(d)
		// Runtime addresses → object addresses; one unmappable address
		// only loses that sample.
		samples := make([]datatype.Sample, 0, len(g.samples))
		objAddr := map[*profile.Location]uint64{}
		var bad []datatype.Sample
		var badErr error
		for i, s := range g.samples {
			a, err := tb.objAddr(m, s.PC)
			if err != nil {
				bad = append(bad, s)
				badErr = err
				res.leaves[g.locs[i]] = unknownLeaf
				continue
			}
			objAddr[g.locs[i]] = a
			samples = append(samples, datatype.Sample{PC: a, Weight: s.Weight})
		}
		agg.Add(d.Name, tb.bin, samples)
		ts.keep(tb) // its remembered results grew
		if len(bad) > 0 {
			agg.AddUnknown(d.Name, "address not in the binary's loadable segments ("+badErr.Error()+")", bad)
		}
		for loc, a := range objAddr {
			if acc, ok := agg.Access(d.Name, a); ok {
				res.leaves[loc] = leafTag{typ: acc.Type, member: acc.Member}
			}
		}
	}
	if len(noAddr) > 0 {
		agg.AddDSO(datatype.DSO{Name: noAddressDSO, Error: "samples without an address (a profile symbolized without addresses, e.g. Go's pprof output, cannot be attributed to data types)"})
		agg.Add(noAddressDSO, nil, noAddr)
	}
	prof := agg.Profile()
	res.prof = &prof
	return res
}

// The data-type page's opened binaries: at most maxTypesBinaries, and
// within the byte budget (--symbol-cache-size when the server symbolizes,
// else defaultTypesBudget); the most recently used one is always kept.
const (
	maxTypesBinaries   = 64
	defaultTypesBudget = 1 << 30
)

// keep puts tb in the cache, or re-measures it there (its remembered
// results grow with each profile), then evicts the least recently used
// binaries while the held bytes exceed the budget.
func (ts *typesService) keep(tb *typesBinary) {
	var size int64
	if tb.bin != nil {
		size = tb.bin.Size()
	}
	if _, ok := ts.binaries.Peek(tb.key); ok {
		ts.held.Add(size - tb.size.Swap(size))
	} else {
		tb.size.Store(size)
		ts.held.Add(size)
		ts.binaries.Add(tb.key, tb)
	}
	ts.binaries.Get(tb.key) // the newest use: evicted last
	for ts.held.Load() > ts.budget.Load() && ts.binaries.Len() > 1 {
		ts.binaries.RemoveOldest()
	}
}

// binary opens (once) the attribution engine for mapping m.
func (ts *typesService) binary(ctx context.Context, finder TypesDebugFinder, m *profile.Mapping) (*typesBinary, TypesDebug, error) {
	dbg, err := finder.FindTypesDebug(ctx, m)
	if err != nil {
		return nil, dbg, err
	}
	key := dbg.Exec + "\x00" + dbg.Debug
	if tb, ok := ts.binaries.Get(key); ok {
		return tb, dbg, tb.err
	}
	v, _, _ := ts.flight.Do("bin:"+key, func() (any, error) {
		tb := &typesBinary{key: key}
		if tb.err = debugFileLimit(ts.s.cfg.Limits.MaxDebugFile, dbg.Exec, dbg.Debug); tb.err != nil {
			ts.keep(tb)
			return tb, nil
		}
		tb.file, tb.err = elfsym.Open(dbg.Exec)
		if tb.err == nil {
			tb.bin, tb.err = datatype.Open(dbg.Exec, dbg.Debug)
			if tb.file.Type() == elf.ET_EXEC { // a vmlinux is one
				tb.text, tb.hasText = tb.file.KernelText()
			}
			tb.file.Close() // ObjAddr needs only the program headers read by Open
		}
		ts.keep(tb)
		return tb, nil
	})
	tb := v.(*typesBinary)
	return tb, dbg, tb.err
}

// debugFileLimit refuses files over max bytes (0: no limit), before
// anything reads them.
func debugFileLimit(max int64, paths ...string) error {
	if max <= 0 {
		return nil
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Size() > max {
			return fmt.Errorf("debug file %s is %d bytes, over --max-debug-file %d", p, fi.Size(), max)
		}
	}
	return nil
}

// dsoNames names each mapping by its file's base name, as perf does, or by
// its full path when two mappings share a base name.
func dsoNames(ms []*profile.Mapping) map[*profile.Mapping]string {
	count := map[string]int{}
	base := func(m *profile.Mapping) string {
		if m.File == "" {
			if m.BuildID != "" {
				return "[build ID " + m.BuildID + "]"
			}
			return fmt.Sprintf("[mapping %#x]", m.Start)
		}
		return filepath.Base(m.File)
	}
	for _, m := range ms {
		count[base(m)]++
	}
	out := map[*profile.Mapping]string{}
	for _, m := range ms {
		n := base(m)
		if count[n] > 1 && m.File != "" {
			n = m.File
			if count[n] > 1 || n == "" {
				n = fmt.Sprintf("%s [%s]", m.File, m.BuildID)
			}
		}
		out[m] = n
	}
	return out
}

// maxTypeRows bounds the types listed on the page (types.json has all).
const maxTypeRows = 500

func (s *Server) handleTypesPage(c echo.Context) error {
	l, i, p, err := s.typesProfile(c)
	if err != nil {
		return err
	}
	id, siq := l.ID, c.QueryParam("si")
	skid := skidParam(c)
	st := l.Meta.SampleTypes[i]
	page := views.TypesPage{
		Page:        views.Page{Title: displayName(l.Meta, id) + " · data types", Nav: append(nav(id, siq, "types"), views.NavLink{Label: "Types", Href: profileURL(id, "/types", siq), Active: true})},
		ID:          id,
		SampleTypes: sampleTypes(l.Meta, i),
		SI:          st.Type,
		Unit:        st.Unit,
		Total:       views.FormatValue(p.Total, st.Unit),
		JSONURL:     withQuery(profileURL(id, "/types.json", siq), skidValues(skid)),
		FlameURL:    profileURL(id, "", siq),
		Skid:        skid,
	}
	page.TypesFlameURL = withQuery(profileURL(id, "/types/flame", siq), skidValues(skid))
	if skid && p.Skid > 0 {
		page.SkidShare = views.Percent(p.Skid, p.Total)
	}
	page.Nav = dedupeNav(page.Nav)
	frac := func(v int64) float64 {
		if p.Total == 0 {
			return 0
		}
		return float64(v) / float64(p.Total)
	}
	val := func(v int64) string { return views.FormatValue(v, st.Unit) }
	flameSearch := func(fn string) string {
		u := "/p/" + id + "?q=" + url.QueryEscape(regexpQuote(fn))
		if siq != "" {
			u += "&si=" + url.QueryEscape(siq)
		}
		return u
	}
	var attributed int64
	type fnAcc struct {
		w     int64
		types []views.TypeLink
	}
	fns := map[string]*fnAcc{}
	for n, t := range p.Types {
		special := strings.HasPrefix(t.Name, "(")
		if !special {
			attributed += t.Weight
		}
		if n >= maxTypeRows {
			continue
		}
		anchor := fmt.Sprintf("t%d", n)
		row := views.TypeRow{
			Anchor: anchor, Name: t.Name, DSO: t.DSO, Special: special,
			Value: val(t.Weight), Pct: views.Percent(t.Weight, p.Total), Frac: frac(t.Weight),
		}
		if t.Size > 0 {
			row.Size = fmt.Sprint(t.Size)
			row.SizeNum = t.Size
		}
		for _, m := range t.Members {
			name := m.Field
			if m.Name == "" {
				name = t.Name
			}
			mr := views.MemberRow{
				Offset: m.Offset, Size: m.Size, Field: name, Type: m.Type, Depth: m.Depth,
				Pct: views.Percent(m.Total, p.Total), Frac: frac(m.Total), Accessed: m.Total > 0,
			}
			if m.Total > 0 {
				mr.Value = val(m.Total)
			}
			if m.Weight > 0 && m.Weight != m.Total {
				mr.Self = views.Percent(m.Weight, p.Total)
			}
			row.Members = append(row.Members, mr)
		}
		for _, f := range t.Funcs {
			row.Funcs = append(row.Funcs, views.TypeFuncLink{Name: f.Name, Href: flameSearch(f.Name), Pct: views.Percent(f.Weight, p.Total)})
			fa := fns[f.Name]
			if fa == nil {
				fa = &fnAcc{}
				fns[f.Name] = fa
			}
			fa.w += f.Weight
			fa.types = append(fa.types, views.TypeLink{Name: t.Name, Anchor: anchor, Pct: views.Percent(f.Weight, p.Total)})
		}
		page.Types = append(page.Types, row)
	}
	page.Attributed = views.Percent(attributed, p.Total)
	for name, fa := range fns {
		page.Funcs = append(page.Funcs, views.TypeFuncRow{
			Name: name, Href: flameSearch(name), Value: val(fa.w), Pct: views.Percent(fa.w, p.Total), Frac: frac(fa.w), Types: fa.types,
		})
	}
	sort.Slice(page.Funcs, func(a, b int) bool {
		if page.Funcs[a].Frac != page.Funcs[b].Frac {
			return page.Funcs[a].Frac > page.Funcs[b].Frac
		}
		return page.Funcs[a].Name < page.Funcs[b].Name
	})
	for _, r := range p.Unknown[:min(len(p.Unknown), 200)] {
		ur := views.UnknownRow{Reason: r.Reason, Func: r.Func, Insn: r.Insn, DSO: r.DSO, Value: val(r.Weight), Pct: views.Percent(r.Weight, p.Total), Frac: frac(r.Weight)}
		if r.PC != 0 {
			ur.PC = fmt.Sprintf("%#x", r.PC)
		}
		page.Unknown = append(page.Unknown, ur)
	}
	for _, d := range p.DSOs {
		page.DSOs = append(page.DSOs, views.TypeDSO{Name: d.Name, BuildID: d.BuildID, Source: d.DebugSource, Error: d.Error, Samples: val(d.Samples), Pct: views.Percent(d.Samples, p.Total)})
	}
	return Render(c, http.StatusOK, views.Types(page))
}

// dedupeNav drops a second link with the same label (once the core nav
// lists Types itself, the page's own link is redundant).
func dedupeNav(links []views.NavLink) []views.NavLink {
	seen := map[string]int{}
	var out []views.NavLink
	for _, l := range links {
		if i, ok := seen[l.Label]; ok {
			out[i].Active = out[i].Active || l.Active
			continue
		}
		seen[l.Label] = len(out)
		out = append(out, l)
	}
	return out
}

// regexpQuote escapes a function name for the flame page's regexp search.
func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// typesFlameProfile is p with each sample's stack extended by what its leaf
// instruction accesses: a frame for the data type and, under it, one for the
// member, so the flame graph's leaves are the data each stack touched.
func typesFlameProfile(p *profile.Profile, leaves map[*profile.Location]leafTag) *profile.Profile {
	out := &profile.Profile{
		SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType,
		PeriodType: p.PeriodType, Period: p.Period, DurationNanos: p.DurationNanos, TimeNanos: p.TimeNanos,
		Mapping:  p.Mapping,
		Location: append([]*profile.Location(nil), p.Location...),
		Function: append([]*profile.Function(nil), p.Function...),
	}
	var locID, fnID uint64
	for _, l := range p.Location {
		locID = max(locID, l.ID)
	}
	for _, f := range p.Function {
		fnID = max(fnID, f.ID)
	}
	frames := map[string]*profile.Location{}
	frame := func(name string) *profile.Location {
		if l, ok := frames[name]; ok {
			return l
		}
		fnID++
		locID++
		f := &profile.Function{ID: fnID, Name: name, SystemName: name}
		l := &profile.Location{ID: locID, Line: []profile.Line{{Function: f}}}
		out.Function = append(out.Function, f)
		out.Location = append(out.Location, l)
		frames[name] = l
		return l
	}
	for _, s := range p.Sample {
		tag := leafTag{typ: "(unknown)"}
		if len(s.Location) > 0 {
			if t, ok := leaves[s.Location[0]]; ok {
				tag = t
			}
		}
		locs := make([]*profile.Location, 0, len(s.Location)+2)
		if tag.member != "" {
			locs = append(locs, frame(tag.typ+"."+tag.member))
		}
		locs = append(locs, frame(tag.typ))
		locs = append(locs, s.Location...)
		out.Sample = append(out.Sample, &profile.Sample{Location: locs, Value: s.Value, Label: s.Label, NumLabel: s.NumLabel, NumUnit: s.NumUnit})
	}
	return out
}

// handleTypesFlameJSON serves the flame graph data of the types flame graph.
func (s *Server) handleTypesFlameJSON(c echo.Context) error {
	ctx := c.Request().Context()
	l, err := s.Profile(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	i, err := resolveSI(l.Meta, c.QueryParam("si"))
	if err != nil {
		return err
	}
	skid := skidParam(c)
	r, err := s.types().profile(ctx, l, i, skid)
	if err != nil {
		return err
	}
	r.flameOnce.Do(func() {
		body := flame.Build(typesFlameProfile(l.Profile, r.leaves), i, flame.Options{MinFraction: flame.DefaultMinFraction}).JSON()
		r.flame = &encoded{plain: body, gz: gzipBytes(body),
			etag: fmt.Sprintf(`"%s-%s-%d-types-skid%v-v%d"`, l.ID, strings.TrimSuffix(l.Variant(), ".pb.gz"), i, skid, flame.JSONVersion)}
	})
	return serveEncoded(c, r.flame, echo.MIMEApplicationJSON)
}

// handleTypesFlamePage is the flame graph page drawing the types flame graph.
func (s *Server) handleTypesFlamePage(c echo.Context) error {
	id := c.Param("id")
	m, i, err := s.pageMeta(c, id)
	if err != nil {
		return err
	}
	siq := c.QueryParam("si")
	page := views.FlamePage{
		Page: views.Page{Title: displayName(m, id) + " · data-type flame graph",
			Nav: dedupeNav(append(nav(id, siq, ""), views.NavLink{Label: "Types", Href: withQuery(profileURL(id, "/types", siq), skidValues(skidParam(c))), Active: true}))},
		ID:          id,
		Name:        m.Name,
		SampleTypes: sampleTypes(m, i),
		SI:          m.SampleTypes[i].Type,
		DataURL:     withQuery(profileURL(id, "/types/flame.json", m.SampleTypes[i].Type), skidValues(skidParam(c))),
		Stats:       stats(m, i),
	}
	return Render(c, http.StatusOK, views.Flame(page))
}
