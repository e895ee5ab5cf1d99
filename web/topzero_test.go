package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// zeroTypeProfile is a heap-like profile whose second sample type is zero
// for some functions: main.retain keeps what it allocates, main.churn and
// main.scratch (under main.churn) keep nothing.
func zeroTypeProfile() *profile.Profile {
	var fns []*profile.Function
	var locs []*profile.Location
	loc := func(name string) *profile.Location {
		f := &profile.Function{ID: uint64(len(fns) + 1), Name: name}
		l := &profile.Location{ID: uint64(len(locs) + 1), Address: 0x1000 * uint64(len(locs)+1), Line: []profile.Line{{Function: f}}}
		fns, locs = append(fns, f), append(locs, l)
		return l
	}
	root, retain, churn, scratch := loc("main.main"), loc("main.retain"), loc("main.churn"), loc("main.scratch")
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "inuse_objects", Unit: "count"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{retain, root}, Value: []int64{40, 40}},
			{Location: []*profile.Location{churn, root}, Value: []int64{300, 0}},
			{Location: []*profile.Location{scratch, churn, root}, Value: []int64{70, 0}},
		},
		Location: locs, Function: fns,
	}
}

// TestTopListsWhatPprofLists checks that, for each sample type of a
// profile whose second type is zero for some functions, top.json (which
// the flame page's table draws) and the /top page list the functions and
// values go tool pprof -top lists for that sample index, and no row whose
// flat and cum are both zero.
func TestTopListsWhatPprofLists(t *testing.T) {
	p := zeroTypeProfile()
	path := filepath.Join(t.TempDir(), "heap.pb.gz")
	if err := os.WriteFile(path, encodeProfile(t, p, true), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, p, true))
	for si, st := range p.SampleType {
		want := pprofTopRows(t, path, si)
		resp, err := http.Get(ts.URL + "/p/" + id + "/top.json?n=100&si=" + st.Type)
		if err != nil {
			t.Fatal(err)
		}
		var top struct{ Rows [][3]any }
		err = json.NewDecoder(resp.Body).Decode(&top)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range top.Rows {
			got = append(got, fmt.Sprintf("%v %v %v", r[1], r[2], r[0]))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: top.json rows (flat cum name)\n%q\nwant go tool pprof -top -sample_index=%d's\n%q", st.Type, got, si, want)
		}
		r := get(t, ts.URL+"/p/"+id+"/top?si="+st.Type)
		var names []string
		for _, m := range regexp.MustCompile(`<td class="fn" title="([^"]*)"`).FindAllStringSubmatch(string(r.body), -1) {
			names = append(names, m[1])
		}
		slices.Sort(names)
		var wantNames []string
		for _, w := range want {
			wantNames = append(wantNames, w[strings.LastIndex(w, " ")+1:])
		}
		slices.Sort(wantNames)
		if !slices.Equal(names, wantNames) {
			t.Errorf("%s: /top lists %q, want %q", st.Type, names, wantNames)
		}
	}
}

// pprofTopRows is go tool pprof -top of path for sample index si, every
// function (no node dropped for being small), as sorted "flat cum name".
func pprofTopRows(t *testing.T, path string, si int) []string {
	t.Helper()
	cmd := exec.Command("go", "tool", "pprof", "-top", fmt.Sprintf("-sample_index=%d", si), "-nodefraction=0", "-nodecount=1000", path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	var rows []string
	header := false
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] == "flat" && f[1] == "flat%" {
			header = true
			continue
		}
		if header && len(f) == 6 {
			rows = append(rows, f[0]+" "+f[3]+" "+f[5])
		}
	}
	if len(rows) == 0 {
		t.Fatalf("go tool pprof -top listed no function:\n%s", out)
	}
	slices.Sort(rows)
	return rows
}
