package web

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"viewer/views"
	"viewer/web/flame"
)

// queryFilter reads pprof's f, i, h and s parameters and the timeline's
// t (400 on a bad regexp or range).
func queryFilter(c echo.Context) (flame.Filter, error) {
	f, err := flame.ParseFilter(c.QueryParam("f"), c.QueryParam("i"), c.QueryParam("h"), c.QueryParam("s"))
	if err != nil {
		return flame.Filter{}, httpError(http.StatusBadRequest, "%v", err)
	}
	if f.Time, err = flame.ParseTimeRange(c.QueryParam("t")); err != nil { // the timeline's range (timeline.go)
		return flame.Filter{}, httpError(http.StatusBadRequest, "%v", err)
	}
	return f, nil
}

// filterETag distinguishes the ETags of filtered trees.
func filterETag(f flame.Filter) string {
	k := f.Key()
	if k == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(k))
	return "-f" + hex.EncodeToString(sum[:6])
}

// filterQuery is the f, i, h, s and t parameters of c's request, to carry
// over to other links ("" when none).
func filterQuery(c echo.Context) url.Values {
	v := url.Values{}
	for _, k := range append(flame.FilterParams[:], "t") {
		if q := c.QueryParam(k); q != "" {
			v.Set(k, q)
		}
	}
	return v
}

// withQuery appends v to u, which may already have a query.
func withQuery(u string, v url.Values) string {
	if len(v) == 0 {
		return u
	}
	sep := "?"
	for i := 0; i < len(u); i++ {
		if u[i] == '?' {
			sep = "&"
			break
		}
	}
	return u + sep + v.Encode()
}

// filterBar is the filter form of a profile's page at action: its f, i,
// h and s filled in, carrying si and the timeline's range (t), so that
// filtering a view keeps its sample type and time range.
func filterBar(c echo.Context, action string) views.FilterBar {
	return views.FilterBar{
		Action: action, SI: c.QueryParam("si"),
		F: c.QueryParam("f"), I: c.QueryParam("i"), H: c.QueryParam("h"), S: c.QueryParam("s"),
		Keep: keepTime(c),
	}
}

// flameFilterBar is the filter form of /p/ID, with the compare picker.
func flameFilterBar(c echo.Context, id string) views.FilterBar {
	f := filterBar(c, "/p/"+id)
	f.CompareAction = "/p/" + id + "/compare"
	return f
}

// keepTime carries the timeline's range (t) through a filter form; on
// the flame page timeline.js adds it when a range is dragged.
func keepTime(c echo.Context) [][2]string {
	if t := c.QueryParam("t"); t != "" {
		return [][2]string{{"t", t}}
	}
	return nil
}
