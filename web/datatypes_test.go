package web

import (
	"context"
	"debug/elf"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/web/profiles"
)

const typesTestdata = "../testdata/datatype"

// testdataEngine finds the test binaries under testdata/datatype as
// --debug-dir finds them (by build ID, named like the binary: the perf.data
// names them by the path they were recorded at, which differs on every
// checkout), and looks on this machine for everything else.
func testdataEngine(cfg symbolize.Config) *symbolize.Symbolizer {
	cfg.DebugDirs = append(cfg.DebugDirs, typesTestdata)
	return symbolize.New(cfg)
}

func fileBuildID(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return symbolize.ELFBuildID(f)
}

func getTypesJSON(t *testing.T, url string) typesResponse {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	var r typesResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("types.json: %v\n%s", err, body)
	}
	return r
}

type typesResponse struct {
	SampleType string `json:"sampleType"`
	symbolize.DataTypeProfile
}

func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// typesServer is a test server whose data-type engine reads testdata's
// binaries, with datatype-dw5-pie's perf.data uploaded as pid.
func typesServer(t *testing.T) (s *Server, ts *httptest.Server, pid string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(typesTestdata, "datatype-dw5-pie.perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	s, ts = newTestServer(t, Config{})
	s.SetDataTypeEngine(testdataEngine(symbolize.Config{}))
	return s, ts, upload(t, ts.URL, data)
}

// TestTypesEndToEnd uploads a perf.data recorded with `perf record -e
// cpu-clock` of testdata/datatype/datatype-dw5-pie (build.sh) and checks
// types.json and the page: the hot loops walk struct node lists, so struct
// node must lead, touched by sum_list and the inlined list_keys.
func TestTypesEndToEnd(t *testing.T) {
	exe := filepath.Join(typesTestdata, "datatype-dw5-pie")
	id := fileBuildID(t, exe)
	s, ts, pid := typesServer(t)
	l, err := s.Profile(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	si, _ := resolveSI(l.Meta, "")
	wantTotal := l.Meta.SampleTypes[si].Total

	r := getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json")
	if r.Total != wantTotal || r.Total == 0 {
		t.Errorf("types.json total = %d, want the profile's %s total %d", r.Total, l.Meta.SampleTypes[si].Type, wantTotal)
	}
	var sum int64
	for _, ty := range r.Types {
		sum += ty.Weight
	}
	if sum != r.Total {
		t.Errorf("type weights add up to %d, want the total %d", sum, r.Total)
	}
	var dsoSum int64
	var app *symbolize.DataTypeDSO
	for i, d := range r.DSOs {
		dsoSum += d.Samples
		if d.BuildID == id {
			app = &r.DSOs[i]
		}
		if d.DebugSource == "" && d.Error == "" {
			t.Errorf("DSO %+v says neither where its debug info came from nor why there is none", d)
		}
	}
	if dsoSum != r.Total {
		t.Errorf("DSO samples add up to %d, want %d", dsoSum, r.Total)
	}
	if app == nil || app.Name != "datatype-dw5-pie" || !strings.Contains(app.DebugSource, "datatype-dw5-pie (") || app.Error != "" || app.Samples*2 < r.Total {
		t.Fatalf("test binary's DSO entry = %+v; want datatype-dw5-pie with build ID %s, most samples; all: %+v", app, id, r.DSOs)
	}
	if len(r.Types) == 0 || r.Types[0].Name != "struct node" || r.Types[0].DSO != "datatype-dw5-pie" || r.Types[0].Weight*5 < r.Total {
		t.Fatalf("top type = %+v, want struct node with at least 20%% of the samples", r.Types)
	}
	node := r.Types[0]
	funcs := map[string]bool{}
	for _, f := range node.Funcs {
		funcs[f.Name] = true
	}
	if !funcs["sum_list"] || !funcs["list_keys"] {
		t.Errorf("struct node funcs = %+v, want sum_list and the inlined list_keys", node.Funcs)
	}
	var memberSum int64
	for _, m := range node.Members {
		if m.Name != "" {
			memberSum += m.Weight
		}
		if m.Name == "" && m.Total != node.Weight {
			t.Errorf("struct node whole-type row total %d, want %d", m.Total, node.Weight)
		}
	}
	if memberSum != node.Weight {
		t.Errorf("struct node member weights add up to %d, want %d", memberSum, node.Weight)
	}

	page := getPage(t, ts.URL+"/p/"+pid+"/types")
	for _, want := range []string{"Data types", "struct node", "sum_list", "datatype-dw5-pie", id, `href="/p/` + pid + `?q=sum_list"`, `href="/p/` + pid + `/types/flame"`} {
		if !strings.Contains(page, want) {
			t.Errorf("types page lacks %q", want)
		}
	}

	// The types flame graph: stacks end in the type, then the member.
	fj := getPage(t, ts.URL+"/p/"+pid+"/types/flame.json")
	for _, want := range []string{`"struct node"`, `"struct node.next"`, `"(stack operation)"`} {
		if !strings.Contains(fj, want) {
			t.Errorf("types flame.json lacks %s", want)
		}
	}
	var fg struct {
		Names []string `json:"names"`
		Nodes []int64  `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(fj), &fg); err != nil {
		t.Fatal(err)
	}
	// Nodes are pre-order (name, depth, total, self): a member frame's parent
	// is its type's frame, and the type frames add up to the type's weight.
	var parents []int64 // name index at each depth
	var nodeTotal int64
	for i := 0; i+3 < len(fg.Nodes); i += 4 {
		name, depth, total := fg.Nodes[i], fg.Nodes[i+1], fg.Nodes[i+2]
		parents = append(parents[:depth], name)
		switch fg.Names[name] {
		case "struct node":
			nodeTotal += total
		case "struct node.next", "struct node.key", "struct node.val":
			if depth == 0 || fg.Names[parents[depth-1]] != "struct node" {
				t.Errorf("member frame %s is not under a struct node frame", fg.Names[name])
			}
		}
	}
	if nodeTotal != node.Weight {
		t.Errorf("struct node frames total %d in the types flame graph, want its weight %d", nodeTotal, node.Weight)
	}
	fp := getPage(t, ts.URL+"/p/"+pid+"/types/flame")
	if !strings.Contains(fp, "/p/"+pid+"/types/flame.json") || !strings.Contains(fp, `"exact":true`) {
		t.Errorf("types flame page does not load types/flame.json, or not with its exact top.json")
	}
	// Its table (types/top.json) counts every sample, as the data-type
	// page does: it was computed in the browser from the compacted tree,
	// which leaves out what it merges into "…".
	var top struct {
		Total int64    `json:"total"`
		Rows  [][3]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(getPage(t, ts.URL+"/p/"+pid+"/types/top.json?n=100000")), &top); err != nil {
		t.Fatal(err)
	}
	cum := map[string]int64{}
	for _, row := range top.Rows {
		cum[row[0].(string)] = int64(row[2].(float64))
	}
	want := map[string]int64{}
	for _, ty := range r.Types {
		want[ty.Name] += ty.Weight
	}
	if top.Total != r.Total || len(want) == 0 {
		t.Errorf("types/top.json total %d, want %d; %d types", top.Total, r.Total, len(want))
	}
	for name, w := range want {
		if cum[name] != w {
			t.Errorf("types/top.json: %s has %d, want its weight on the data-type page, %d", name, cum[name], w)
		}
	}

	// Skid correction (on by default): this cpu-clock recording's samples
	// on sum_list's `test %rdi,%rdi`, just after the `mov (%rdi),%rdi`
	// that chases n->next, count on struct node.next. ?skid=0 shows each
	// sample's own instruction, and every link of that page keeps it off.
	off := getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json?skid=0")
	if r.Skid <= 0 || off.Skid != 0 || off.Total != r.Total {
		t.Fatalf("skid weight on %d, off %d (totals %d, %d): want some samples counted through skid correction only when it is on", r.Skid, off.Skid, r.Total, off.Total)
	}
	weights := func(p typesResponse) (node, unknownTest int64) {
		for _, ty := range p.Types {
			if ty.Name == "struct node" {
				node += ty.Weight
			}
		}
		for _, u := range p.Unknown {
			if u.Func == "sum_list" && strings.HasPrefix(u.Reason, "test has no memory operand") {
				unknownTest += u.Weight
			}
		}
		return
	}
	nodeOn, testOn := weights(r)
	nodeOff, testOff := weights(off)
	if testOff == 0 || testOn != 0 || nodeOn-nodeOff < testOff {
		t.Errorf("struct node %d (skid on) vs %d (off); sum_list's unattributed test: %d on, %d off; want the test's samples moved to struct node", nodeOn, nodeOff, testOn, testOff)
	}
	pageOff := getPage(t, ts.URL+"/p/"+pid+"/types?skid=0")
	for _, want := range []string{`href="/p/` + pid + `/types.json?skid=0"`, `href="/p/` + pid + `/types/flame?skid=0"`, `<option value="0" selected>`} {
		if !strings.Contains(pageOff, want) {
			t.Errorf("types page with ?skid=0 lacks %q", want)
		}
	}
	if !strings.Contains(page, "through skid correction") {
		t.Errorf("types page does not say which share was counted through skid correction")
	}
	if fpOff := getPage(t, ts.URL+"/p/"+pid+"/types/flame?skid=0"); !regexp.MustCompile(`/types/flame\.json\?[^"]*skid=0`).MatchString(fpOff) {
		t.Errorf("types flame page with ?skid=0 does not load its data without skid correction")
	}
}

// TestTypesWithoutDebugInfo: binaries that cannot be found, and a profile
// without addresses, still give a page that lists why.
func TestTypesWithoutDebugInfo(t *testing.T) {
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/nonexistent/app", BuildID: "abcdef0123"}
	fn := &profile.Function{ID: 1, Name: "main"}
	withAddr := &profile.Location{ID: 1, Mapping: m, Address: 0x401000}
	noAddr := &profile.Location{ID: 2, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{withAddr}, Value: []int64{7}},
			{Location: []*profile.Location{noAddr}, Value: []int64{3}},
		},
		Mapping:  []*profile.Mapping{m},
		Location: []*profile.Location{withAddr, noAddr},
		Function: []*profile.Function{fn},
	}
	_, ts := newTestServer(t, Config{})
	pid := upload(t, ts.URL, encodeProfile(t, p, true))
	r := getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json")
	if r.Total != 10 || len(r.Types) != 2 || r.Types[0].Name != "(unknown)" || r.Types[0].Weight != 7 || r.Types[1].Name != "(unknown)" {
		t.Fatalf("types.json = %+v, want 10 samples all unknown, per binary", r.DataTypeProfile)
	}
	if len(r.DSOs) != 2 || r.DSOs[0].Name != "app" || !strings.Contains(r.DSOs[0].Error, "no executable with build ID abcdef0123") ||
		r.DSOs[1].Samples != 3 || !strings.Contains(r.DSOs[1].Error, "without an address") {
		t.Errorf("DSOs = %+v", r.DSOs)
	}
	page := getPage(t, ts.URL+"/p/"+pid+"/types")
	if !strings.Contains(page, "no executable with build ID abcdef0123") {
		t.Errorf("types page does not say why app has no debug info")
	}
	resp, err := http.Get(ts.URL + "/p/" + strings.Repeat("a", profiles.IDLen) + "/types.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("types.json of a missing profile: %d, want 404", resp.StatusCode)
	}
}

// objdumpAddr returns the address of the first instruction in function fn
// of the binary at path whose text contains pattern (from `objdump -d`).
func objdumpAddr(t *testing.T, path, fn, pattern string) uint64 {
	t.Helper()
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Fatalf("objdump (binutils) is required: run make deps")
	}
	out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", path).Output()
	if err != nil {
		t.Fatalf("objdump -d %s: %v", path, err)
	}
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(line, ">:") {
			in = strings.HasSuffix(line, "<"+fn+">:")
			continue
		}
		if in && strings.Contains(strings.Join(strings.Fields(line), " "), pattern) {
			a, err := strconv.ParseUint(strings.TrimSpace(strings.SplitN(line, ":", 2)[0]), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
	}
	t.Fatalf("no %q in %s of %s", pattern, fn, path)
	return 0
}

// TestTypesPprofSeparateDebug: a pprof profile that keeps addresses, of a
// stripped PIE whose debug info is a separate file found by build ID under
// the debug directory, like a -dbg package installs it.
func TestTypesPprofSeparateDebug(t *testing.T) {
	full, err := filepath.Abs(filepath.Join(typesTestdata, "datatype-dw5-pie"))
	if err != nil {
		t.Fatal(err)
	}
	stripped := full + ".stripped"
	id := fileBuildID(t, stripped)
	debugDir := t.TempDir()
	dbg := filepath.Join(debugDir, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(dbg), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(full + ".debug")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dbg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	getKey := objdumpAddr(t, full, "get_key", "mov 0x8(%rdi),%rax")
	getY := objdumpAddr(t, full, "get_y", "0xc(%rdi)")

	const base = 0x555555554000 // where the PIE was loaded
	m := &profile.Mapping{ID: 1, Start: base, Limit: base + 0x100000, File: stripped, BuildID: id}
	fn := &profile.Function{ID: 1, Name: "main"}
	l1 := &profile.Location{ID: 1, Mapping: m, Address: base + getKey}
	l2 := &profile.Location{ID: 2, Mapping: m, Address: base + getY}
	l3 := &profile.Location{ID: 3, Mapping: m, Address: base + 0x1000, Line: []profile.Line{{Function: fn}}}
	l4 := &profile.Location{ID: 4, Mapping: m, Address: base + 0xf0000} // past the file's segments
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l1, l3}, Value: []int64{5}},
			{Location: []*profile.Location{l2, l3}, Value: []int64{2}},
			{Location: []*profile.Location{l4, l3}, Value: []int64{1}},
		},
		Mapping: []*profile.Mapping{m}, Location: []*profile.Location{l1, l2, l3, l4}, Function: []*profile.Function{fn},
	}
	s, ts := newTestServer(t, Config{})
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{debugDir}}))
	pid := upload(t, ts.URL, encodeProfile(t, p, true))
	r := getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json")
	if len(r.DSOs) != 1 || !strings.HasPrefix(r.DSOs[0].DebugSource, dbg+" (") || r.DSOs[0].Error != "" {
		t.Fatalf("DSOs = %+v, want the debug file %s", r.DSOs, dbg)
	}
	want := map[string]string{"struct node": "key", "struct outer": "in.y"}
	wantW := map[string]int64{"struct node": 5, "struct outer": 2}
	for _, ty := range r.Types {
		member := ""
		for _, m := range ty.Members {
			if m.Weight > 0 {
				member = m.Name
			}
		}
		if ty.Name == "(unknown)" {
			continue
		}
		if want[ty.Name] != member || wantW[ty.Name] != ty.Weight {
			t.Errorf("type %s weight %d member %q; want %v %v", ty.Name, ty.Weight, member, wantW, want)
		}
	}
	if len(r.Types) != 3 || r.Types[2].Name != "(unknown)" || r.Types[2].Weight != 1 {
		t.Errorf("types = %+v, want struct node, struct outer and one unknown sample", r.Types)
	}
	if len(r.Unknown) != 1 || !strings.Contains(r.Unknown[0].Reason, "not in the binary's loadable segments") {
		t.Errorf("unknown = %+v, want the address outside the segments", r.Unknown)
	}

	// Without the debug file, the stripped binary is listed with the reason.
	// (Its copy alone in a --debug-dir: beside the original, its
	// .gnu_debuglink names the .debug file, which would be found.)
	alone := t.TempDir()
	sdata, err := os.ReadFile(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alone, filepath.Base(stripped)), sdata, 0o755); err != nil {
		t.Fatal(err)
	}
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{alone}, IgnoreMappingPaths: true, SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-"}))
	r = getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json")
	if len(r.DSOs) != 1 || !strings.Contains(r.DSOs[0].Error, "has no DWARF") {
		t.Errorf("without debug info: DSOs = %+v", r.DSOs)
	}
}

// TestTypesFlameHeaderFilters: the data-type flame graph's header links to
// the profile's flame graph, top and time order leave out a filter that
// names a type or member frame (the profile has none: a focus on struct
// node led to an empty graph, an ignore of it to every sample) and keep
// the filters of functions, the time range and skid's page link.
func TestTypesFlameHeaderFilters(t *testing.T) {
	_, ts, pid := typesServer(t)
	href := regexp.MustCompile(`<a href="([^"]*)"[^>]*>Top</a>`)
	for q, want := range map[string]string{
		"f=%5Estruct+node%24":                "/p/" + pid + "/top",
		"i=struct+node&t=0-1":                "/p/" + pid + "/top?t=0-1",
		"h=%5Estruct+node%5C.next%24":        "/p/" + pid + "/top",
		"f=%5Esum_list%24&h=%28unknown%29":   "/p/" + pid + "/top?f=%5Esum_list%24",
		"skid=0&f=%5Esum_list%24&i=%5Emain$": "/p/" + pid + "/top?f=%5Esum_list%24&amp;i=%5Emain%24",
	} {
		m := href.FindStringSubmatch(getPage(t, ts.URL+"/p/"+pid+"/types/flame?"+q))
		if m == nil {
			t.Fatalf("types/flame?%s: no Top link", q)
		}
		if got := m[1]; got != want {
			t.Errorf("types/flame?%s: the Top link is %s, want %s", q, got, want)
		}
	}
}

// TestTypesPageTypesLinkKeepsSkid: the data-type page's own Types link
// keeps skid=0, as the data-type flame graph's does: it went to the page
// with skid correction.
func TestTypesPageTypesLinkKeepsSkid(t *testing.T) {
	_, ts, pid := typesServer(t)
	m := regexp.MustCompile(`<a href="([^"]*)"[^>]*>Types</a>`).FindStringSubmatch(getPage(t, ts.URL+"/p/"+pid+"/types?skid=0"))
	if m == nil || m[1] != "/p/"+pid+"/types?skid=0" {
		t.Errorf("the Types link of /types?skid=0 is %q, want /p/%s/types?skid=0", m, pid)
	}
}
