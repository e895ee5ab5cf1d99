package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/labstack/echo/v4"

	"viewer/web/flame"
	"viewer/web/profiles"
)

// stacksCache is how many profiles' sorted stacks (flame.Stacks, about
// 13 MB for 200,000 samples over 50,000 stacks) are kept for zooms and
// top tables.
const stacksCache = 4

// maxZoomDepth bounds the zoom path a request may give.
const maxZoomDepth = 4096

// zoomKey is the cache key part of a zoom path.
func zoomKey(z []string) string { return strings.Join(z, "\x00") }

// zoomETag distinguishes the ETags of zoomed trees.
func zoomETag(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return "-z" + hex.EncodeToString(sum[:6])
}

// stacksFor returns the sorted stacks of l for sample index si after f,
// building them once however many requests ask at the same time, within
// the rendering time limit (s.render).
func (s *Server) stacksFor(ctx context.Context, l *profiles.Loaded, si int, f flame.Filter) (*flame.Stacks, error) {
	key := treeKey{id: l.ID, variant: l.Variant(), si: si, kind: "stacks", filter: f.Key()}
	return s.stacks.Build(key, func() (*flame.Stacks, bool, error) {
		var st *flame.Stacks
		if r := f.Time; r != nil {
			// A time range (the timeline's t=) is cut from the stacks of
			// the other filters, built once, by their time index: no
			// pass over the profile's samples per range. The cut is not
			// cached, so ranges never push the base out of the cache:
			// cutting again costs little.
			others := f
			others.Time = nil
			base, err := s.stacksFor(ctx, l, si, others)
			if err != nil {
				return nil, false, err
			}
			return base.InTime(*r), false, nil
		}
		if err := s.render(ctx, func(opt flame.Options) {
			opt.Filter = f
			st = newStacks(l.Profile, si, opt) // flamepage.go
		}); err != nil {
			return nil, false, err
		}
		return st, true, nil
	})
}

// zoomPath checks the z parameters of a request.
func zoomPath(z []string) ([]string, error) {
	if len(z) > maxZoomDepth {
		return nil, httpError(http.StatusBadRequest, "z: %d path elements, at most %d", len(z), maxZoomDepth)
	}
	return z, nil
}

// zoomTree is flame.json zoomed at the path z (names from the root, "…<N"
// for a merged block): the subtree compacted at the zoomed frame's total
// (flame.Stacks.Tree) and fitted to the rendering budget like the whole
// tree (s.render), cached like it.
func (s *Server) zoomTree(ctx context.Context, id, si string, f flame.Filter, z []string) (*encoded, error) {
	l, i, err := s.profileSample(ctx, id, si)
	if err != nil {
		return nil, err
	}
	return s.zoomTreeOf(ctx, l, i, f, z)
}

// zoomTreeOf is zoomTree for a loaded profile or a variant of it.
func (s *Server) zoomTreeOf(ctx context.Context, l *profiles.Loaded, i int, f flame.Filter, z []string) (*encoded, error) {
	z, err := zoomPath(z)
	if err != nil {
		return nil, err
	}
	key := treeKey{id: l.ID, variant: l.Variant(), si: i, kind: "json", filter: f.Key(), zoom: zoomKey(z)}
	return s.trees.Build(key, func() (*encoded, bool, error) {
		st, err := s.stacksFor(ctx, l, i, f)
		if err != nil {
			return nil, false, err
		}
		var body []byte
		if err := s.render(ctx, func(opt flame.Options) {
			opt.MinFraction = flame.DefaultMinFraction
			body = st.Tree(z, opt).JSON()
		}); err != nil {
			return nil, false, err
		}
		// Built on a click: compressing fast matters more than bytes.
		return &encoded{plain: body, gz: gzipLevel(body, gzip.BestSpeed), etag: treeETag(key, f)}, true, nil
	})
}

// topTable is the top table of l for si after f, zoomed at z (nil: the
// whole profile): what /top renders and top.json encodes, computed once
// within the rendering time limit (s.render). Its rows are one per
// function; the handlers bound how many they encode (topFit).
func (s *Server) topTable(ctx context.Context, l *profiles.Loaded, si int, f flame.Filter, z []string) (*topResult, error) {
	key := treeKey{id: l.ID, variant: l.Variant(), si: si, kind: "top", filter: f.Key(), zoom: zoomKey(z)}
	return s.tops.Build(key, func() (*topResult, bool, error) {
		st, err := s.stacksFor(ctx, l, si, f)
		if err != nil {
			return nil, false, err
		}
		var t *topResult
		if err := s.render(ctx, func(opt flame.Options) { t = st.Top(z, opt) }); err != nil {
			return nil, false, err
		}
		return t, true, nil
	})
}

// searchRE compiles the flame page's search as the page does: a
// case-insensitive regexp, or the text itself when it is not a valid one.
func searchRE(q string) *regexp.Regexp {
	if re, err := regexp.Compile("(?i)" + q); err == nil {
		return re
	}
	return regexp.MustCompile("(?i)" + regexp.QuoteMeta(q))
}

// handleTopJSON serves top.json: the top table of the view the flame page
// shows (si, filters, zoom path z), sorted by sort (flat, cum or name),
// its first n rows, and with q the search's matched value (static/docs/api.md).
func (s *Server) handleTopJSON(c echo.Context) error {
	l, i, err := s.requestProfile(c)
	if err != nil {
		return err
	}
	return s.serveTopJSON(c, l, i)
}

// serveTopJSON answers top.json for a loaded profile or a variant of it.
func (s *Server) serveTopJSON(c echo.Context, l *profiles.Loaded, i int) error {
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	z, err := zoomPath(c.QueryParams()["z"])
	if err != nil {
		return err
	}
	n, err := topRows(c)
	if err != nil {
		return err
	}
	order := c.QueryParam("sort")
	if order == "" {
		order = "flat"
	}
	t, err := s.topTable(c.Request().Context(), l, i, f, z)
	if err != nil {
		return err
	}
	rows := t.Rows // sorted by flat
	switch order {
	case "flat":
	case "cum":
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, func(a, b flame.TopRow) int { return cmpAbs(b.Cum, a.Cum) })
	case "name":
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, func(a, b flame.TopRow) int { return strings.Compare(a.Name, b.Name) })
	default:
		return httpError(http.StatusBadRequest, "sort=%q: want flat, cum or name", order)
	}
	st := l.Meta.SampleTypes[i]
	out := topJSON{
		Version: 1, SampleType: st.Type, Unit: st.Unit, Total: t.Total, ZoomTotal: t.ZoomTotal,
		Zoom: t.Zoom, Functions: len(t.Rows), Sort: order, Rows: make([][3]any, 0, min(n, len(rows))),
	}
	if out.Zoom == nil {
		out.Zoom = []string{}
	}
	for _, r := range rows[:s.renderBudget().Rows(rows, n, topJSONRow, 1)] {
		out.Rows = append(out.Rows, [3]any{r.Name, r.Flat, r.Cum})
	}
	if q := c.QueryParam("q"); q != "" {
		st, err := s.stacksFor(c.Request().Context(), l, i, f)
		if err != nil {
			return err
		}
		var m int64
		if err := s.render(c.Request().Context(), func(opt flame.Options) { m = st.Matched(searchRE(q), opt) }); err != nil {
			return err
		}
		out.Matched = &m
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return c.JSON(http.StatusOK, out)
}

// topJSONRow bounds one top.json row's bytes besides its name: two
// integers of up to 20 characters, brackets and commas.
const topJSONRow = 48

// topJSON is the top.json encoding (static/docs/api.md, the manual's "flame.json format").
type topJSON struct {
	Version    int      `json:"version"`
	SampleType string   `json:"sampleType"`
	Unit       string   `json:"unit"`
	Total      int64    `json:"total"`
	ZoomTotal  int64    `json:"zoomTotal"`
	Zoom       []string `json:"zoom"`
	Functions  int      `json:"functions"`
	Sort       string   `json:"sort"`
	Rows       [][3]any `json:"rows"`
	Matched    *int64   `json:"matched,omitempty"`
}

// cmpAbs orders a and b by absolute value.
func cmpAbs(a, b int64) int {
	a, b = max(a, -a), max(b, -b)
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
