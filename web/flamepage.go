package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"github.com/labstack/echo/v4"

	"viewer/symbolize/sampling"
	"viewer/views"
	"viewer/web/flame"
	"viewer/web/ingest"
	"viewer/web/profiles"
)

// treeKey identifies a cached encoding of a profile's tree.
type treeKey struct {
	id, variant string
	si          int
	kind        string // "json" or "svg"
	filter      string // flame.Filter.Key(); "" when unfiltered (filterquery.go)
	zoom        string // zoomKey of the zoom path; "" when not zoomed (zoom.go)
}

// Profile is the profile the view was built from (viewcache.Key).
func (k treeKey) Profile() string { return k.id }

// encoded is a cached response body, kept both plain and gzipped.
type encoded struct {
	plain, gz []byte
	etag      string
}

// resolveSI turns the si query parameter into a sample index (400 on an
// unknown sample type).
func resolveSI(m *profiles.Meta, si string) (int, error) {
	i, err := flame.SampleIndex(m.ProfileStub(), si)
	if err != nil {
		return 0, httpError(http.StatusBadRequest, "%v", err)
	}
	return i, nil
}

// pageMeta reads profile id's meta.json and resolves the request's si
// against its sample types: what every page handler starts with.
func (s *Server) pageMeta(c echo.Context, id string) (*profiles.Meta, int, error) {
	m, err := s.Meta(c.Request().Context(), id)
	if err != nil {
		return nil, 0, err
	}
	i, err := resolveSI(m, c.QueryParam("si"))
	if err != nil {
		return nil, 0, err
	}
	return m, i, nil
}

// rangeTreeNodes caps a timeline range's tree (flame.Options.MaxNodes):
// its samples are a fraction of the profile's, so without the cap nearly
// each is a column of frames of its own, narrower than a pixel, and a
// range's tree was larger than the whole profile's. At 20,000 nodes the
// benchmark profile's ranges merge frames under 1/5000 of the range (a
// third of a pixel at 1600 px; 1/2500 for a range of 1 s of 60), which a
// zoom opens; the tree is built, sent and drawn in about a fifth of the
// time (BENCHMARKS.md, "Timeline range to redrawn graph").
const rangeTreeNodes = 20_000

// tree returns the cached encoding of kind for (id, si), building it once
// however many requests ask at the same time.
func (s *Server) tree(ctx context.Context, id, si, kind string, f flame.Filter) (*encoded, error) {
	l, i, err := s.profileSample(ctx, id, si)
	if err != nil {
		return nil, err
	}
	return s.treeOf(ctx, l, i, kind, f)
}

// treeOf is tree for a loaded profile, or a variant of it (the data-type
// flame graph's, datatypes.go).
func (s *Server) treeOf(ctx context.Context, l *profiles.Loaded, i int, kind string, f flame.Filter) (*encoded, error) {
	id := l.ID
	key := treeKey{id: id, variant: l.Variant(), si: i, kind: kind, filter: f.Key()}
	return s.trees.Build(key, func() (*encoded, bool, error) {
		// The whole tree is cut from the profile's sorted stacks, the index
		// its top tables, zooms and searches share (zoom.go): one build of
		// the stacks per profile, sample type and filter serves them all.
		st, err := s.stacksFor(ctx, l, i, f)
		if err != nil {
			return nil, false, err
		}
		if kind == "json" {
			// The flame page asks for this view's top table next: compute
			// it beside the tree, so that it is ready when asked for
			// (zoom.go caches it) instead of after the tree is sent.
			go s.topTable(context.WithoutCancel(ctx), l, i, f, nil)
		}
		var body []byte
		var werr error
		err = s.render(ctx, func(opt flame.Options) {
			if f.Time != nil {
				opt.MaxNodes = rangeTreeNodes
			}
			switch kind {
			case "json":
				body = wholeTreeJSON(st, opt)
			case "svg":
				var b bytes.Buffer
				opt.MinFraction = flame.SVGMinFraction
				t := st.Tree(nil, opt)
				title := l.Meta.Name
				if title == "" {
					title = id
				}
				title += " · " + t.SampleType
				if t.Compaction != nil {
					title += " · compacted to fit the rendering budget"
				}
				werr = t.WriteSVG(&b, title)
				body = b.Bytes()
			}
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return nil, false, err
		}
		level := gzip.DefaultCompression
		if f.Time != nil {
			level = gzip.BestSpeed // a timeline range, built on a drag: as a zoom (zoom.go)
		}
		return &encoded{plain: body, gz: gzipLevel(body, level), etag: treeETag(key, f)}, true, nil
	})
}

// newStacks is flame.NewStacks counting each stack's samples by the
// profile's sample type that counts them (ingest.CountIndex; the sample
// records without one), for the tooltip's samples: every Stacks the server
// builds, at upload or on request, is made here, so their trees agree.
func newStacks(p *profile.Profile, si int, opt flame.Options) *flame.Stacks {
	opt.CountType = ingest.CountIndex(p.SampleType, si) + 1
	return flame.NewStacks(p, si, opt)
}

// wholeTreeJSON is flame.json's body for the whole tree of st.
func wholeTreeJSON(st *flame.Stacks, opt flame.Options) []byte {
	opt.MinFraction = flame.DefaultMinFraction
	return st.Tree(nil, opt).JSON()
}

// render runs build, which builds and encodes a view with the Options it
// is given, within the rendering budget and time limit (--render-timeout):
// the context reaches the tree building loops, and a view over either is
// answered 503 with the reason. The build is shared by the requests
// waiting on it, so one leaving does not stop it; the time limit does.
func (s *Server) render(ctx context.Context, build func(flame.Options)) error {
	ctx, cancel := context.WithTimeout(background(ctx), s.renderTimeout())
	defer cancel()
	opt := flame.Options{Budget: s.renderBudget()}.WithContext(ctx)
	if err := flame.Guard(func() { build(opt) }); err != nil {
		return httpError(http.StatusServiceUnavailable, "%v (the server's limits are --render-timeout %v, --render-nodes and --render-bytes)", err, s.renderTimeout())
	}
	return nil
}

// treeETag is the ETag of the cached encoding key.
func treeETag(key treeKey, f flame.Filter) string {
	return fmt.Sprintf(`"%s-%s-%d-%s-v%d.%d%s%s"`, key.id, strings.TrimSuffix(key.variant, ".pb.gz"), key.si, key.kind, flame.JSONVersion, flame.JSONRevision, filterETag(f), zoomETag(key.zoom))
}

func gzipBytes(b []byte) []byte { return gzipLevel(b, gzip.DefaultCompression) }

func gzipLevel(b []byte, level int) []byte {
	var out bytes.Buffer
	out.Grow(len(b) / 4)
	w, _ := gzip.NewWriterLevel(&out, level)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// serveEncoded writes e, gzipped when the client accepts it, answering 304
// to a matching If-None-Match.
func serveEncoded(c echo.Context, e *encoded, contentType string) error {
	h := c.Response().Header()
	h.Set(echo.HeaderVary, echo.HeaderAcceptEncoding)
	// The gzipped body is another representation: another strong ETag
	// (RFC 9110 8.8.3), the plain one's with "-gzip" before its quote.
	gz := strings.Contains(c.Request().Header.Get(echo.HeaderAcceptEncoding), "gzip")
	etag := e.etag
	if gz {
		etag = strings.TrimSuffix(etag, `"`) + `-gzip"`
	}
	h.Set("ETag", etag)
	// The content of an ID never changes except through symbolization,
	// which changes the ETag: revalidate, don't refetch.
	h.Set(echo.HeaderCacheControl, "no-cache")
	if match := c.Request().Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
		return c.NoContent(http.StatusNotModified)
	}
	if gz {
		h.Set(echo.HeaderContentEncoding, "gzip")
		return c.Blob(http.StatusOK, contentType, e.gz)
	}
	return c.Blob(http.StatusOK, contentType, e.plain)
}

func (s *Server) handleFlameJSON(c echo.Context) error {
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	var e *encoded
	if z := c.QueryParams()["z"]; len(z) > 0 {
		e, err = s.zoomTree(c.Request().Context(), c.Param("id"), c.QueryParam("si"), f, z) // zoom.go
	} else {
		e, err = s.tree(c.Request().Context(), c.Param("id"), c.QueryParam("si"), "json", f)
	}
	if err != nil {
		return err
	}
	return serveEncoded(c, e, echo.MIMEApplicationJSON)
}

func (s *Server) handleFlameSVG(c echo.Context) error {
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	e, err := s.tree(c.Request().Context(), c.Param("id"), c.QueryParam("si"), "svg", f)
	if err != nil {
		return err
	}
	return serveEncoded(c, e, "image/svg+xml")
}

// profileURL is a link to one of a profile's pages or files, keeping si.
func profileURL(id, suffix, si string) string {
	u := "/p/" + id + suffix
	if si != "" {
		u += "?si=" + url.QueryEscape(si)
	}
	return u
}

// nav is the header navigation of a profile's pages. The flame graph, top
// and time-order links carry the request's filters and time range (f, i,
// h, s, t) as well as si, so switching views keeps the samples shown; the
// data-type page reads no filters and keeps si only. Keep names what each
// link follows when the page changes si or t in place (common.js).
func nav(c echo.Context, id, active string) []views.NavLink {
	return navFiltered(c, id, active, filterQuery(c))
}

// navFiltered is nav whose flame graph, top and time-order links carry
// the filters and time range q.
func navFiltered(c echo.Context, id, active string, q url.Values) []views.NavLink {
	si := c.QueryParam("si")
	return []views.NavLink{
		{Label: "Flame graph", Href: withQuery(profileURL(id, "", si), q), Active: active == "flame", Keep: "si t"},
		{Label: "Top", Href: withQuery(profileURL(id, "/top", si), q), Active: active == "top", Keep: "si t"},
		{Label: "Time order", Href: withQuery(profileURL(id, "/time", si), q), Active: active == "time", Keep: "si t"},
		{Label: "Types", Href: profileURL(id, "/types", si), Active: active == "types", Keep: "si"},
	}
}

func sampleTypes(m *profiles.Meta, si int) []views.SampleType {
	out := make([]views.SampleType, len(m.SampleTypes))
	for i, st := range m.SampleTypes {
		out[i] = views.SampleType{Index: i, Name: st.Type, Unit: st.Unit, Selected: i == si}
	}
	return out
}

func displayName(m *profiles.Meta, id string) string {
	if m.Name != "" {
		return m.Name
	}
	return id
}

// handleFlamePage renders /p/ID from meta.json alone; the page fetches
// flame.json itself.
func (s *Server) handleFlamePage(c echo.Context) error {
	id := c.Param("id")
	m, i, err := s.pageMeta(c, id)
	if err != nil {
		return err
	}
	si := m.SampleTypes[i].Type
	page := views.FlamePage{
		Page:          s.profilePage(c, id, m, displayName(m, id), nav(c, id, "flame")),
		ID:            id,
		Name:          m.Name,
		SampleTypes:   sampleTypes(m, i),
		SI:            si,
		DataURL:       withQuery(profileURL(id, "/flame.json", si), filterQuery(c)),
		SVGURL:        withQuery(profileURL(id, "/flame.svg", si), filterQuery(c)),
		PprofURL:      "/p/" + id + "/profile.pb.gz",
		SpeedscopeURL: speedscopeLink(c, id),
		FirefoxURL:    firefoxLink(c, id, c.QueryParam("si")),
		TopURL:        withQuery(profileURL(id, "/top", si), filterQuery(c)),
		Exact:         true, // top.json, flame.json?z= (zoom.go)
		Stats:         stats(m, i),
		Filter:        flameFilterBar(c, id), // filterquery.go
	}
	page.Binaries = mappingRows(m)
	s.fillSymbolization(c.Request().Context(), id, m, &page) // symbolization.go
	return Render(c, http.StatusOK, views.Flame(page))
}

func stats(m *profiles.Meta, si int) []views.Stat {
	st := m.SampleTypes[si]
	// Samples as perf and pprof count them, from the sample type that
	// counts the selected one's samples; without one, the sample records
	// are all there is, and they are distinct stacks (ingest/samplecount.go).
	samples := views.Stat{Label: "Stacks", Value: sampling.FormatCount(int64(m.Samples))}
	if ci := ingest.CountIndex(m.ProfileStub().SampleType, si); ci >= 0 {
		samples = views.Stat{Label: "Samples", Value: sampling.FormatCount(m.SampleTypes[ci].Total)}
	}
	out := []views.Stat{
		samples,
		{Label: "Total " + st.Type, Value: sampling.FormatValue(st.Total, st.Unit)},
	}
	if m.DurationNanos > 0 {
		out = append(out, views.Stat{Label: "Duration", Value: sampling.FormatValue(m.DurationNanos, "nanoseconds")})
	}
	out = append(out,
		views.Stat{Label: "Mappings", Value: sampling.FormatCount(int64(len(m.Mappings)))},
		views.Stat{Label: "Format", Value: m.Format},
		views.Stat{Label: "Size", Value: humanBytes(m.Size)},
	)
	return out
}

// humanBytes formats a byte count with binary units ("512 MiB").
func humanBytes(n int64) string { return sampling.FormatValue(n, "bytes") }
