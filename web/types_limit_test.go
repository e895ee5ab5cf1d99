package web

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	exe := filepath.Join(typesTestdata, "datatype-dw5-pie")
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	limit := fi.Size() - 1
	s, ts := newTestServer(t, Config{Limits: Limits{MaxDebugFile: limit}})
	s.SetTypesDebugFinder(buildIDFinder{
		byID: map[string]TypesDebug{fileBuildID(t, exe): {Exec: exe, Debug: exe, Source: "testdata"}},
		next: LocalTypesDebugFinder{},
	})
	pid := upload(t, ts.URL, data)
	r := getTypesJSON(t, ts.URL+"/p/"+pid+"/types.json")
	want := fmt.Sprintf("debug file %s is %d bytes, over --max-debug-file %d", exe, fi.Size(), limit)
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
// kept within a byte budget (--symbol-cache-size), the least recently used
// evicted first, and what they hold is counted as it grows.
func TestTypesBinariesWithinBudget(t *testing.T) {
	var paths []string
	for _, name := range []string{"datatype-dw5-pie", "datatype-dw4-pie"} {
		p, err := filepath.Abs(filepath.Join(typesTestdata, name))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	s, ts := newTestServer(t, Config{})
	svc := s.types()
	var ids []string
	for _, p := range paths {
		ids = append(ids, upload(t, ts.URL, typesAddrProfile(t, p, p, fileBuildID(t, p))))
	}
	sizes := map[string]int64{}
	for i, id := range ids {
		r := getTypesJSON(t, ts.URL+"/p/"+id+"/types.json")
		checkTypes(t, r)
		tb, ok := svc.binaries.Peek(paths[i] + "\x00" + paths[i])
		if !ok || tb.bin == nil {
			t.Fatalf("%s is not kept after its page", paths[i])
		}
		sizes[paths[i]] = tb.bin.Size()
		if info := fileSize(t, paths[i]); sizes[paths[i]] < info/4 {
			t.Errorf("%s: Size() = %d bytes for a %d-byte binary: it does not count the sections it holds", paths[i], sizes[paths[i]], info)
		}
	}
	if got, want := svc.held.Load(), sizes[paths[0]]+sizes[paths[1]]; svc.binaries.Len() != 2 || got != want {
		t.Fatalf("with the default budget: %d binaries holding %d bytes; want both, %d bytes", svc.binaries.Len(), got, want)
	}

	// A budget smaller than both: opening one evicts the other.
	svc.budget.Store(sizes[paths[0]] + sizes[paths[1]] - 1)
	svc.results.Purge() // compute again rather than serve cached pages
	r := getTypesJSON(t, ts.URL+"/p/"+ids[0]+"/types.json?skid=0")
	checkTypes(t, r)
	if _, ok := svc.binaries.Peek(paths[1] + "\x00" + paths[1]); ok || svc.binaries.Len() != 1 {
		t.Errorf("over budget, the least recently used binary is still kept (%d kept)", svc.binaries.Len())
	}
	if got, want := svc.held.Load(), sizes[paths[0]]; got != want {
		t.Errorf("held %d bytes with one binary of %d", got, want)
	}
	// The evicted binary opens again when its page is asked for.
	checkTypes(t, getTypesJSON(t, ts.URL+"/p/"+ids[1]+"/types.json?skid=0"))
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
