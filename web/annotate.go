package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/pprof/profile"
	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
	"viewer/views"
	"viewer/web/profiles"
)

// The annotate view (/p/ID/annotate?fn=NAME): a function's instructions
// with their self samples, source lines and data-type accesses, listed by
// the engine the data-type page reads binaries with (symbolize.Listing: its
// locator, its one store keyed by build ID and --symbol-cache-size budget).
// What stays here is the request, the key of the listings recently shown
// (kept in a web/viewcache cache, computed once however many requests ask
// at the same time), and the page.

// lister is the part of the engine the annotate view calls.
type lister interface {
	Listing(ctx context.Context, p *profile.Profile, req symbolize.ListingRequest) (*symbolize.Listing, error)
}

// annotateCache is how many listings are kept.
const annotateCache = 32

// annotateKey names a listing: the profile (and its variant) and sample
// type, the function and which copy of it, and the choices that change it.
type annotateKey struct {
	id, variant    string
	si             int
	fn, in, inline string
	filter         string // flame.Filter.Key
	skid           bool
}

// Profile is the profile the listing was built from (viewcache.Key).
func (k annotateKey) Profile() string { return k.id }

// annotateListing computes (or returns the cached) listing of fn.
func (s *Server) annotateListing(c echo.Context) (*profiles.Loaded, int, *symbolize.Listing, error) {
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
	in, inline := c.QueryParam("in"), c.QueryParam("inline")
	skid := skidParam(c)
	key := annotateKey{id: l.ID, variant: l.Variant(), si: si, fn: fn, in: in, inline: inline, filter: filter.Key(), skid: skid}
	a, err := s.annotations.Build(key, func() (*symbolize.Listing, bool, error) {
		cctx := background(ctx) // outlives the request that started it; joined by others
		var eng lister = s.dataTypeEngine()
		a, err := eng.Listing(cctx, l.Profile, symbolize.ListingRequest{
			Fn: fn, In: in, SampleIndex: si, Inline: inline,
			Keep:     filter.KeepsSample,
			LeafKept: filter.KeepsLeaf,
			Options:  s.dataTypeOptions(cctx, l.ID, true),
		})
		var le *symbolize.ListingError
		switch {
		case errors.As(err, &le):
			return nil, false, err // the handlers map it (the page shows a Sampled one)
		case err != nil: // the function was found but could not be decoded
			return nil, false, httpError(http.StatusUnprocessableEntity, "%v", err)
		}
		return a, true, nil
	})
	if err != nil {
		return l, si, nil, err
	}
	return l, si, a, nil
}

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
		return httpStatusError(err)
	}
	st := l.Meta.SampleTypes[si]
	lst := a.Listing
	out := annotateJSON{Fn: c.QueryParam("fn"), Symbol: lst.Func.Name, DSO: a.DSO, BuildID: a.BuildID, Arch: lst.Arch,
		DebugSource: a.Source, SampleType: st.Type, Unit: st.Unit, Total: lst.Total, ProfileTotal: a.Total,
		InlinedIn: a.Others, Skid: skidParam(c), Insns: make([]insnJSON, 0, len(lst.Rows)),
		Inline: inlineMode(c), Copies: a.Copies}
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
			ij.Source = append(ij.Source, sourceJSON{Func: symbolize.Demangle(f.Name), File: f.File, Line: f.Line})
		}
		out.Insns = append(out.Insns, ij)
	}
	return c.JSON(http.StatusOK, out)
}

// inlineMode is the ?inline= choice: "merge" lists every copy of an
// inlined function under its source lines, anything else one copy.
func inlineMode(c echo.Context) string {
	if c.QueryParam("inline") == symbolize.InlineMerge {
		return symbolize.InlineMerge
	}
	return symbolize.InlineCopy
}

// maxHot is how many of the heaviest instructions the page highlights.
const maxHot = 3

func (s *Server) handleAnnotatePage(c echo.Context) error {
	id, siq, fn := c.Param("id"), c.QueryParam("si"), c.QueryParam("fn")
	l, si, a, err := s.annotateListing(c)
	var le *symbolize.ListingError
	if errors.As(err, &le) && le.Sampled != nil {
		return s.annotateMissingPage(c, l, si, le.Sampled)
	}
	if err != nil {
		return httpStatusError(err)
	}
	st := l.Meta.SampleTypes[si]
	lst := a.Listing
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
		Page:     withHelp(s.profilePage(c, id, l.Meta, displayName(l.Meta, id)+" · annotate "+fn, nav(c, id, "")), "/docs/types#annotate-view"),
		ID:       id,
		Fn:       fn,
		Symbol:   lst.Func.Name,
		DSO:      a.DSO,
		BuildID:  a.BuildID,
		Arch:     lst.Arch,
		Source:   a.Source,
		Range:    fmt.Sprintf("%#x–%#x", lst.Func.Lo, lst.Func.Hi),
		Unit:     st.Unit,
		Total:    sampling.FormatValue(lst.Total, st.Unit),
		Share:    sampling.Percent(lst.Total, a.Total),
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
	for _, o := range a.Others {
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
	page.Merged, page.Copies = inlineMode(c) == symbolize.InlineMerge, a.Copies
	if len(a.Others) > 0 || page.Merged {
		mq := url.Values{}
		for k, v := range q {
			mq[k] = v
		}
		mq.Del("in")
		if page.Merged {
			mq.Del("inline")
		} else {
			mq.Set("inline", symbolize.InlineMerge)
		}
		page.MergeToggleURL = "/p/" + id + "/annotate?" + mq.Encode()
	}
	hot := map[int]bool{}
	for _, i := range lst.Hottest(maxHot) {
		hot[i] = true
	}
	var maxSelf int64
	selfs := make([]int64, 0, len(lst.Rows))
	for _, r := range lst.Rows {
		maxSelf = max(maxSelf, r.Self)
		selfs = append(selfs, r.Self)
	}
	// One unit for the column, named by what it holds ("CPU time", not
	// "Samples", for a time).
	col := sampling.ColumnOf(st.Unit, selfs...)
	page.ValueHead = views.Quantity(st.Type, st.Unit)
	page.ValueTitle = columnTitle("Self", st.Type, col)
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
				sl.Inlined = append(sl.Inlined, symbolize.Demangle(in.Name))
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
		if r.Access.Var != "" && r.Access.Kind != symbolize.DataKindUnknown {
			row.Reason = "via " + r.Access.Var + ": " + r.Access.Reason
		}
		if r.Access.Kind == symbolize.DataKindUnknown {
			row.Label = "(unknown)"
		}
		if r.Self > 0 {
			row.Count = col.Format(r.Self)
			row.Pct = sampling.Percent(r.Self, lst.Total)
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
			row.SkidIn = "+" + sampling.FormatValue(r.SkidIn, st.Unit) + " skidded here"
		}
		page.Rows = append(page.Rows, row)
	}
	return Render(c, http.StatusOK, views.Annotate(page))
}

// annotateMissingPage is the annotate view of a function whose executable
// could not be found: what is missing and how to provide it, and the
// function's self samples per address as the profile records them.
func (s *Server) annotateMissingPage(c echo.Context, l *profiles.Loaded, si int, sm *symbolize.Sampled) error {
	id, siq, fn := c.Param("id"), c.QueryParam("si"), c.QueryParam("fn")
	st := l.Meta.SampleTypes[si]
	sq := url.Values{"fn": {fn}}
	if siq != "" {
		sq.Set("si", siq)
	}
	page := views.AnnotateMissingPage{
		Page:      s.profilePage(c, id, l.Meta, displayName(l.Meta, id)+" · annotate "+fn, nav(c, id, "")),
		ID:        id,
		Fn:        fn,
		DSO:       sm.DSO,
		BuildID:   sm.BuildID,
		Why:       sm.Why,
		Unit:      st.Unit,
		Total:     sampling.FormatValue(sm.Total, st.Unit),
		Share:     sampling.Percent(sm.Total, sm.ProfileTotal),
		FlameURL:  withQuery(profileURL(id, "", siq), url.Values{"q": {regexpQuote(fn)}}),
		SourceURL: "/p/" + id + "/source?" + sq.Encode(),
		Filtered:  c.QueryParam("f") != "" || c.QueryParam("i") != "",
	}
	var maxSelf int64
	for _, a := range sm.Addrs {
		maxSelf = max(maxSelf, a.Self)
	}
	for _, a := range sm.Addrs {
		row := views.AnnotateAddr{
			Addr:  fmt.Sprintf("%x", a.Addr),
			Count: sampling.FormatValue(a.Self, st.Unit),
			Pct:   sampling.Percent(a.Self, sm.Total),
			Frac:  float64(a.Self) / float64(max(maxSelf, 1)),
		}
		if len(a.Frames) > 0 {
			if f := a.Frames[0]; f.File != "" {
				row.Where = fmt.Sprintf("%s:%d", f.File, f.Line)
			}
			for _, in := range a.Frames[:len(a.Frames)-1] {
				row.Inlined = append(row.Inlined, symbolize.Demangle(in.Name))
			}
		}
		page.Addrs = append(page.Addrs, row)
	}
	return Render(c, http.StatusOK, views.AnnotateMissing(page))
}
