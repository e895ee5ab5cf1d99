package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
)

// TestTypesDebugFileOverLimit: on a server with --max-debug-file below the
// size of a binary's debug file, the data-type page does not open it: the
// binary is listed with a reason naming the file, its size and the limit,
// and the page still answers.
func TestTypesDebugFileOverLimit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(typesTestdata, "datatype-dw5-pie.perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	// The binary alone in its debug directory: testdata also holds its
	// smaller .debug file, which --debug-dir finds by build ID.
	bin, err := os.ReadFile(filepath.Join(typesTestdata, "datatype-dw5-pie"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "datatype-dw5-pie")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	limit := int64(len(bin)) - 1
	s, ts := newTestServer(t, Config{Limits: Limits{MaxDebugFile: limit}})
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{MaxDebugFile: limit, DebugDirs: []string{dir}}))
	pid := upload(t, ts.URL, data)
	r := getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json")
	want := fmt.Sprintf("debug file %s is %d bytes, over --max-debug-file %d", exe, len(bin), limit)
	found := false
	for _, d := range r.DSOs {
		if d.Name == "datatype-dw5-pie" {
			found = true
			if !strings.Contains(d.Error, want) {
				t.Errorf("DSO %s error %q, want %q", d.Name, d.Error, want)
			}
		}
	}
	if !found {
		t.Fatalf("DSOs %+v lack datatype-dw5-pie", r.DSOs)
	}
	for _, ty := range r.Types {
		if ty.DSO == "datatype-dw5-pie" && ty.Name != "(unknown)" {
			t.Errorf("type attributed from a file over the limit: %+v", ty)
		}
	}
	if page := getPage(t, ts.URL+"/p/"+pid+"/types"); !strings.Contains(page, "over --max-debug-file") {
		t.Error("the types page does not say why the binary has no types")
	}
}

// TestTypesBinariesWithinBudget: the data-type page's opened binaries are
// held by the engine's one store, within its byte budget
// (--symbol-cache-size), the least recently used evicted first, and what
// they hold is counted as it grows; a binary in the budget opens once.
func TestTypesBinariesWithinBudget(t *testing.T) {
	var paths []string
	for _, name := range []string{"datatype-dw5-pie", "datatype-dw4-pie"} {
		p, err := filepath.Abs(filepath.Join(typesTestdata, name))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	hermetic := symbolize.Config{SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-"}
	engine := symbolize.New(hermetic)
	s, ts := newTestServer(t, Config{})
	s.SetDataTypeEngine(engine)
	var ids []string
	for _, p := range paths {
		ids = append(ids, upload(t, ts.URL, typesAddrProfile(t, p, p, fileBuildID(t, p))))
	}
	sizes := map[string]int64{}
	var held int64
	for i, id := range ids {
		r := getTypesJSON(t, ts.URL+"/p/"+id+"/types.json")
		checkTypes(t, r)
		n, bytes := engine.CacheStats()
		if n != i+1 {
			t.Fatalf("%s is not kept after its page: %d binaries held", paths[i], n)
		}
		sizes[paths[i]] = bytes - held
		held = bytes
		if info := fileSize(t, paths[i]); sizes[paths[i]] < info/4 {
			t.Errorf("%s: held %d bytes for a %d-byte binary: it does not count the sections it holds", paths[i], sizes[paths[i]], info)
		}
	}
	if n, got := engine.CacheStats(); n != 2 || got != sizes[paths[0]]+sizes[paths[1]] || engine.Loads() != 2 {
		t.Fatalf("with the default budget: %d binaries holding %d bytes, %d loads; want both, %d bytes, 2 loads", n, got, engine.Loads(), sizes[paths[0]]+sizes[paths[1]])
	}
	s.types.results.Purge() // compute again rather than serve cached pages
	checkTypes(t, getTypesJSON(t, ts.URL+"/p/"+ids[0]+"/types.json"))
	if engine.Loads() != 2 {
		t.Errorf("a binary within the budget was opened again: %d loads for 2 binaries", engine.Loads())
	}

	// A budget smaller than both: opening one evicts the other.
	small := hermetic
	small.CacheBytes = sizes[paths[0]] + sizes[paths[1]] - 1
	engine = symbolize.New(small)
	s.SetDataTypeEngine(engine)
	checkTypes(t, getTypesJSON(t, ts.URL+"/p/"+ids[1]+"/types.json?skid=0"))
	checkTypes(t, getTypesJSON(t, ts.URL+"/p/"+ids[0]+"/types.json?skid=0"))
	if n, got := engine.CacheStats(); n != 1 || got < sizes[paths[0]] || got > small.CacheBytes {
		t.Errorf("over budget: %d binaries kept holding %d bytes; want only the most recent one, %d bytes", n, got, sizes[paths[0]])
	}
	// The evicted binary opens again when its page is asked for.
	checkTypes(t, getTypesJSON(t, ts.URL+"/p/"+ids[1]+"/types.json"))
	if engine.Loads() != 3 {
		t.Errorf("%d loads, want 3: the evicted binary opened again", engine.Loads())
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestTypesWithinRenderBudget: a profile of 20 functions with 200 KB
// names (the page held each name about six times: 24 MB) on a server with
// a 1 MiB --render-bytes: /types and /types.json answer within it, list the
// heaviest entries that fit and say what they leave out, as /top does; the
// data-type flame graph is compacted to it, as flame.json is.
func TestTypesWithinRenderBudget(t *testing.T) {
	m := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000000, File: "/nonexistent/x"}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}, Mapping: []*profile.Mapping{m}}
	long := strings.Repeat("A", 200_000)
	for i := range 20 {
		f := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprint(i) + long}
		l := &profile.Location{ID: uint64(i + 1), Mapping: m, Address: 0x1000 + uint64(i), Line: []profile.Line{{Function: f}}}
		p.Function, p.Location = append(p.Function, f), append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{int64(i + 1)}})
	}
	const budget = 1 << 20
	_, ts := newTestServer(t, Config{Limits: Limits{RenderBytes: budget}})
	id := upload(t, ts.URL, encodeProfile(t, p, true))

	page := getPage(t, ts.URL+"/p/"+id+"/types")
	heaviest := "19" + long
	if len(page) > budget || !strings.Contains(page, ">"+heaviest+"</a>") ||
		!strings.Contains(page, "This lists as much as fits the server&#39;s rendering budget (--render-nodes, --render-bytes): 1 data type listing fewer of the functions touching it, 0 of 20 functions") ||
		!strings.Contains(page, "18 more functions over the server's rendering budget") {
		t.Errorf("/types: %d bytes; want at most %d, linking the heaviest function, saying what it leaves out", len(page), budget)
	}

	resp, err := http.Get(ts.URL + "/p/" + id + "/types.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var j struct {
		Types []struct {
			Name  string
			Funcs []struct{ Name string }
		}
		Compacted struct {
			Types int
			Note  string
		}
	}
	if err := json.Unmarshal(body, &j); err != nil || resp.StatusCode != 200 {
		t.Fatalf("types.json: %d, %v", resp.StatusCode, err)
	}
	if len(body) > budget || len(j.Types) != 1 || len(j.Types[0].Funcs) == 0 || len(j.Types[0].Funcs) == 20 || j.Types[0].Funcs[0].Name != heaviest ||
		j.Compacted.Types != 1 || !strings.Contains(j.Compacted.Note, "1 data type listing fewer of the functions touching it") {
		t.Errorf("types.json: %d bytes, %d types, compacted %d types: %q; want at most %d bytes listing the heaviest functions that fit, and a note", len(body), len(j.Types), j.Compacted.Types, j.Compacted.Note, budget)
	}

	resp, err = http.Get(ts.URL + "/p/" + id + "/types/flame.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var f struct{ Compacted struct{ Note string } }
	json.Unmarshal(body, &f)
	if resp.StatusCode != 200 || len(body) > budget || !strings.Contains(f.Compacted.Note, "compacted to fit the server's rendering budget") {
		t.Errorf("types/flame.json: %d, %d bytes, note %q; want at most %d bytes, compacted", resp.StatusCode, len(body), f.Compacted.Note, budget)
	}
}
