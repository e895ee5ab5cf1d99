package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"

	"viewer/symbolize"
	"viewer/symbolize/annotate"
	"viewer/symbolize/datatype"
	"viewer/symbolize/elfsym"
	"viewer/views"
	"viewer/web/flame"
	"viewer/web/profiles"
)

// The annotate view (/p/ID/annotate?fn=NAME): a function's instructions
// with their self samples, source lines and data-type accesses. The code
// and debug info are found and opened as the data-type page's are
// (typesService.binary: by build ID, locally or from debuginfod); the
// symbol table and line table come from the debug file (elfsym).

// annotateService keeps the opened symbol/line files and recent listings.
type annotateService struct {
	files    *lru.Cache[string, *elfsym.File] // by path
	listings *lru.Cache[string, *annotation]
	flight   singleflight.Group
}

var annotateServices sync.Map // *Server → *annotateService

func (s *Server) annotator() *annotateService {
	if v, ok := annotateServices.Load(s); ok {
		return v.(*annotateService)
	}
	as := &annotateService{}
	as.files, _ = lru.NewWithEvict[string, *elfsym.File](8, func(_ string, f *elfsym.File) { f.Close() })
	as.listings, _ = lru.New[string, *annotation](32)
	v, _ := annotateServices.LoadOrStore(s, as)
	return v.(*annotateService)
}

// annotation is one listing with what the page says around it.
type annotation struct {
	listing *annotate.Listing
	dso     string
	buildID string
	source  string // where the debug info came from
	total   int64  // the profile's total for the sample type (after filters)
	others  []string
}

// file opens (once) path's ELF symbols and lines.
func (as *annotateService) file(path string) (*elfsym.File, error) {
	if f, ok := as.files.Get(path); ok {
		return f, nil
	}
	v, err, _ := as.flight.Do("file:"+path, func() (any, error) {
		f, err := elfsym.Open(path)
		if err != nil {
			return nil, err
		}
		f.UseSymbolTableNames(true)
		as.files.Add(path, f)
		return f, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*elfsym.File), nil
}

// keepSample applies the focus and ignore filters to one sample, as pprof
// does: a frame matches by function name or by its binary's path. Hide and
// show change which frames a graph draws, not which instructions were
// sampled, so the listing ignores them.
func keepSample(f flame.Filter, s *profile.Sample) bool {
	if f.Focus == nil && f.Ignore == nil {
		return true
	}
	match := func(re interface{ MatchString(string) bool }) bool {
		for _, l := range s.Location {
			if l.Mapping != nil && re.MatchString(l.Mapping.File) {
				return true
			}
			for _, ln := range l.Line {
				if ln.Function != nil && re.MatchString(ln.Function.Name) {
					return true
				}
			}
		}
		return false
	}
	if f.Focus != nil && !match(f.Focus) {
		return false
	}
	return f.Ignore == nil || !match(f.Ignore)
}

// hasFunc says whether location l's lines include function fn.
func hasFunc(l *profile.Location, fn string) bool {
	for _, ln := range l.Line {
		if f := ln.Function; f != nil && (f.Name == fn || f.SystemName == fn) {
			return true
		}
	}
	return false
}

// annotateListing computes (or returns the cached) listing of fn.
func (s *Server) annotateListing(c echo.Context) (*profiles.Loaded, int, *annotation, error) {
	ctx := c.Request().Context()
	fn := c.QueryParam("fn")
	if fn == "" {
		return nil, 0, nil, httpError(http.StatusBadRequest, "fn is missing: give the function name, as the flame graph or top table shows it")
	}
	l, si, err := s.requestProfile(c)
	if err != nil {
		return nil, 0, nil, err
	}
	filter, err := queryFilter(c)
	if err != nil {
		return nil, 0, nil, err
	}
	in := c.QueryParam("in")
	skid := skidParam(c)
	key := fmt.Sprintf("%s/%s/%d/%q/%q/%s/%v", l.ID, l.Variant(), si, fn, in, filter.Key(), skid)
	as := s.annotator()
	if a, ok := as.listings.Get(key); ok {
		return l, si, a, nil
	}
	v, err, _ := as.flight.Do(key, func() (any, error) {
		a, err := s.buildAnnotation(background(ctx), l, si, fn, in, filter)
		if err != nil {
			return nil, err
		}
		as.listings.Add(key, a)
		return a, nil
	})
	if err != nil {
		return nil, 0, nil, err
	}
	return l, si, v.(*annotation), nil
}

// buildAnnotation finds fn's binary from the samples whose leaf is in fn
// (the heaviest mapping; the symbol holding its hottest address, or the
// one named in), else by its name in the sampled binaries' symbol tables.
func (s *Server) buildAnnotation(ctx context.Context, l *profiles.Loaded, si int, fn, in string, filter flame.Filter) (*annotation, error) {
	p := l.Profile
	eng, opt := s.dataTypeEngine(), s.dataTypeOptions(ctx, l.ID, true)
	var total int64
	byMapping := map[*profile.Mapping]int64{}
	fnWeight := map[*profile.Mapping]int64{}
	hot := map[*profile.Mapping]*profile.Location{}
	hotW := map[*profile.Location]int64{}
	var kept []*profile.Sample
	for _, smp := range p.Sample {
		if si >= len(smp.Value) || smp.Value[si] == 0 || !keepSample(filter, smp) {
			continue
		}
		w := smp.Value[si]
		total += w
		kept = append(kept, smp)
		if len(smp.Location) == 0 || smp.Location[0].Mapping == nil || smp.Location[0].Address == 0 {
			continue
		}
		leaf := smp.Location[0]
		byMapping[leaf.Mapping] += w
		if hasFunc(leaf, fn) {
			fnWeight[leaf.Mapping] += w
			hotW[leaf] += w
			if h := hot[leaf.Mapping]; h == nil || hotW[leaf] > hotW[h] {
				hot[leaf.Mapping] = leaf
			}
		}
	}
	var order []*profile.Mapping
	for m := range byMapping {
		order = append(order, m)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if fnWeight[a] != fnWeight[b] {
			return fnWeight[a] > fnWeight[b]
		}
		if byMapping[a] != byMapping[b] {
			return byMapping[a] > byMapping[b]
		}
		return a.ID < b.ID
	})
	if len(order) > 0 && fnWeight[order[0]] > 0 {
		n := 0
		for n < len(order) && fnWeight[order[n]] > 0 {
			n++
		}
		order = order[:n] // fn is where the profile says it is
	}
	if len(order) > 8 {
		order = order[:8] // the name search opens at most 8 binaries
	}
	names := symbolize.DSONames(order)
	var why []string
	for _, m := range order {
		tb, err := eng.OpenCode(ctx, m, opt)
		if err != nil {
			why = append(why, names[m]+": "+err.Error())
			continue
		}
		defer tb.Close()
		symPath := tb.Debug()
		sf, err := s.annotator().file(symPath)
		if err != nil {
			why = append(why, names[m]+": "+err.Error())
			continue
		}
		syms := annotate.Symbols(sf.Symbols())
		if len(syms) == 0 && tb.Exec() != tb.Debug() {
			if ef, err := s.annotator().file(tb.Exec()); err == nil {
				syms = annotate.Symbols(ef.Symbols())
			}
		}
		var sym elfsym.Symbol
		var ok bool
		if in != "" {
			sym, ok = syms.Named(in)
		} else if h := hot[m]; h != nil {
			if a, err := tb.ObjAddr(m, h.Address); err == nil {
				sym, ok = syms.At(a)
			}
		}
		if !ok {
			sym, ok = syms.Named(fn)
		}
		if !ok {
			// An inlined function has no symbol: the heaviest sampled
			// address whose source frames include it (an unsymbolized
			// profile names no function at all).
			sym, ok = inlinedIn(sf, syms, tb, m, kept, si, fn)
		}
		if !ok {
			why = append(why, names[m]+": no symbol or inlined function "+fn)
			continue
		}
		f := syms.Range(sym)
		// The samples of m, as object addresses, and the other symbols
		// fn's code is in (copies of an inlined function).
		var samples []datatype.Sample
		copies := map[string]bool{}
		for _, smp := range kept {
			leaf := smp.Location[0:1]
			if len(leaf) == 0 || leaf[0].Mapping != m {
				continue
			}
			a, err := tb.ObjAddr(m, leaf[0].Address)
			if err != nil {
				continue
			}
			if a >= f.Lo && a < f.Hi {
				samples = append(samples, datatype.Sample{PC: a, Weight: smp.Value[si]})
			} else if hasFunc(leaf[0], fn) {
				if o, ok := syms.At(a); ok && o.Name != sym.Name {
					copies[o.Name] = true
				}
			}
		}
		lst, err := annotate.Build(tb.Binary(), sf, syms, f, samples)
		if err != nil {
			return nil, httpError(http.StatusUnprocessableEntity, "cannot list %s in %s: %v", sym.Name, names[m], err)
		}
		a := &annotation{listing: lst, dso: names[m], buildID: m.BuildID, source: tb.Source(), total: total}
		for o := range copies {
			a.others = append(a.others, o)
		}
		sort.Strings(a.others)
		return a, nil
	}
	if len(order) == 0 {
		return nil, httpError(http.StatusNotFound, "no samples with an address for this sample type: the annotate view needs a profile that keeps addresses and build IDs (perf.data, or pprof with mappings)")
	}
	return nil, httpError(http.StatusNotFound, "function %q not found (%s); pick a function from the flame graph or top table", fn, strings.Join(why, "; "))
}

// annotateJSON is the body of /p/ID/annotate.json:
//
//	{"fn", "symbol", "dso", "buildId", "arch", "debugSource", "unit",
//	 "total" (the function's self samples), "profileTotal",
//	 "insns": [{"addr", "bytes", "text", "target", "targetLabel",
//	            "self", "skidIn", "skidFrom", "source": [{"func", "file", "line"}],
//	            "type", "offset", "member", "kind", "reason", "label"}],
//	 "inlinedIn": [symbols holding other copies of fn]}
type annotateJSON struct {
	Fn           string     `json:"fn"`
	Symbol       string     `json:"symbol"`
	DSO          string     `json:"dso"`
	BuildID      string     `json:"buildId,omitempty"`
	Arch         string     `json:"arch"`
	DebugSource  string     `json:"debugSource,omitempty"`
	SampleType   string     `json:"sampleType"`
	Unit         string     `json:"unit"`
	Total        int64      `json:"total"`
	ProfileTotal int64      `json:"profileTotal"`
	Insns        []insnJSON `json:"insns"`
	InlinedIn    []string   `json:"inlinedIn,omitempty"`
	Skid         bool       `json:"skidCorrection"`
	Hottest      []uint64   `json:"hottest"` // the heaviest instructions' addresses, heaviest first
}

type insnJSON struct {
	Addr        uint64       `json:"addr"`
	Bytes       string       `json:"bytes"`
	Text        string       `json:"text"`
	Target      uint64       `json:"target,omitempty"`
	TargetLabel string       `json:"targetLabel,omitempty"`
	Self        int64        `json:"self"`
	SkidIn      int64        `json:"skidIn,omitempty"`
	SkidFrom    uint64       `json:"skidFrom,omitempty"`
	Source      []sourceJSON `json:"source,omitempty"`
	Type        string       `json:"type"`
	Offset      int64        `json:"offset"`
	Member      string       `json:"member,omitempty"`
	Kind        string       `json:"kind"`
	Reason      string       `json:"reason,omitempty"`
	Label       string       `json:"label"`
}

type sourceJSON struct {
	Func string `json:"func"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

func (s *Server) handleAnnotateJSON(c echo.Context) error {
	l, si, a, err := s.annotateListing(c)
	if err != nil {
		return err
	}
	st := l.Meta.SampleTypes[si]
	lst := a.listing
	out := annotateJSON{Fn: c.QueryParam("fn"), Symbol: lst.Func.Name, DSO: a.dso, BuildID: a.buildID, Arch: lst.Arch,
		DebugSource: a.source, SampleType: st.Type, Unit: st.Unit, Total: lst.Total, ProfileTotal: a.total,
		InlinedIn: a.others, Skid: skidParam(c), Insns: make([]insnJSON, 0, len(lst.Rows))}
	for _, i := range lst.Hottest(5) {
		out.Hottest = append(out.Hottest, lst.Rows[i].PC)
	}
	for _, r := range lst.Rows {
		ij := insnJSON{Addr: r.PC, Bytes: fmt.Sprintf("%x", r.Bytes), Text: r.Text, TargetLabel: r.TargetLabel,
			Self: r.Self, SkidIn: r.SkidIn, SkidFrom: r.SkidFrom,
			Type: r.Access.Type, Offset: r.Access.Offset, Member: r.Access.Member, Kind: r.Access.Kind, Reason: r.Access.Reason, Label: r.Access.Label()}
		if r.HasTarget {
			ij.Target = r.Target
		}
		for _, f := range r.Frames {
			ij.Source = append(ij.Source, sourceJSON{Func: elfsym.Demangle(f.Name, false), File: f.File, Line: f.Line})
		}
		out.Insns = append(out.Insns, ij)
	}
	return c.JSON(http.StatusOK, out)
}

// maxHot is how many of the heaviest instructions the page highlights.
const maxHot = 3

func (s *Server) handleAnnotatePage(c echo.Context) error {
	id, siq, fn := c.Param("id"), c.QueryParam("si"), c.QueryParam("fn")
	l, si, a, err := s.annotateListing(c)
	if err != nil {
		return err
	}
	st := l.Meta.SampleTypes[si]
	lst := a.listing
	q := filterQuery(c)
	q.Set("fn", fn)
	if siq != "" {
		q.Set("si", siq)
	}
	if c.QueryParam("in") != "" {
		q.Set("in", c.QueryParam("in"))
	}
	if !skidParam(c) {
		q.Set("skid", "0")
	}
	page := views.AnnotatePage{
		Page:     views.Page{Title: displayName(l.Meta, id) + " · annotate " + fn, Nav: nav(id, siq, "")},
		ID:       id,
		Fn:       fn,
		Symbol:   lst.Func.Name,
		DSO:      a.dso,
		BuildID:  a.buildID,
		Arch:     lst.Arch,
		Source:   a.source,
		Range:    fmt.Sprintf("%#x–%#x", lst.Func.Lo, lst.Func.Hi),
		Unit:     st.Unit,
		Total:    views.FormatValue(lst.Total, st.Unit),
		Share:    views.Percent(lst.Total, a.total),
		JSONURL:  withQuery("/p/"+id+"/annotate.json", q),
		FlameURL: withQuery(profileURL(id, "", siq), url.Values{"q": {regexpQuote(fn)}}),
		Skid:     skidParam(c),
		Filtered: c.QueryParam("f") != "" || c.QueryParam("i") != "",
	}
	sq := url.Values{"fn": {fn}}
	if siq != "" {
		sq.Set("si", siq)
	}
	page.SourceURL = "/p/" + id + "/source?" + sq.Encode()
	for _, o := range a.others {
		oq := url.Values{}
		for k, v := range q {
			oq[k] = v
		}
		oq.Set("in", o)
		page.Others = append(page.Others, views.NavLink{Label: o, Href: "/p/" + id + "/annotate?" + oq.Encode()})
	}
	toggle := url.Values{}
	for k, v := range q {
		toggle[k] = v
	}
	if page.Skid {
		toggle.Set("skid", "0")
	} else {
		toggle.Del("skid")
	}
	page.SkidToggleURL = "/p/" + id + "/annotate?" + toggle.Encode()
	hot := map[int]bool{}
	for _, i := range lst.Hottest(maxHot) {
		hot[i] = true
	}
	var maxSelf int64
	for _, r := range lst.Rows {
		maxSelf = max(maxSelf, r.Self)
	}
	anchor := func(pc uint64) string { return fmt.Sprintf("a%x", pc) }
	for i, r := range lst.Rows {
		if r.NewSource && len(r.Frames) > 0 {
			sl := views.AnnotateSource{}
			f := r.Frames[0]
			sl.Where = fmt.Sprintf("%s:%d", f.File, f.Line)
			if f.File == "" {
				sl.Where = "(no line information)"
			}
			for _, in := range r.Frames[:len(r.Frames)-1] {
				sl.Inlined = append(sl.Inlined, elfsym.Demangle(in.Name, false))
			}
			page.Rows = append(page.Rows, views.AnnotateRow{Source: &sl})
		}
		row := views.AnnotateRow{
			Anchor: anchor(r.PC),
			Addr:   fmt.Sprintf("%x", r.PC),
			Text:   r.Text,
			Hot:    hot[i],
			Label:  r.Access.Label(),
			Kind:   r.Access.Kind,
			Reason: r.Access.Reason,
		}
		if r.Access.Var != "" && r.Access.Kind != datatype.KindUnknown {
			row.Reason = "via " + r.Access.Var + ": " + r.Access.Reason
		}
		if r.Access.Kind == datatype.KindUnknown {
			row.Label = "(unknown)"
		}
		if r.Self > 0 {
			row.Count = views.FormatValue(r.Self, st.Unit)
			row.Pct = views.Percent(r.Self, lst.Total)
			row.Frac = float64(r.Self) / float64(max(maxSelf, 1))
		}
		if r.HasTarget {
			row.TargetLabel = r.TargetLabel
			if r.TargetRow >= 0 {
				row.TargetHref = "#" + anchor(r.Target)
			}
		}
		if page.Skid && r.SkidFrom != 0 && r.Self > 0 {
			row.SkidNote = fmt.Sprintf("counted on %x (skid)", r.SkidFrom)
			row.SkidHref = "#" + anchor(r.SkidFrom)
		}
		if page.Skid && r.SkidIn > 0 {
			row.SkidIn = "+" + views.FormatValue(r.SkidIn, st.Unit) + " skidded here"
		}
		page.Rows = append(page.Rows, row)
	}
	return Render(c, http.StatusOK, views.Annotate(page))
}

// maxInlineProbe bounds the distinct addresses looked up to find where an
// inlined function's code is.
const maxInlineProbe = 4096

// inlinedIn returns the symbol holding the heaviest sampled address of m
// whose source frames include fn.
func inlinedIn(lines annotate.Lines, syms annotate.Symbols, tb *symbolize.CodeHandle, m *profile.Mapping, kept []*profile.Sample, si int, fn string) (elfsym.Symbol, bool) {
	w := map[uint64]int64{}
	for _, smp := range kept {
		if len(smp.Location) == 0 || smp.Location[0].Mapping != m {
			continue
		}
		if a, err := tb.ObjAddr(m, smp.Location[0].Address); err == nil && (len(w) < maxInlineProbe || w[a] > 0) {
			w[a] += smp.Value[si]
		}
	}
	var best uint64
	var bestW int64
	var frames []elfsym.Frame
	for a, v := range w {
		if v < bestW || v == bestW && a > best {
			continue
		}
		frames, _ = lines.Lookup(a, frames[:0])
		for _, f := range frames[:max(len(frames)-1, 0)] {
			if f.Name == fn || elfsym.Demangle(f.Name, false) == fn {
				best, bestW = a, v
				break
			}
		}
	}
	if bestW == 0 {
		return elfsym.Symbol{}, false
	}
	return syms.At(best)
}
