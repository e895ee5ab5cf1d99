package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/google/pprof/profile"
	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
	"viewer/views"
	"viewer/web/flame"
	"viewer/web/profiles"
	"viewer/web/viewcache"
)

// dataTypes is the data-type page's state: the attribution itself, and
// the binaries it reads, are the symbolization engine's (symbolize.DataTypes,
// one store and one --symbol-cache-size budget); what stays here is which
// engine reads them, and the computed pages of the profiles recently shown
// (kept in a web/viewcache cache).
type dataTypes struct {
	mu      sync.Mutex
	engine  *symbolize.Symbolizer // SetDataTypeEngine's, else the server's
	local   *symbolize.Symbolizer // made on first use when the server has no engine
	results *viewcache.Cache[typesKey, *typesResult]
}

// typesCache is how many data-type profiles are kept.
const typesCache = 16

type typesKey struct {
	id, variant string
	si          int
	skid        bool
}

// Profile is the profile the data types were computed from (viewcache.Key).
func (k typesKey) Profile() string { return k.id }

// typesResult is a profile's data-type profile and, for the types flame
// graph, what each sample's leaf location accesses.
type typesResult struct {
	*symbolize.DataTypeResult

	// The data-type flame graph's profile (typesFlame), as large as the
	// profile's samples: held weakly, so that it lives while its stacks
	// are cached or a request uses it, not as long as this result.
	flameMu sync.Mutex
	flame   weak.Pointer[profile.Profile]
}

// SetDataTypeEngine makes the data-type page, and the annotate view, read
// binaries with e instead of the symbolization engine (or, without one, an
// engine looking on this machine only): for a caller whose binaries are in
// a directory of its own, as the browser tests' are (a test hook, exported
// for their module, viewer/web/browsertest). Cached results, and the
// annotate view's listings, are dropped.
func (s *Server) SetDataTypeEngine(e *symbolize.Symbolizer) {
	s.types.mu.Lock()
	s.types.engine = e
	s.types.mu.Unlock()
	s.types.results.Purge()
	s.annotations.Purge() // listed with the engine replaced
}

// dataTypeEngine is the engine the data-type page reads binaries with: the
// one symbolization uses (its locator, store and budget), else one that
// looks on this machine only, within --max-debug-file.
func (s *Server) dataTypeEngine() *symbolize.Symbolizer {
	dt := s.types
	dt.mu.Lock()
	defer dt.mu.Unlock()
	switch {
	case dt.engine != nil:
		return dt.engine
	case s.cfg.Symbolization != nil && s.cfg.Symbolization.Engine != nil:
		return s.cfg.Symbolization.Engine
	}
	if dt.local == nil {
		dt.local = symbolize.New(symbolize.Config{MaxDebugFile: s.cfg.Limits.MaxDebugFile})
	}
	return dt.local
}

// dataTypeOptions are the choices for profile id's data types: the upload's
// and the server's debuginfod choices, and --symbolize-timeout.
func (s *Server) dataTypeOptions(ctx context.Context, id string, skid bool) symbolize.DataTypeOptions {
	opt := symbolize.DataTypeOptions{Skid: skid}
	c := s.cfg.Symbolization
	if c == nil || c.Engine == nil {
		return opt
	}
	opt.Timeout = c.Timeout
	switch {
	case s.uploadNoDebuginfod(ctx, id):
		opt.NoDebuginfod, opt.NoDebuginfodWhy = true, "debuginfod not asked: the upload opted out of sending its build IDs"
	case !c.Gate.Enabled() || len(c.Servers) == 0:
		opt.NoDebuginfod, opt.NoDebuginfodWhy = true, "debuginfod is off on this server"
	}
	return opt
}

// uploadNoDebuginfod reads the upload's stored "don't ask debuginfod" choice.
// When the record cannot be read it answers true: never send build IDs the
// uploader may have withheld.
func (s *Server) uploadNoDebuginfod(ctx context.Context, id string) bool {
	if s.sym == nil {
		return false
	}
	rec, err := s.sym.Outcome(ctx, id)
	if err != nil {
		s.log.Warn("reading the symbolization record for the data-type page", "id", id, "err", err)
		return true
	}
	return rec.NoDebuginfod
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
//	 "dsos": [{"name", "buildId", "debugSource" | "error", "samples"}],
//	 "compacted" (only when the lists were cut to --render-nodes and
//	 --render-bytes): {"types", "unknown", "dsos" (how many there are),
//	                   "note"}}
//
// "(stack operation)" and "(unknown)" appear as types, per binary.
type typesJSON struct {
	ID         string `json:"id"`
	SampleType string `json:"sampleType"`
	Unit       string `json:"unit"`
	// SkidCorrection says samples on instructions that touch no memory
	// were counted on the access before them (datatype.Aggregator.Skid).
	SkidCorrection bool `json:"skidCorrection"`
	*symbolize.DataTypeProfile
	// Compacted says what was left out to fit the rendering budget; absent
	// when nothing was.
	Compacted *typesCompaction `json:"compacted,omitempty"`
}

func (s *Server) handleTypesJSON(c echo.Context) error {
	l, i, p, err := s.typesProfile(c)
	if err != nil {
		return err
	}
	st := l.Meta.SampleTypes[i]
	fit, cut := typesWithin(p, s.renderBudget())
	return c.JSON(http.StatusOK, typesJSON{ID: l.ID, SampleType: st.Type, Unit: st.Unit, SkidCorrection: skidParam(c), DataTypeProfile: fit, Compacted: cut})
}

// typesJSONRow bounds one types.json entry's bytes besides its names: its
// keys and up to four integers.
const typesJSONRow = 160

// typesCompaction is types.json's "compacted" member: what the data-type
// profile holds when types.json lists less of it, within the rendering
// budget (--render-nodes, --render-bytes).
type typesCompaction struct {
	Types   int    `json:"types"`
	Unknown int    `json:"unknown"`
	DSOs    int    `json:"dsos"`
	Note    string `json:"note"`
}

// typesWithin is p cut to b as types.json encodes it: the heaviest types
// that fit with their layouts, each with the functions that fit, then the
// reasons and binaries that fit; and what was cut, or nil.
func typesWithin(p *symbolize.DataTypeProfile, b flame.Budget) (*symbolize.DataTypeProfile, *typesCompaction) {
	m := b.Meter()
	out := *p
	out.Types, out.Unknown, out.DSOs = p.Types[:0:0], p.Unknown[:0:0], p.DSOs[:0:0] // empty, not null, as p has them
	cut, funcsCut := false, 0
	for _, t := range p.Types {
		size := typesJSONRow + flame.NameBytes(t.Name) + flame.NameBytes(t.DSO)
		for _, r := range t.Members {
			size += typesJSONRow + flame.NameBytes(r.Name) + flame.NameBytes(r.Field) + flame.NameBytes(r.Type)
		}
		if !m.Take(size) {
			cut = true
			break
		}
		k := 0
		for k < len(t.Funcs) && m.Take(typesJSONRow/2+flame.NameBytes(t.Funcs[k].Name)) {
			k++
		}
		if k < len(t.Funcs) {
			t.Funcs = t.Funcs[:k]
			funcsCut++
		}
		out.Types = append(out.Types, t)
	}
	for _, r := range p.Unknown {
		if !m.Take(typesJSONRow + flame.NameBytes(r.Reason) + flame.NameBytes(r.Func) + flame.NameBytes(r.Insn) + flame.NameBytes(r.DSO)) {
			cut = true
			break
		}
		out.Unknown = append(out.Unknown, r)
	}
	for _, d := range p.DSOs {
		if !m.Take(typesJSONRow + flame.NameBytes(d.Name) + flame.NameBytes(d.BuildID) + flame.NameBytes(d.DebugSource) + flame.NameBytes(d.Error)) {
			cut = true
			break
		}
		out.DSOs = append(out.DSOs, d)
	}
	if !cut && funcsCut == 0 {
		return p, nil
	}
	note := typesCutNote([]typesCount{{"data type", len(out.Types), len(p.Types)}, {"reason", len(out.Unknown), len(p.Unknown)}, {"binary", len(out.DSOs), len(p.DSOs)}}, funcsCut)
	return &out, &typesCompaction{Types: len(p.Types), Unknown: len(p.Unknown), DSOs: len(p.DSOs), Note: note}
}

// typesCount is how many of a list's entries a data-type view shows.
type typesCount struct {
	noun        string
	shown, have int
}

// typesCutNote is the sentence saying what a data-type view left out to
// fit the rendering budget.
func typesCutNote(lists []typesCount, funcsCut int) string {
	var parts []string
	if funcsCut > 0 {
		parts = append(parts, views.Plural(funcsCut, "data type")+" listing fewer of the functions touching it")
	}
	for _, l := range lists {
		if l.shown < l.have {
			parts = append(parts, fmt.Sprintf("%d of %s", l.shown, views.Plural(l.have, l.noun)))
		}
	}
	return "This lists as much as fits the server's rendering budget (--render-nodes, --render-bytes): " + strings.Join(parts, ", ") + "."
}

// typesProfile loads the profile named in the request and its data-type
// profile for the selected sample type.
func (s *Server) typesProfile(c echo.Context) (*profiles.Loaded, int, *symbolize.DataTypeProfile, error) {
	ctx := c.Request().Context()
	l, i, err := s.requestProfile(c)
	if err != nil {
		return nil, 0, nil, err
	}
	r, err := s.typesResult(ctx, l, i, skidParam(c))
	if err != nil {
		return nil, 0, nil, err
	}
	return l, i, r.Profile, nil
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

// typesResult returns the (cached) data-type profile of l for sample type
// si, with or without skid correction.
func (s *Server) typesResult(ctx context.Context, l *profiles.Loaded, si int, skid bool) (*typesResult, error) {
	key := typesKey{id: l.ID, variant: l.Variant(), si: si, skid: skid}
	return s.types.results.Build(key, func() (*typesResult, bool, error) {
		cctx := background(ctx) // outlives the request that started it; joined by others
		r := &typesResult{DataTypeResult: s.dataTypeEngine().DataTypes(cctx, l.Profile, si, s.dataTypeOptions(cctx, l.ID, skid))}
		return r, !r.Transient, nil
	})
}

// maxTypeRows bounds the types listed on the page (types.json has all
// that fit the rendering budget).
const maxTypeRows = 500

// typesHTMLRow bounds the markup of one row of the data-type page besides
// its names, typesHTMLLink that of a link in a list; a type's row holds its
// name typesHTMLNames times (attribute and text; each function's link to
// it is counted with the function).
const (
	typesHTMLRow   = 1024
	typesHTMLLink  = 128
	typesHTMLNames = 2
)

func (s *Server) handleTypesPage(c echo.Context) error {
	l, i, p, err := s.typesProfile(c)
	if err != nil {
		return err
	}
	id, siq := l.ID, c.QueryParam("si")
	skid := skidParam(c)
	st := l.Meta.SampleTypes[i]
	page := views.TypesPage{
		Page:        withHelp(s.profilePage(c, id, l.Meta, displayName(l.Meta, id)+" · data types", append(nav(c, id, "types"), views.NavLink{Label: "Types", Href: withQuery(profileURL(id, "/types", siq), skidValues(skid)), Active: true})), "/docs/types#data-type-page"),
		ID:          id,
		SampleTypes: sampleTypes(l.Meta, i),
		SI:          st.Type,
		Unit:        st.Unit,
		Total:       sampling.FormatValue(p.Total, st.Unit),
		JSONURL:     withQuery(profileURL(id, "/types.json", siq), skidValues(skid)),
		FlameURL:    profileURL(id, "", siq),
		Skid:        skid,
	}
	page.TypesFlameURL = withQuery(profileURL(id, "/types/flame", siq), skidValues(skid))
	if skid && p.Skid > 0 {
		page.SkidShare = sampling.Percent(p.Skid, p.Total)
	}
	line, lineFrom := cacheLineSize(l.Profile)
	page.CacheLine, page.CacheLineFrom = fmt.Sprint(line), lineFrom
	frac := func(v int64) float64 {
		if p.Total == 0 {
			return 0
		}
		return float64(v) / float64(p.Total)
	}
	val := func(v int64) string { return sampling.FormatValue(v, st.Unit) }
	flameSearch := func(fn string) string {
		u := "/p/" + id + "?q=" + url.QueryEscape(regexpQuote(fn))
		if siq != "" {
			u += "&si=" + url.QueryEscape(siq)
		}
		return u
	}
	var attributed int64
	for _, t := range p.Types {
		if !strings.HasPrefix(t.Name, "(") {
			attributed += t.Weight
		}
	}
	page.Attributed = sampling.Percent(attributed, p.Total)
	// The lists hold what fits the rendering budget, as /top does: the
	// heaviest types (each with its layout, then the functions that fit),
	// functions, reasons and binaries.
	budget := s.renderBudget().Meter()
	cut, funcsCut := false, 0
	type fnAcc struct {
		name  string
		w     int64
		types []views.TypeLink
	}
	fns := map[string]*fnAcc{}
	for n, t := range p.Types[:min(len(p.Types), maxTypeRows)] {
		special := strings.HasPrefix(t.Name, "(")
		anchor := fmt.Sprintf("t%d", n)
		row := views.TypeRow{
			Anchor: anchor, Name: t.Name, DSO: t.DSO, Special: special,
			Value: val(t.Weight), Pct: sampling.Percent(t.Weight, p.Total), Frac: frac(t.Weight),
		}
		if t.Size > 0 {
			row.Size = fmt.Sprint(t.Size)
			row.SizeNum = t.Size
		}
		size := typesHTMLRow + typesHTMLNames*flame.NameBytes(t.Name) + flame.NameBytes(t.DSO)
		for _, m := range t.Members {
			name := m.Field
			if m.Name == "" {
				name = t.Name
			}
			size += typesHTMLRow + flame.NameBytes(name) + flame.NameBytes(m.Type)
			mr := views.MemberRow{
				Offset: m.Offset, Size: m.Size, Field: name, Type: m.Type, Depth: m.Depth,
				Pct: sampling.Percent(m.Total, p.Total), Frac: frac(m.Total), Accessed: m.Total > 0,
			}
			if m.Total > 0 {
				mr.Value = val(m.Total)
			}
			if m.Weight > 0 && m.Weight != m.Total {
				mr.Self = sampling.Percent(m.Weight, p.Total)
			}
			row.Members = append(row.Members, mr)
		}
		if !special {
			row.CacheLines = cacheLineRows(t, line, p.Total, val)
			for _, cl := range row.CacheLines {
				size += typesHTMLRow + flame.NameBytes(cl.Members) + flame.NameBytes(cl.Crossing)
			}
		}
		if !budget.Take(size) {
			cut = true
			break
		}
		for _, f := range t.Funcs {
			fa := fns[f.Name]
			if fa == nil {
				fa = &fnAcc{name: f.Name}
				fns[f.Name] = fa
			}
			fa.w += f.Weight
			fa.types = append(fa.types, views.TypeLink{Name: t.Name, Anchor: anchor, Pct: sampling.Percent(f.Weight, p.Total)})
			if row.MoreFuncs > 0 {
				continue
			}
			if href := flameSearch(f.Name); budget.Take(typesHTMLLink + flame.NameBytes(f.Name) + flame.NameBytes(href)) {
				row.Funcs = append(row.Funcs, views.TypeFuncLink{Name: f.Name, Href: href, Pct: sampling.Percent(f.Weight, p.Total)})
			} else {
				row.MoreFuncs = len(t.Funcs) - len(row.Funcs)
				funcsCut++
			}
		}
		page.Types = append(page.Types, row)
	}
	funcs := make([]*fnAcc, 0, len(fns))
	for _, fa := range fns {
		funcs = append(funcs, fa)
	}
	sort.Slice(funcs, func(a, b int) bool {
		if funcs[a].w != funcs[b].w {
			return funcs[a].w > funcs[b].w
		}
		return funcs[a].name < funcs[b].name
	})
	for _, fa := range funcs {
		// Its name as text and attribute, in the search and annotate
		// links, and each type's link.
		href, annotate := flameSearch(fa.name), annotateURL(id, fa.name, siq, skid)
		size := typesHTMLRow + 2*flame.NameBytes(fa.name) + flame.NameBytes(href) + flame.NameBytes(annotate)
		for _, t := range fa.types {
			size += typesHTMLLink + flame.NameBytes(t.Name)
		}
		if !budget.Take(size) {
			cut = true
			break
		}
		page.Funcs = append(page.Funcs, views.TypeFuncRow{
			Name: fa.name, Href: href, AnnotateHref: annotate, Value: val(fa.w), Pct: sampling.Percent(fa.w, p.Total), Frac: frac(fa.w), Types: fa.types,
		})
	}
	for _, r := range p.Unknown[:min(len(p.Unknown), 200)] {
		if !budget.Take(typesHTMLRow + flame.NameBytes(r.Reason) + flame.NameBytes(r.Func) + flame.NameBytes(r.Insn) + flame.NameBytes(r.DSO)) {
			cut = true
			break
		}
		ur := views.UnknownRow{Reason: r.Reason, Func: r.Func, Insn: r.Insn, DSO: r.DSO, Value: val(r.Weight), Pct: sampling.Percent(r.Weight, p.Total), Frac: frac(r.Weight)}
		if r.PC != 0 {
			ur.PC = fmt.Sprintf("%#x", r.PC)
		}
		page.Unknown = append(page.Unknown, ur)
	}
	for _, r := range p.TypeStats() {
		page.TypeStat = append(page.TypeStat, views.TypeStatRow{Category: r.Category, Value: val(r.Weight), Pct: sampling.Percent(r.Weight, p.Total), Frac: frac(r.Weight)})
		page.Unresolved += r.Weight
	}
	page.UnresolvedValue, page.UnresolvedPct = val(page.Unresolved), sampling.Percent(page.Unresolved, p.Total)
	for _, d := range p.DSOs {
		if !budget.Take(typesHTMLRow + flame.NameBytes(d.Name) + flame.NameBytes(d.BuildID) + flame.NameBytes(d.DebugSource) + flame.NameBytes(d.Error)) {
			cut = true
			break
		}
		page.DSOs = append(page.DSOs, views.TypeDSO{Name: d.Name, BuildID: d.BuildID, Source: d.DebugSource, Error: d.Error, Samples: val(d.Samples), Pct: sampling.Percent(d.Samples, p.Total)})
	}
	if cut || funcsCut > 0 {
		page.Note = typesCutNote([]typesCount{{"data type", len(page.Types), min(len(p.Types), maxTypeRows)}, {"function", len(page.Funcs), len(funcs)},
			{"reason", len(page.Unknown), min(len(p.Unknown), 200)}, {"binary", len(page.DSOs), len(p.DSOs)}}, funcsCut)
	}
	return Render(c, http.StatusOK, views.Types(page))
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

// dataTypeMapping is the mapping of the data-type flame graph's type and
// member frames (common.js DATA_TYPE_MAPPING).
const dataTypeMapping = "[data type]"

// typesFlameProfile is p with each sample's stack extended by what its leaf
// instruction accesses: a frame for the data type and, under it, one for the
// member, so the flame graph's leaves are the data each stack touched.
func typesFlameProfile(p *profile.Profile, leaves map[*profile.Location]symbolize.DataTypeLeaf) *profile.Profile {
	out := &profile.Profile{
		SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType,
		PeriodType: p.PeriodType, Period: p.Period, DurationNanos: p.DurationNanos, TimeNanos: p.TimeNanos,
		Location: append([]*profile.Location(nil), p.Location...),
		Function: append([]*profile.Function(nil), p.Function...),
	}
	var locID, fnID, mapID uint64
	for _, l := range p.Location {
		locID = max(locID, l.ID)
	}
	for _, m := range p.Mapping {
		mapID = max(mapID, m.ID)
	}
	// The type and member frames' binary: the page links them to the
	// data-type page, not to a function's (common.js frameLinks), and
	// colors them apart by binary.
	dt := &profile.Mapping{ID: mapID + 1, File: dataTypeMapping, HasFunctions: true}
	out.Mapping = append(slices.Clone(p.Mapping), dt)
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
		l := &profile.Location{ID: locID, Mapping: dt, Line: []profile.Line{{Function: f}}}
		out.Function = append(out.Function, f)
		out.Location = append(out.Location, l)
		frames[name] = l
		return l
	}
	for _, s := range p.Sample {
		tag := symbolize.DataTypeLeaf{Type: "(unknown)"}
		if len(s.Location) > 0 {
			if t, ok := leaves[s.Location[0]]; ok {
				tag = t
			}
		}
		locs := make([]*profile.Location, 0, len(s.Location)+2)
		if tag.Member != "" {
			locs = append(locs, frame(tag.Type+"."+tag.Member))
		}
		locs = append(locs, frame(tag.Type))
		locs = append(locs, s.Location...)
		out.Sample = append(out.Sample, &profile.Sample{Location: locs, Value: s.Value, Label: s.Label, NumLabel: s.NumLabel, NumUnit: s.NumUnit})
	}
	return out
}

// transientTypes numbers the data-type results that were not cached
// (typesFlame).
var transientTypes atomic.Int64

// typesFlame is the profile the data-type flame graph draws
// (typesFlameProfile), as a variant of the request's profile: its
// flame.json, zoomed trees and top.json are cut from its sorted stacks and
// cached as the profile's own are (zoom.go), under keys of their own, so
// the page's top table and zooms are exact as on the flame page.
func (s *Server) typesFlame(c echo.Context) (*profiles.Loaded, int, error) {
	l, i, err := s.requestProfile(c)
	if err != nil {
		return nil, 0, err
	}
	skid := skidParam(c)
	r, err := s.typesResult(c.Request().Context(), l, i, skid)
	if err != nil {
		return nil, 0, err
	}
	v := fmt.Sprintf("%s-types-skid%v", l.Version, skid)
	if r.Transient {
		// Not cached (a binary's search timed out): the trees cut from it
		// must not be served for the complete result either.
		v += fmt.Sprintf("-transient%d", transientTypes.Add(1))
	}
	r.flameMu.Lock()
	defer r.flameMu.Unlock()
	p := r.flame.Value()
	if p == nil {
		p = typesFlameProfile(l.Profile, r.Leaves)
		r.flame = weak.Make(p)
	}
	return &profiles.Loaded{ID: l.ID, Meta: l.Meta, Profile: p, Symbolized: l.Symbolized, Version: v}, i, nil
}

// handleTypesFlameJSON serves the data-type flame graph's flame.json,
// zoomed at z when asked, with the flame page's filters.
func (s *Server) handleTypesFlameJSON(c echo.Context) error {
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	l, i, err := s.typesFlame(c)
	if err != nil {
		return err
	}
	var e *encoded
	if z := c.QueryParams()["z"]; len(z) > 0 {
		e, err = s.zoomTreeOf(c.Request().Context(), l, i, f, z) // zoom.go
	} else {
		e, err = s.treeOf(c.Request().Context(), l, i, "json", f)
	}
	if err != nil {
		return err
	}
	return serveEncoded(c, e, echo.MIMEApplicationJSON)
}

// handleTypesTopJSON serves the data-type flame graph's top.json: its
// table counts every sample, not the compacted tree drawn.
func (s *Server) handleTypesTopJSON(c echo.Context) error {
	l, i, err := s.typesFlame(c)
	if err != nil {
		return err
	}
	return s.serveTopJSON(c, l, i)
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
		Page: s.profilePage(c, id, m, displayName(m, id)+" · data-type flame graph",
			append(navFiltered(c, id, "", s.profileFilterQuery(c)), views.NavLink{Label: "Types", Href: withQuery(profileURL(id, "/types", siq), skidValues(skidParam(c))), Active: true})),
		ID:          id,
		Name:        m.Name,
		SampleTypes: sampleTypes(m, i),
		SI:          m.SampleTypes[i].Type,
		DataURL:     withQuery(withQuery(profileURL(id, "/types/flame.json", m.SampleTypes[i].Type), skidValues(skidParam(c))), filterQuery(c)),
		Exact:       true, // types/top.json, types/flame.json?z=
		Stats:       stats(m, i),
		Filter:      filterBar(c, "/p/"+id+"/types/flame"), // filterquery.go
	}
	if !skidParam(c) {
		page.Filter.Keep = append(page.Filter.Keep, [2]string{"skid", "0"})
	}
	return Render(c, http.StatusOK, views.Flame(page))
}

// profileFilterQuery is the data-type flame graph's filters and time range
// (filterQuery) as its header's links to the profile's flame graph, top
// and time order carry them: without a filter (f, i, h, s) that matches a
// type or member frame, which the profile does not have. A focus on struct
// node led to an empty flame graph there, an ignore or hide of it to every
// sample; a filter of function frames keeps the same samples.
func (s *Server) profileFilterQuery(c echo.Context) url.Values {
	q := filterQuery(c)
	f, err := queryFilter(c)
	if err != nil || f.Focus == nil && f.Ignore == nil && f.Hide == nil && f.Show == nil {
		return q
	}
	l, _, err := s.typesFlame(c) // cached for the page's flame.json
	if err != nil {
		return q
	}
	for k, re := range map[string]*regexp.Regexp{"f": f.Focus, "i": f.Ignore, "h": f.Hide, "s": f.Show} {
		if re == nil {
			continue
		}
		if re.MatchString(dataTypeMapping) { // every type frame's binary
			q.Del(k)
			continue
		}
		for _, loc := range l.Profile.Location {
			if loc.Mapping == nil || loc.Mapping.File != dataTypeMapping || len(loc.Line) == 0 || loc.Line[0].Function == nil {
				continue
			}
			if re.MatchString(loc.Line[0].Function.Name) {
				q.Del(k)
				break
			}
		}
	}
	return q
}

// cacheLineSize is the cache line size the data-type page groups members
// by: the recording machine's L1 data line size when perf.data's CACHE
// header gave it (a profile comment), else datatype.DefaultCacheLine.
func cacheLineSize(p *profile.Profile) (int64, string) {
	for _, c := range p.Comments {
		if v, ok := strings.CutPrefix(c, sampling.CacheLineComment); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 && n <= 4096 && n&(n-1) == 0 {
				return n, "the recording machine's L1 data cache (perf.data header)"
			}
		}
	}
	return symbolize.DefaultCacheLine, "the x86-64 and arm64 default: the recording does not say"
}

// cacheLineRows is a type's layout grouped by cache line.
func cacheLineRows(t symbolize.DataTypeStat, line, total int64, val func(int64) string) []views.CacheLineRow {
	var out []views.CacheLineRow
	for _, cl := range t.CacheLines(line) {
		r := views.CacheLineRow{
			Index: fmt.Sprint(cl.Index), Range: fmt.Sprintf("%d–%d", cl.Lo, cl.Hi-1),
			Members: strings.Join(cl.Members, ", "), Crossing: strings.Join(cl.Crossing, ", "),
		}
		if cl.Weight > 0 {
			r.Value, r.Pct = val(cl.Weight), sampling.Percent(cl.Weight, total)
			r.Frac = float64(cl.Weight) / float64(max(total, 1))
		}
		out = append(out, r)
	}
	if len(out) < 2 && (len(out) == 0 || out[0].Crossing == "") {
		return nil // one line: nothing to group
	}
	return out
}

// annotateURL links a function to its annotate view, keeping si and skid.
func annotateURL(id, fn, si string, skid bool) string {
	q := url.Values{"fn": {fn}}
	if si != "" {
		q.Set("si", si)
	}
	if !skid {
		q.Set("skid", "0")
	}
	return "/p/" + id + "/annotate?" + q.Encode()
}
