package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/labstack/echo/v4"

	"viewer/symbolize/sampling"
	"viewer/views"
	"viewer/web/ingest"
	"viewer/web/profiles"
	"viewer/web/store"
)

// Grouping of OTLP profiles by service.name: the index written at intake,
// the /services page, and merged time ranges at /s/SERVICE.

const (
	// servicesListed is how many of a service's newest profiles the
	// /services page lists.
	servicesListed = 50
	// maxMergeProfiles bounds a merge's members: a wider range is refused
	// with what to do, so that a merge's work stays proportional to what
	// can be shown.
	maxMergeProfiles = 500
	// mergeBatch is how many members are merged at once into the running
	// result, so that at most this many are held besides it.
	mergeBatch = 16
	// rangeLayout is the form's datetime-local value (UTC).
	rangeLayout = "2006-01-02T15:04:05"
)

// serviceIndex names the entry of an OTLP profile in its service's
// listing, for the profile's ID: one empty store object whose key says
// its time, ID and sample count (profiles.ServiceEntryKey), written with
// the profile (profiles.Service.StoreParsed). A profile without
// service.name is not listed (nil).
func serviceIndex(op ingest.OTLPProfile) func(id string) []string {
	if op.Service == "" {
		return nil
	}
	t := time.Now().UTC()
	if op.Profile.TimeNanos > 0 {
		t = time.Unix(0, op.Profile.TimeNanos).UTC()
	}
	samples := sampleCount(op.Profile)
	return func(id string) []string {
		return []string{profiles.ServiceEntryKey(profiles.ServiceEntry{Service: op.Service, Time: t, ID: id, Samples: samples})}
	}
}

// sampleCount is how many samples a profile holds: the sum of the type
// that counts them (ingest.CountIndex), else its sample records.
func sampleCount(p *profile.Profile) int64 {
	ci := ingest.CountIndex(p.SampleType, 0)
	if ci < 0 {
		return int64(len(p.Sample))
	}
	var n int64
	for _, smp := range p.Sample {
		if ci < len(smp.Value) {
			n += smp.Value[ci]
		}
	}
	return n
}

// serviceEntries lists the index under prefix (all services, or one
// service's prefix), oldest first.
func (s *Server) serviceEntries(ctx context.Context, prefix string) ([]profiles.ServiceEntry, error) {
	l, ok := s.prof.Store().(store.Lister)
	if !ok {
		return nil, httpError(http.StatusNotImplemented, "this server's store cannot list its keys, so profiles are not grouped by service")
	}
	keys, err := l.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []profiles.ServiceEntry
	for _, k := range keys {
		if e, ok := profiles.ParseServiceEntryKey(k); ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b profiles.ServiceEntry) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// handleServices is /services: one row per service.name, its newest
// profiles with their time and sample count, each linked at /p/ID.
func (s *Server) handleServices(c echo.Context) error {
	m := views.ServicesPage{Page: views.Page{Title: "Services", Help: "/docs/api#opentelemetry-profiles-and-the-symbolization-api"}}
	all, err := s.serviceEntries(c.Request().Context(), profiles.ServicesPrefix)
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		m.Unlisted = fmt.Sprint(he.Message)
	case err != nil:
		return err
	}
	by := map[string][]profiles.ServiceEntry{}
	var names []string
	for _, e := range all {
		if _, ok := by[e.Service]; !ok {
			names = append(names, e.Service)
		}
		by[e.Service] = append(by[e.Service], e)
	}
	slices.Sort(names)
	for _, name := range names {
		es := by[name]
		row := views.ServiceRow{
			Name:        name,
			MergeAction: "/s/" + url.PathEscape(name),
			From:        es[0].Time.Format(rangeLayout),
			To:          es[len(es)-1].Time.Format(rangeLayout),
			Total:       len(es),
		}
		for i := len(es) - 1; i >= 0 && len(row.Profiles) < servicesListed; i-- {
			e := es[i]
			row.Profiles = append(row.Profiles, views.ServiceProfile{
				Time: e.Time.Format("2006-01-02 15:04:05"), Samples: sampling.FormatCount(e.Samples),
				Href: "/p/" + e.ID, ID: e.ID,
			})
		}
		row.More = len(es) - len(row.Profiles)
		m.Services = append(m.Services, row)
	}
	return Render(c, http.StatusOK, views.Services(m))
}

// parseRangeTime reads a from= or to= value: RFC 3339, the form's
// datetime-local (UTC, seconds optional), a date, or Unix seconds.
func parseRangeTime(name, v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, rangeLayout, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Time{}, httpError(http.StatusBadRequest, "%s=%q is not a time; give RFC 3339 (2026-03-01T12:00:00Z), 2026-03-01T12:00:00 (UTC) or Unix seconds", name, v)
}

// handleServiceMerge is /s/SERVICE?from=…&to=…: the service's profiles
// in the range (inclusive; either end may be left out) merged on the
// server into one profile, stored content-addressed (the same members
// give the same ID) and shown at its /p/ID, where it is redirected. Only
// members of the oldest member's sample types are merged; others are
// counted in the profile's comments.
//
// A merge stores a profile, so with --auth-token it needs the token, as
// an upload does (the /login cookie in the browser).
func (s *Server) handleServiceMerge(c echo.Context) error {
	ctx := c.Request().Context()
	if !s.authorized(c) {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="viewer uploads"`)
		return httpError(http.StatusUnauthorized, "merging stores a profile, so on this server it needs its token: send Authorization: Bearer TOKEN, or sign in at /login")
	}
	service, err := url.PathUnescape(c.Param("service"))
	if err != nil || service == "" {
		return httpError(http.StatusBadRequest, "the service name in the URL is not valid; link to /s/ followed by the escaped service.name")
	}
	from, to := time.Time{}, openEnd
	if v := c.QueryParam("from"); v != "" {
		if from, err = parseRangeTime("from", v); err != nil {
			return err
		}
	}
	if v := c.QueryParam("to"); v != "" {
		if to, err = parseRangeTime("to", v); err != nil {
			return err
		}
	}
	all, err := s.serviceEntries(ctx, profiles.ServicePrefix(service))
	if err != nil {
		return err
	}
	var members []profiles.ServiceEntry
	for _, e := range all {
		if e.Service == service && !e.Time.Before(from) && !e.Time.After(to) {
			members = append(members, e)
		}
	}
	span := fmt.Sprintf("from %s to %s", rangeEnd(from, "the first"), rangeEnd(to, "the last"))
	switch {
	case len(all) == 0:
		return httpError(http.StatusNotFound, "no OTLP profile of service %q has been received; see /services", service)
	case len(members) == 0:
		return httpError(http.StatusNotFound, "service %q has no profile %s (its %d profiles are from %s to %s); widen the range", service, span, len(all), all[0].Time.Format(time.RFC3339), all[len(all)-1].Time.Format(time.RFC3339))
	case len(members) > maxMergeProfiles:
		return httpError(http.StatusRequestEntityTooLarge, "service %q has %d profiles %s, more than the %d one merge takes; narrow the range", service, len(members), span, maxMergeProfiles)
	}
	merged, covered, other, missing, err := s.mergeMembers(ctx, members)
	if err != nil {
		return err
	}
	if merged == nil {
		return httpError(http.StatusNotFound, "the %d profiles service %q lists %s are not stored (their writes did not finish); send them again", missing, service, span)
	}
	n := len(members) - other - missing
	// The name (the page's title) says the time the merged profiles
	// cover, and the range asked for when it differs: a range wider than
	// the profiles would otherwise read as their span.
	name := fmt.Sprintf("%s, %s, %s", service, views.Plural(n, "profile"), covered)
	if asked := (mergeSpan{start: from, end: to}); !covered.matches(asked) {
		name += fmt.Sprintf(" (asked %s)", span)
	}
	comment := fmt.Sprintf("viewer: %d profiles of %s merged, %s; asked %s", n, service, covered, span)
	if other > 0 {
		comment += fmt.Sprintf("; %d of other sample types left out", other)
	}
	if missing > 0 {
		comment += fmt.Sprintf("; %d listed but not stored left out", missing)
	}
	merged.Comments = append(merged.Comments, comment)
	var gz bytes.Buffer
	if err := profiles.WriteGzipped(&gz, merged); err != nil {
		return err
	}
	id, err := s.afterUpload(s.prof.StoreParsed(ctx, merged, gz.Bytes(), name, "merged OTLP profiles", nil))
	if err != nil {
		return err
	}
	if err := s.QueueSymbolization(ctx, id, false); err != nil {
		s.log.Warn("queueing symbolization of a merged profile", "id", id, "err", err)
	}
	return c.Redirect(http.StatusSeeOther, "/p/"+id)
}

// openEnd is a range's end when to= is left out.
var openEnd = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// rangeEnd names one end of a range, or what an open end stands for.
func rangeEnd(t time.Time, open string) string {
	if t.IsZero() || t.Equal(openEnd) {
		return open
	}
	return t.Format(time.RFC3339)
}

// mergeMembers loads the members (their symbolized copies when stored)
// and merges those of the first one's sample types, a batch at a time; it
// reports how many were of other types, and how many are listed but not
// stored (an index entry a crash left without its profile, whose write
// was never acknowledged: store.IndexPutter); nil when none is stored.
func (s *Server) mergeMembers(ctx context.Context, members []profiles.ServiceEntry) (_ *profile.Profile, covered mergeSpan, other, missing int, _ error) {
	var acc *profile.Profile
	batch := make([]*profile.Profile, 0, mergeBatch+1)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if acc != nil {
			batch = append([]*profile.Profile{acc}, batch...)
		}
		p, err := profile.Merge(batch)
		if err != nil {
			return fmt.Errorf("merging profiles: %w", err)
		}
		acc, batch = p, batch[:0]
		return nil
	}
	var first *profile.Profile
	for _, e := range members {
		l, err := s.prof.Profile(ctx, e.ID)
		if errors.Is(err, profiles.ErrNotFound) {
			missing++
			continue
		}
		if err != nil {
			return nil, mergeSpan{}, 0, 0, httpStatusError(err)
		}
		if first == nil {
			first = l.Profile
		} else if !sameTypes(first, l.Profile) {
			other++
			continue
		}
		covered.add(l.Profile, e.Time)
		batch = append(batch, l.Profile)
		if len(batch) == mergeBatch {
			if err := flush(); err != nil {
				return nil, mergeSpan{}, 0, 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, mergeSpan{}, 0, 0, err
	}
	return acc, covered, other, missing, nil
}

// mergeSpan is the time merged profiles cover: from the first one's start
// to the last one's end (its start plus its duration).
type mergeSpan struct{ start, end time.Time }

// add widens the span to cover p, whose start is t when p records none.
func (m *mergeSpan) add(p *profile.Profile, t time.Time) {
	if p.TimeNanos > 0 {
		t = time.Unix(0, p.TimeNanos).UTC()
	}
	end := t.Add(time.Duration(max(p.DurationNanos, 0)))
	if m.start.IsZero() || t.Before(m.start) {
		m.start = t
	}
	if end.After(m.end) {
		m.end = end
	}
}

// matches reports whether the span starts and ends where asked does, an
// open end (zero from, openEnd to) matching any time.
func (m mergeSpan) matches(asked mergeSpan) bool {
	return (asked.start.IsZero() || asked.start.Equal(m.start)) && (asked.end.Equal(openEnd) || asked.end.Equal(m.end))
}

// String is the span in UTC, "2026-03-01 12:00:00 to 12:05:00 UTC", the
// end's date written only when it is another day.
func (m mergeSpan) String() string {
	const day, clock = "2006-01-02 ", "15:04:05"
	end := m.end.Format(clock)
	if m.end.Format(day) != m.start.Format(day) {
		end = m.end.Format(day + clock)
	}
	if m.end.Equal(m.start) {
		return "at " + m.start.Format(day+clock) + " UTC"
	}
	return m.start.Format(day+clock) + " to " + end + " UTC"
}

// sameTypes reports whether profile.Merge takes a and b together: the
// same sample types and period type.
func sameTypes(a, b *profile.Profile) bool {
	eq := func(x, y *profile.ValueType) bool {
		return x == nil && y == nil || x != nil && y != nil && x.Type == y.Type && x.Unit == y.Unit
	}
	return eq(a.PeriodType, b.PeriodType) && slices.EqualFunc(a.SampleType, b.SampleType, eq)
}
