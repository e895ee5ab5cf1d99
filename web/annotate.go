package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
	copies  []string // the symbols a merged listing combines
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

// keepSample applies the focus, ignore and time filters to one sample, as
// pprof does: a frame matches by function name or by its binary's path.
func keepSample(f flame.Filter, s *profile.Sample) bool {
	if f.Time != nil && !f.Time.Has(s) {
		return false
	}
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

// leafKept applies hide and show to a sample's leaf location as the flame
// graph applies them to every frame (a frame matches by function name or
// its binary's path): a leaf all of whose frames are hidden, or none of
// them shown, is not drawn, so its sample counts on no instruction.
func leafKept(f flame.Filter, l *profile.Location) bool {
	if f.Hide == nil && f.Show == nil {
		return true
	}
	mapping := ""
	if l.Mapping != nil {
		mapping = l.Mapping.File
	}
	match := func(re interface{ MatchString(string) bool }, name string) bool {
		return re.MatchString(name) || mapping != "" && re.MatchString(mapping)
	}
	names := []string{""} // a location without lines is one frame
	if len(l.Line) > 0 {
		names = names[:0]
		for _, ln := range l.Line {
			if ln.Function != nil {
				names = append(names, ln.Function.Name)
			} else {
				names = append(names, "")
			}
		}
	}
	for _, name := range names {
		if (f.Hide == nil || !match(f.Hide, name)) && (f.Show == nil || match(f.Show, name)) {
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
	l, err := s.Profile(ctx, c.Param("id"))
	if err != nil {
		return nil, 0, nil, err
	}
	si, err := resolveSI(l.Meta, c.QueryParam("si"))
	if err != nil {
		return nil, 0, nil, err
	}
	filter, err := queryFilter(c)
	if err != nil {
		return nil, 0, nil, err
	}
	in, inline := c.QueryParam("in"), c.QueryParam("inline")
	skid := skidParam(c)
	key := fmt.Sprintf("%s/%s/%d/%q/%q/%q/%s/%v", l.ID, l.Variant(), si, fn, in, inline, filter.Key(), skid)
	as := s.annotator()
	if a, ok := as.listings.Get(key); ok {
		return l, si, a, nil
	}
	v, err, _ := as.flight.Do(key, func() (any, error) {
		a, err := s.buildAnnotation(background(ctx), l, si, fn, in, inline, filter)
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

// buildAnnotation lists fn as annotate.ForProfile finds it, with the
// binaries opened as the data-type page opens them.
func (s *Server) buildAnnotation(ctx context.Context, l *profiles.Loaded, si int, fn, in, inline string, filter flame.Filter) (*annotation, error) {
	op := annotateOpener{as: s.annotator(), eng: s.dataTypeEngine(), opt: s.dataTypeOptions(ctx, l.ID, true)}
	res, err := annotate.ForProfile(ctx, op, l.Profile, annotate.Request{Fn: fn, In: in, SI: si, Inline: inline,
		Keep: func(smp *profile.Sample) bool { return keepSample(filter, smp) }, LeafKept: func(loc *profile.Location) bool { return leafKept(filter, loc) },
		DSONames: symbolize.DSONames})
	var re *annotate.RequestError
	switch {
	case errors.As(err, &re) && re.NotFound:
		return nil, httpError(http.StatusNotFound, "%s", re.Msg)
	case errors.As(err, &re):
		return nil, httpError(http.StatusBadRequest, "%s", re.Msg)
	case err != nil:
		return nil, httpError(http.StatusUnprocessableEntity, "%v", err)
	}
	return &annotation{listing: res.Listing, dso: res.DSO, buildID: res.BuildID, source: res.Source, total: res.Total, others: res.Others, copies: res.Copies}, nil
}

// annotateOpener opens binaries for annotate.ForProfile: code and DWARF
// from the data-type engine's store, symbol files from the annotator's.
type annotateOpener struct {
	as  *annotateService
	eng *symbolize.Symbolizer
	opt symbolize.DataTypeOptions
}

func (o annotateOpener) OpenCode(ctx context.Context, m *profile.Mapping) (annotate.Handle, error) {
	h, err := o.eng.OpenCode(ctx, m, o.opt)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (o annotateOpener) SymbolFile(path string) (annotate.SymbolFile, error) { return o.as.file(path) }

// annotateJSON is the body of /p/ID/annotate.json:
//
//	{"fn", "symbol", "dso", "buildId", "arch", "debugSource", "unit",
//	 "total" (the function's self samples), "profileTotal",
//	 "insns": [{"addr", "bytes", "text", "target", "targetLabel",
//	            "self", "skidIn", "skidFrom", "source": [{"func", "file", "line"}],
//	            "type", "offset", "member", "kind", "reason", "label"}],
//	 "inlinedIn": [symbols holding other copies of fn],
//	 "inline": "copy" or "merge", "copies": [the symbols merged]}
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
	Inline       string     `json:"inline"`           // "copy" or "merge" (?inline=)
	Copies       []string   `json:"copies,omitempty"` // the symbols a merged listing combines
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
	Symbol      string       `json:"symbol,omitempty"` // the copy holding it, in a merged listing
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
		InlinedIn: a.others, Skid: skidParam(c), Insns: make([]insnJSON, 0, len(lst.Rows)),
		Inline: inlineMode(c), Copies: a.copies}
	for _, i := range lst.Hottest(5) {
		out.Hottest = append(out.Hottest, lst.Rows[i].PC)
	}
	for _, r := range lst.Rows {
		ij := insnJSON{Addr: r.PC, Bytes: fmt.Sprintf("%x", r.Bytes), Text: r.Text, TargetLabel: r.TargetLabel,
			Self: r.Self, SkidIn: r.SkidIn, SkidFrom: r.SkidFrom,
			Type: r.Access.Type, Offset: r.Access.Offset, Member: r.Access.Member, Kind: r.Access.Kind, Reason: r.Access.Reason, Label: r.Access.Label(), Symbol: r.Symbol}
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

// inlineMode is the ?inline= choice: "merge" lists every copy of an
// inlined function under its source lines, anything else one copy.
func inlineMode(c echo.Context) string {
	if c.QueryParam("inline") == annotate.InlineMerge {
		return annotate.InlineMerge
	}
	return annotate.InlineCopy
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
	if c.QueryParam("inline") != "" {
		q.Set("inline", c.QueryParam("inline"))
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
	page.Merged, page.Copies = inlineMode(c) == annotate.InlineMerge, a.copies
	if len(a.others) > 0 || page.Merged {
		mq := url.Values{}
		for k, v := range q {
			mq[k] = v
		}
		mq.Del("in")
		if page.Merged {
			mq.Del("inline")
		} else {
			mq.Set("inline", annotate.InlineMerge)
		}
		page.MergeToggleURL = "/p/" + id + "/annotate?" + mq.Encode()
	}
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
			sl.Copy = r.Symbol
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
