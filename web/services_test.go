package web_test

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web"
	"viewer/web/ingest/otlptest"
	"viewer/web/profiles"
	"viewer/web/webtest"
)

// getNoRedirect GETs url without following a redirect.
func getNoRedirect(t testing.TB, u string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestServiceMerge: /s/SERVICE?from=…&to=… merges the service's profiles
// in the range on the server; the merged profile's totals, and each
// stack's count, are the sum of its members' (as downloaded); the same
// range gives the same link (stored content-addressed), also after a
// restart; a range without profiles and a bad time say what is wrong.
func TestServiceMerge(t *testing.T) {
	dir := t.TempDir()
	start := func() string {
		s, err := web.New(web.Config{DataDir: dir, OTLP: true})
		if err != nil {
			t.Fatal(err)
		}
		ts := webtest.LoopbackServer(t, s.Handler())
		ts.Start()
		t.Cleanup(ts.Close)
		return ts.URL
	}
	base := start()
	a := webtest.SendService(t, base, "checkout", 1000, 100)
	b := webtest.SendService(t, base, "checkout", 2000, 200)
	webtest.SendService(t, base, "checkout", 3000, 300) // outside the range
	webtest.SendService(t, base, "cart", 500, 150)      // another service

	merge := base + "/s/checkout?from=1970-01-01T00:01:40Z&to=250"
	resp, body := getNoRedirect(t, merge)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/p/") {
		t.Fatalf("merge: %s Location %q: %s", resp.Status, loc, body)
	}
	id := strings.TrimPrefix(loc, "/p/")
	got := webtest.ServedProfile(t, base, id)
	var members [][]int64
	stacks := map[string]int64{}
	for _, m := range []string{a, b} {
		p := webtest.ServedProfile(t, base, m)
		tot := make([]int64, len(p.SampleType))
		for _, s := range p.Sample {
			for i, v := range s.Value {
				tot[i] += v
			}
			stacks[stackKey(s.Location)] += s.Value[0]
		}
		members = append(members, tot)
	}
	for i := range got.SampleType {
		var want, have int64
		for _, tot := range members {
			want += tot[i]
		}
		for _, s := range got.Sample {
			have += s.Value[i]
		}
		if have != want || want == 0 {
			t.Errorf("merged %s total %d, members' sum %d", got.SampleType[i].Type, have, want)
		}
	}
	gotStacks := map[string]int64{}
	for _, s := range got.Sample {
		gotStacks[stackKey(s.Location)] += s.Value[0]
	}
	for k, v := range stacks {
		if gotStacks[k] != v {
			t.Errorf("stack %s: merged %d, members' sum %d", k, gotStacks[k], v)
			break
		}
	}
	if len(gotStacks) != len(stacks) {
		t.Errorf("merged %d stacks, members have %d", len(gotStacks), len(stacks))
	}

	// Content-addressed: the same range, asked again and after a restart,
	// is the same link.
	if r, _ := getNoRedirect(t, merge); r.Header.Get("Location") != loc {
		t.Errorf("asked again: %q, first %q", r.Header.Get("Location"), loc)
	}
	base = start()
	if r, _ := getNoRedirect(t, base+"/s/checkout?from=1970-01-01T00:01:40Z&to=250"); r.Header.Get("Location") != loc {
		t.Errorf("after a restart: %q, first %q", r.Header.Get("Location"), loc)
	}

	for _, tc := range []struct {
		q      string
		status int
		says   string
	}{
		{"/s/checkout?from=1970-01-01T01:00:00Z", 404, "widen the range"},
		{"/s/nosuch", 404, "/services"},
		{"/s/checkout?to=yesterday", 400, "RFC 3339"},
	} {
		r, body := getNoRedirect(t, base+tc.q)
		if r.StatusCode != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %s %q, want %d naming %q", tc.q, r.Status, body, tc.status, tc.says)
		}
	}
	// A service name that needs escaping is its own listing.
	webtest.SendService(t, base, "billing/eu west", 100, 400)
	if r, body := getNoRedirect(t, base+"/s/"+url.PathEscape("billing/eu west")); r.StatusCode != http.StatusSeeOther {
		t.Errorf("escaped service: %s %s", r.Status, body)
	}
}

// stackKey names a stack by its frames' mapping files and addresses.
func stackKey(locs []*profile.Location) string {
	var b strings.Builder
	for _, l := range locs {
		fmt.Fprintf(&b, "%s+%x;", l.Mapping.File, l.Address-l.Mapping.Start)
	}
	return b.String()
}

// TestServiceMergeToken: with --auth-token a merge, which stores a
// profile, needs the token as an upload does; so does /services, which
// lists profiles (TestListingsNeedToken).
func TestServiceMergeToken(t *testing.T) {
	s, err := web.New(web.Config{DataDir: t.TempDir(), OTLP: true, AuthToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	if r, body := getNoRedirect(t, ts.URL+"/s/checkout"); r.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "token") {
		t.Errorf("merge without the token: %s %q", r.Status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/s/checkout", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound { // authorized; no such service yet
		t.Errorf("merge with the token: %s, want 404 (no profiles yet)", resp.Status)
	}
	if r, _ := getNoRedirect(t, ts.URL+"/services"); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("/services without the token: %s", r.Status)
	}
}

// TestServiceMergeSkipsUnstored: an entry of the service's listing whose
// profile is not stored (what a crash between the two can leave, for a
// write that was never acknowledged) is left out of a merge, which says
// so, instead of failing it; a range of such entries alone is a 404
// saying what is wrong.
func TestServiceMergeSkipsUnstored(t *testing.T) {
	dir := t.TempDir()
	s, err := web.New(web.Config{DataDir: dir, OTLP: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	defer ts.Close()
	a := webtest.SendService(t, ts.URL, "checkout", 1000, 100)
	ghost := profiles.NewID([]byte("a profile whose write a crash interrupted"))
	for _, sec := range []int64{150, 500} {
		key := profiles.ServiceEntryKey(profiles.ServiceEntry{Service: "checkout", Time: time.Unix(sec, 0), ID: ghost, Samples: 10})
		p := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resp, body := getNoRedirect(t, ts.URL+"/s/checkout?from=1970-01-01T00:01:00Z&to=200")
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/p/") {
		t.Fatalf("merge with an unstored entry: %s Location %q: %s", resp.Status, loc, body)
	}
	got, want := webtest.ServedProfile(t, ts.URL, strings.TrimPrefix(loc, "/p/")), webtest.ServedProfile(t, ts.URL, a)
	var have, sent int64
	for _, smp := range got.Sample {
		have += smp.Value[0]
	}
	for _, smp := range want.Sample {
		sent += smp.Value[0]
	}
	if have != sent || !strings.Contains(strings.Join(got.Comments, "\n"), "1 listed but not stored left out") {
		t.Errorf("merged %d samples (the stored member has %d), comments %q", have, sent, got.Comments)
	}
	if r, body := getNoRedirect(t, ts.URL+"/s/checkout?from=1970-01-01T00:08:00Z&to=600"); r.StatusCode != 404 || !strings.Contains(body, "not stored") {
		t.Errorf("a range of unstored entries only: %s %q", r.Status, body)
	}
}

// TestServiceMergeTitle: the merged page's title says the time its
// profiles cover (the first one's start to the last one's end) and how
// many were merged, and the range asked for only when it differs, so a
// range wider than the profiles does not read as their span.
func TestServiceMergeTitle(t *testing.T) {
	s, err := web.New(web.Config{DataDir: t.TempDir(), OTLP: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	for _, seed := range []int{100, 200, 300} {
		p := otlptest.EBPFLike(500, seed)
		p.DurationNanos = 10e9 // each profile covers 10 s from its start
		body, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(p, map[string]string{"service.name": "checkout"})).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(ts.URL+web.OTLPPath, "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("OTLP: %s", resp.Status)
		}
	}
	title := regexp.MustCompile(`<title>([^<]*)</title>`)
	for _, tc := range []struct{ query, want string }{
		// Asked up to 00:04:10; the two profiles in it end at 00:03:30.
		{"?from=1970-01-01T00:01:40Z&to=250", "checkout, 2 profiles, 1970-01-01 00:01:40 to 00:03:30 UTC (asked from 1970-01-01T00:01:40Z to 1970-01-01T00:04:10Z) · viewer"},
		// Asked from before the first: the profiles' span, and the range.
		{"?from=50", "checkout, 3 profiles, 1970-01-01 00:01:40 to 00:05:10 UTC (asked from 1970-01-01T00:00:50Z to the last) · viewer"},
		// The whole service: nothing asked but its profiles.
		{"", "checkout, 3 profiles, 1970-01-01 00:01:40 to 00:05:10 UTC · viewer"},
		{"?from=300", "checkout, 1 profile, 1970-01-01 00:05:00 to 00:05:10 UTC · viewer"},
	} {
		resp, err := http.Get(ts.URL + "/s/checkout" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Request.URL.Path, "/p/") {
			t.Errorf("%s: %s at %s", tc.query, resp.Status, resp.Request.URL.Path)
			continue
		}
		m := title.FindSubmatch(page)
		if m == nil {
			t.Errorf("%s: the page has no title", tc.query)
			continue
		}
		if got := html.UnescapeString(string(m[1])); got != tc.want {
			t.Errorf("%s: title\n%q, want\n%q", tc.query, got, tc.want)
		}
	}
}
