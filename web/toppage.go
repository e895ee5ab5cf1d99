package web

import (
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"viewer/symbolize/sampling"
	"viewer/views"
	"viewer/web/flame"
)

// defaultTopRows is how many functions /p/ID/top lists unless ?n= says.
const defaultTopRows = 500

// topHTMLRow bounds the markup of one /top row besides its name, which
// it holds topHTMLNames times (escaped): what flame.Budget.Rows counts.
const (
	topHTMLRow   = 1024
	topHTMLNames = 3
)

// topRows reads ?n=, how many rows a top table lists (400 unless a
// positive number).
func topRows(c echo.Context) (int, error) {
	q := c.QueryParam("n")
	if q == "" {
		return defaultTopRows, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n <= 0 {
		return 0, httpError(http.StatusBadRequest, "n=%q: want a positive number of rows", q)
	}
	return n, nil
}

// topResult is a cached top table.
type topResult = flame.TopTable

// handleTop renders the top-functions table.
func (s *Server) handleTop(c echo.Context) error {
	id := c.Param("id")
	l, i, err := s.profileSample(c.Request().Context(), id, c.QueryParam("si"))
	if err != nil {
		return err
	}
	n, err := topRows(c)
	if err != nil {
		return err
	}
	f, err := queryFilter(c) // filterquery.go
	if err != nil {
		return err
	}
	top, err := s.topTable(c.Request().Context(), l, i, f, nil) // zoom.go: the same table top.json serves
	if err != nil {
		return err
	}
	rows, total := top.Rows, top.Total
	st := l.Meta.SampleTypes[i]
	page := views.TopPage{
		Page:        s.profilePage(c, id, l.Meta, displayName(l.Meta, id)+" · top", nav(c, id, "top")),
		ID:          id,
		SampleTypes: sampleTypes(l.Meta, i),
		SI:          st.Type,
		Unit:        st.Unit,
		Total:       sampling.FormatValue(total, st.Unit),
		FlameURL:    withQuery(profileURL(id, "", st.Type), filterQuery(c)),
		Filter:      filterBar(c, "/p/"+id+"/top"), // filterquery.go
	}
	if len(rows) == 0 {
		page.Empty = emptyTopReason(f, l.Meta.DurationNanos)
	}
	frac := func(v int64) float64 {
		if total == 0 {
			return 0
		}
		return float64(v) / float64(total)
	}
	b := s.renderBudget()
	k := b.Rows(rows, n, topHTMLRow, topHTMLNames)
	if k < len(rows) {
		page.Note = fmt.Sprintf("The %d functions with the largest flat value, of %d.", k, len(rows))
		if k < min(n, len(rows)) {
			page.Note = fmt.Sprintf("The %d functions with the largest flat value, of %d: as many as fit the server's rendering budget (--render-nodes, --render-bytes).", k, len(rows))
		} else if b.Rows(rows, len(rows), topHTMLRow, topHTMLNames) > k {
			all := maps.Clone(c.QueryParams()) // the same view, every row
			all.Set("n", strconv.Itoa(len(rows)))
			page.AllURL = "/p/" + id + "/top?" + all.Encode()
		}
	}
	// One unit a column, as pprof writes a report.
	flats, cums := make([]int64, k), make([]int64, k)
	for i, r := range rows[:k] {
		flats[i], cums[i] = r.Flat, r.Cum
	}
	flatCol, cumCol := sampling.ColumnOf(st.Unit, flats...), sampling.ColumnOf(st.Unit, cums...)
	page.FlatTitle = columnTitle("Self", st.Type, flatCol)
	page.CumTitle = columnTitle("Cumulative", st.Type, cumCol)
	for _, r := range rows[:k] {
		page.Rows = append(page.Rows, views.TopRow{
			Name: r.Name,
			Flat: flatCol.Format(r.Flat), FlatPct: sampling.Percent(r.Flat, total),
			Cum: cumCol.Format(r.Cum), CumPct: sampling.Percent(r.Cum, total),
			FlatFrac: frac(r.Flat), CumFrac: frac(r.Cum),
			AnnotateHref: withQuery(annotateURL(id, r.Name, c.QueryParam("si"), true), filterQuery(c)),
		})
	}
	return Render(c, http.StatusOK, views.Top(page))
}

// emptyTopReason says why a top table of a sample type with samples
// lists nothing: its time range (t=) or its filters keep none. "" when
// neither is set: the sample type has no samples.
func emptyTopReason(f flame.Filter, durationNanos int64) string {
	filtered := f.Focus != nil || f.Ignore != nil || f.Hide != nil || f.Show != nil
	switch {
	case f.Time != nil && !filtered && durationNanos > 0 && f.Time.From >= durationNanos:
		return fmt.Sprintf("No samples in %s s: the recording is %s long. Choose a range on the flame graph's timeline, or show the whole recording.",
			strings.Replace(f.Time.String(), "-", "–", 1), sampling.FormatValue(durationNanos, "nanoseconds"))
	case f.Time != nil && !filtered:
		return fmt.Sprintf("No samples in %s s of the recording: choose another range on the flame graph's timeline, or show the whole recording.", strings.Replace(f.Time.String(), "-", "–", 1))
	case f.Time != nil:
		return fmt.Sprintf("No samples in %s s of the recording match the filters.", strings.Replace(f.Time.String(), "-", "–", 1))
	case filtered:
		return "No samples match the filters."
	}
	return ""
}

// columnTitle is the title of a column of values of a sample type:
// "Self CPU time, in ms".
func columnTitle(what, sampleType string, col sampling.Column) string {
	q := views.Quantity(sampleType, col.Unit())
	if len(q) < 2 || q[1] < 'A' || q[1] > 'Z' { // "CPU time" stays capitalized
		q = strings.ToLower(q[:1]) + q[1:]
	}
	s := what + " " + q
	if u := col.Unit(); u != "" {
		s += ", in " + u
	}
	return s
}
