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
