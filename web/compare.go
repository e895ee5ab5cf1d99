package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/views"
	"viewer/web/flame"
	"viewer/web/profiles"
)

// maxDiffTop bounds the rows of diff.json's top table.
const maxDiffTop = 500

// maxPickerRows is how many functions the sandwich page's picker asks
// top.json for (the render budget may list fewer).
const maxPickerRows = 100000

// linkedID finds a profile ID in what a user pasted: a bare ID or any
// link to one of its pages (/p/ID, /p/ID/top, ...).
var linkedID = regexp.MustCompile(`(?:^|/p/)([a-z2-7]{20})(?:$|[/?#])`)

func parseLinkedID(s string) (string, bool) {
	m := linkedID.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil || !profiles.ValidID(m[1]) {
		return "", false
	}
	return m[1], true
}

// handleCompare turns the compare picker of /p/ID (base=LINK or ID) into a
// redirect to /p/BASE/diff/ID, keeping si and the filters.
func (s *Server) handleCompare(c echo.Context) error {
	id := c.Param("id")
	base, ok := parseLinkedID(c.QueryParam("base"))
	if !ok {
		return httpError(http.StatusBadRequest, "base=%q: paste the link or the 20-character ID of the profile to compare with", c.QueryParam("base"))
	}
	if _, err := s.Meta(c.Request().Context(), base); err != nil {
		return err
	}
	q := filterQuery(c)
	if si := c.QueryParam("si"); si != "" {
		q.Set("si", si)
	}
	return c.Redirect(http.StatusSeeOther, withQuery(diffURL(base, id, ""), q))
}

func diffURL(base, id, suffix string) string { return "/p/" + base + "/diff/" + id + suffix }

// diffSI resolves si for both profiles: by name in each, so a diff of two
// profiles with their sample types in different orders compares like
// with like.
func (s *Server) diffSI(ctx context.Context, base, id *profiles.Loaded, si string) (bi, i int, err error) {
	if i, err = resolveSI(id.Meta, si); err != nil {
		return 0, 0, err
	}
	name := id.Meta.SampleTypes[i].Type
	bi, err = resolveSI(base.Meta, name)
	if err != nil {
		return 0, 0, sampleTypesDiffer(base.ID, base.Meta, id.ID, id.Meta, name)
	}
	return bi, i, nil
}

// sampleTypesDiffer is the diff's error when the base profile lacks the
// sample type shown: it lists what each side has, and those in common.
func sampleTypesDiffer(baseID string, bm *profiles.Meta, id string, m *profiles.Meta, name string) error {
	has := map[string]bool{}
	for _, t := range sampleTypeNames(bm) {
		has[t] = true
	}
	var common []string
	for _, t := range sampleTypeNames(m) {
		if has[t] {
			common = append(common, t)
		}
	}
	next := "They have none in common, so there is nothing to compare: diff two profiles of the same kind (e.g. two CPU profiles)."
	if len(common) > 0 {
		next = "To compare, pick one both have with ?si=: " + strings.Join(common, ", ") + "."
	}
	return withHeading("Sample types differ", httpError(http.StatusBadRequest,
		"The new profile %s is shown as %q, which the base profile %s does not have. The base has: %s. The new one has: %s. %s",
		id, name, baseID, strings.Join(sampleTypeNames(bm), ", "), strings.Join(sampleTypeNames(m), ", "), next))
}

func sampleTypeNames(m *profiles.Meta) []string {
	var out []string
	for _, st := range m.SampleTypes {
		out = append(out, st.Type)
	}
	return out
}

func (s *Server) handleDiffJSON(c echo.Context) error {
	ctx := c.Request().Context()
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	base, err := s.Profile(ctx, c.Param("base"))
	if err != nil {
		return err
	}
	cur, err := s.Profile(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	bi, i, err := s.diffSI(ctx, base, cur, c.QueryParam("si"))
	if err != nil {
		return err
	}
	// Diffs share the tree cache, keyed by both profiles.
	k := treeKey{id: base.ID + "/" + cur.ID, variant: base.Variant() + "/" + cur.Variant(), si: i, kind: fmt.Sprintf("diff%d", bi), filter: f.Key()}
	e, err := s.trees.Build(k, func() (*encoded, bool, error) {
		var body []byte
		if err := s.render(ctx, func(opt flame.Options) {
			opt.MinFraction, opt.Filter = flame.DefaultMinFraction, f
			body = flame.Diff(base.Profile, bi, cur.Profile, i, opt).DiffJSON(maxDiffTop)
		}); err != nil {
			return nil, false, err
		}
		return &encoded{plain: body, gz: gzipBytes(body), etag: fmt.Sprintf(`"diff-%s-%s-%s-%s-%d-%d-v%d%s"`, base.ID, cur.ID,
			strings.TrimSuffix(base.Variant(), ".pb.gz"), strings.TrimSuffix(cur.Variant(), ".pb.gz"), bi, i, flame.DiffJSONVersion, filterETag(f))}, true, nil
	})
	if err != nil {
		return err
	}
	return serveEncoded(c, e, echo.MIMEApplicationJSON)
}

func (s *Server) handleDiffPage(c echo.Context) error {
	ctx := c.Request().Context()
	baseID, id := c.Param("base"), c.Param("id")
	if _, err := queryFilter(c); err != nil {
		return err
	}
	bm, err := s.Meta(ctx, baseID)
	if err != nil {
		return err
	}
	m, i, err := s.pageMeta(c, id)
	if err != nil {
		return err
	}
	si := m.SampleTypes[i].Type
	if _, err := resolveSI(bm, si); err != nil {
		return sampleTypesDiffer(baseID, bm, id, m, si)
	}
	q := filterQuery(c)
	keep := url.Values{}
	for k, v := range q {
		keep[k] = v
	}
	keep.Set("si", si)
	// The swapped diff is the same view: its search, zoom and colors too
	// (diff.js keeps the link in step as they change).
	swap := url.Values{}
	for k, v := range keep {
		swap[k] = v
	}
	for _, k := range []string{"q", "z", "color"} {
		if v := c.QueryParams()[k]; len(v) > 0 {
			swap[k] = v
		}
	}
	page := views.DiffPage{
		Page:        s.diffPage(c, baseID, bm, id, m, "Diff "+displayName(bm, baseID)+" → "+displayName(m, id), nav(c, id, "")),
		BaseID:      baseID,
		ID:          id,
		BaseName:    bm.Name,
		Name:        m.Name,
		BaseURL:     withQuery(profileURL(baseID, "", si), q),
		URL:         withQuery(profileURL(id, "", si), q),
		SwapURL:     withQuery(diffURL(id, baseID, ""), swap),
		DataURL:     withQuery(diffURL(baseID, id, "/diff.json"), keep),
		SampleTypes: sampleTypes(m, i),
		SI:          si,
		Filter:      filterBar(c, diffURL(baseID, id, "")),
	}
	for _, p := range []struct{ id, role string }{{baseID, "base"}, {id, "new"}} {
		if n := s.diffNote(ctx, p.id, p.role); n != "" {
			page.Notes = append(page.Notes, views.NavLink{Label: n, Href: profileURL(p.id, "", si)})
		}
	}
	return Render(c, http.StatusOK, views.Diff(page))
}

// diffNote says when one side of a diff still lacks names: frames match by
// name, so its raw addresses would not meet the other side's functions.
// Viewing the diff queues the symbolization, as viewing the profile does.
func (s *Server) diffNote(ctx context.Context, id, role string) string {
	m, err := s.Meta(ctx, id)
	if err != nil || len(m.Mappings) == 0 || m.AllNamed() {
		return ""
	}
	if l, err := s.Profile(ctx, id); err == nil && l.Symbolized {
		return ""
	}
	var fp views.FlamePage
	s.fillSymbolization(ctx, id, m, &fp) // symbolization.go: queues it when it can
	if fp.EventsURL != "" {
		return fmt.Sprintf("The %s profile is being symbolized. Frames are matched by name, so its raw addresses do not meet the other profile's functions yet: reload this diff when it is done.", role)
	}
	n, real := m.Unnamed(), 0
	for _, mp := range m.Mappings {
		if !symbolize.IsPseudoBinary(mp.File, mp.BuildID) {
			real++
		}
	}
	return fmt.Sprintf("%d of the %s profile's %d binaries have no names (see its page for why). Frames are matched by name, so their raw addresses only meet the same binary's addresses in the other profile.", n, role, real)
}

// handleSandwichJSON serves /p/ID/sandwich.json?fn=NAME: the function's
// merged callers and callees, built on the server from every sample so
// that frames merged away in flame.json still count (format in static/docs/pages.md).
func (s *Server) handleSandwichJSON(c echo.Context) error {
	fn := c.QueryParam("fn")
	if fn == "" {
		return httpError(http.StatusBadRequest, "fn is missing: give the function name, as the flame graph shows it")
	}
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	l, i, err := s.requestProfile(c)
	if err != nil {
		return err
	}
	k := treeKey{id: l.ID, variant: l.Variant(), si: i, kind: "sandwich\x00" + fn, filter: f.Key()}
	e, err := s.trees.Build(k, func() (*encoded, bool, error) {
		var body []byte
		if err := s.render(c.Request().Context(), func(opt flame.Options) {
			opt.MinFraction, opt.Filter = flame.DefaultMinFraction, f
			body = flame.BuildSandwich(l.Profile, i, fn, opt).JSON()
		}); err != nil {
			return nil, false, err
		}
		return &encoded{plain: body, gz: gzipBytes(body), etag: fmt.Sprintf(`"sw-%s-%s-%d-%x%s"`, l.ID, l.Variant(), i, fnHash(fn), filterETag(f))}, true, nil
	})
	if err != nil {
		return err
	}
	return serveEncoded(c, e, echo.MIMEApplicationJSON)
}

func fnHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

func (s *Server) handleSandwichPage(c echo.Context) error {
	id := c.Param("id")
	fn := c.QueryParam("fn") // empty: the page shows its function picker only
	if _, err := queryFilter(c); err != nil {
		return err
	}
	m, i, err := s.pageMeta(c, id)
	if err != nil {
		return err
	}
	si := m.SampleTypes[i].Type
	q := filterQuery(c)
	data := url.Values{"fn": {fn}, "si": {si}}
	top := url.Values{"si": {si}, "n": {strconv.Itoa(maxPickerRows)}}
	for k, v := range q {
		data[k] = v
		top[k] = v
	}
	title, dataURL := displayName(m, id)+" · "+fn, "/p/"+id+"/sandwich.json?"+data.Encode()
	if fn == "" {
		title, dataURL = displayName(m, id)+" · sandwich", ""
	}
	page := views.SandwichPage{
		Page:        s.profilePage(c, id, m, title, nav(c, id, "")),
		ID:          id,
		Fn:          fn,
		DataURL:     dataURL,
		TopURL:      "/p/" + id + "/top.json?" + top.Encode(),
		FlameURL:    withQuery(profileURL(id, "", si), q),
		SourceURL:   "/p/" + id + "/source?" + url.Values{"fn": {fn}, "si": {si}}.Encode(),
		SampleTypes: sampleTypes(m, i),
		SI:          si,
		Filter:      filterBar(c, "/p/"+id+"/sandwich"),
	}
	page.Filter.Keep = append([][2]string{{"fn", fn}}, page.Filter.Keep...)
	return Render(c, http.StatusOK, views.Sandwich(page))
}
