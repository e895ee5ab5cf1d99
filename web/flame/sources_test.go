package flame

import (
	"encoding/json"
	"testing"

	"github.com/google/pprof/profile"
)

// TestSourceJSON checks flame.json's per-name file:line and inlined flag:
// a function inlined at one call site and called at another is "2", the
// outer frame of an inlined location "0", a raw address has no file.
func TestSourceJSON(t *testing.T) {
	m := &profile.Mapping{ID: 1, File: "/bin/app", Start: 0x1000, Limit: 0x9000}
	mainFn := &profile.Function{ID: 1, Name: "main.main", Filename: "/src/main.go", StartLine: 10}
	helper := &profile.Function{ID: 2, Name: "main.helper", Filename: "/src/helper.go"}
	l1 := &profile.Location{ID: 1, Mapping: m, Address: 0x1100, Line: []profile.Line{{Function: helper, Line: 7}, {Function: mainFn, Line: 12}}}
	l2 := &profile.Location{ID: 2, Mapping: m, Address: 0x1200, Line: []profile.Line{{Function: helper, Line: 8}}}
	l3 := &profile.Location{ID: 3, Mapping: m, Address: 0x1300}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Mapping:    []*profile.Mapping{m},
		Function:   []*profile.Function{mainFn, helper},
		Location:   []*profile.Location{l1, l2, l3},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l1}, Value: []int64{3}},
			{Location: []*profile.Location{l2, l1}, Value: []int64{2}},
			{Location: []*profile.Location{l3, l1}, Value: []int64{1}},
		},
	}
	for _, tc := range []struct {
		name string
		tree *Tree
	}{
		{"Build", Build(p, 0, Options{})},
		{"Stacks", NewStacks(p, 0, Options{}).Tree(nil, Options{})},
	} {
		var got struct {
			Names   []string
			Files   []string
			Src     []int
			Inlined []int
		}
		if err := json.Unmarshal(tc.tree.JSON(), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Src) != 2*len(got.Names) || len(got.Inlined) != len(got.Names) {
			t.Fatalf("%s: %d names, %d src, %d inlined", tc.name, len(got.Names), len(got.Src), len(got.Inlined))
		}
		want := map[string]struct {
			file   string
			line   int
			inline int
		}{
			"main.main":   {"/src/main.go", 10, 0},
			"main.helper": {"/src/helper.go", 7, 2}, // no start line: the first line met
			"app+0x300":   {"", 0, 0},
			RootName:      {"", 0, 0},
		}
		for i, n := range got.Names {
			w, ok := want[n]
			if !ok {
				t.Errorf("%s: unexpected name %q", tc.name, n)
				continue
			}
			file := ""
			if f := got.Src[2*i]; f >= 0 {
				file = got.Files[f]
			}
			if file != w.file || got.Src[2*i+1] != w.line || got.Inlined[i] != w.inline {
				t.Errorf("%s: %s: file %q line %d inlined %d, want %q %d %d", tc.name, n, file, got.Src[2*i+1], got.Inlined[i], w.file, w.line, w.inline)
			}
		}
	}
}
