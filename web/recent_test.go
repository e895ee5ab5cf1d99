package web_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"viewer/web"
	"viewer/web/store"
	"viewer/web/webtest"
)

// recentIDs GETs base's /api/recent and returns its profiles' IDs.
func recentIDs(t *testing.T, base string) []string {
	t.Helper()
	code, body := webtest.GetToken(t, base+"/api/recent", "")
	if code != http.StatusOK {
		t.Fatalf("/api/recent: %d %.200s", code, body)
	}
	var got struct {
		Profiles []struct{ ID, Name string }
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("/api/recent: %v in %.200s", err, body)
	}
	var ids []string
	for _, p := range got.Profiles {
		ids = append(ids, p.ID)
	}
	return ids
}

// TestRecentSharedAndKept is the compare picker's list as replicas and a
// restart see it: two servers on one store each list both servers'
// uploads, newest first, and a server started afterwards on that store
// lists them too (they were kept in memory per process before).
func TestRecentSharedAndKept(t *testing.T) {
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	start := func() string {
		s, err := web.New(web.Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		ts := webtest.LoopbackServer(t, s.Handler())
		ts.Start()
		t.Cleanup(func() { ts.Close(); s.CloseSymbolization() })
		return ts.URL
	}
	a, b := start(), start()
	first := webtest.PostProfile(t, a, "first.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(50, 3)...))
	second := webtest.PostProfile(t, b, "second.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(50, 4)...))
	third := webtest.PostProfile(t, a, "third.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(50, 5)...))
	want := []string{third, second, first}
	for name, base := range map[string]string{"replica a": a, "replica b": b, "a server started later": start()} {
		if got := recentIDs(t, base); !slices.Equal(got, want) {
			t.Errorf("%s lists %q, want the three uploads newest first %q", name, got, want)
		}
	}
	// The same bytes again are one profile, listed once, as the newest.
	if again := webtest.PostProfile(t, b, "first.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(50, 3)...)); again != first {
		t.Fatalf("the same bytes got ID %s, then %s", first, again)
	}
	if got := recentIDs(t, a); !slices.Equal(got, []string{first, third, second}) {
		t.Errorf("after uploading the first profile again: %q, want it first and once", got)
	}
}
