package flame

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// handProfile is small enough to compute its tree by hand (values are for
// the cpu sample type):
//
//	main→a→c          10
//	main→b→inl        20  (inl is inlined into b: one location, two lines)
//	main→a→libc+off    5  (unsymbolized)
//	main               3
//	main→a→a           7  (recursion)
func handProfile() *profile.Profile {
	app := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", HasFunctions: true}
	libc := &profile.Mapping{ID: 2, Start: 0x7f0000000000, Limit: 0x7f0000100000, Offset: 0x1000, File: "/usr/lib/libc.so.6"}
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	fMain, fA, fB, fC, fInl := fn(1, "main"), fn(2, "a"), fn(3, "b"), fn(4, "c"), fn(5, "inl")
	l1 := &profile.Location{ID: 1, Mapping: app, Address: 0x401000, Line: []profile.Line{{Function: fMain}}}
	l2 := &profile.Location{ID: 2, Mapping: app, Address: 0x402000, Line: []profile.Line{{Function: fA}}}
	l3 := &profile.Location{ID: 3, Mapping: app, Address: 0x403000, Line: []profile.Line{{Function: fInl}, {Function: fB}}}
	l4 := &profile.Location{ID: 4, Mapping: app, Address: 0x404000, Line: []profile.Line{{Function: fC}}}
	l5 := &profile.Location{ID: 5, Mapping: libc, Address: 0x7f0000001a2b}
	s := func(v0, v1 int64, locs ...*profile.Location) *profile.Sample {
		return &profile.Sample{Location: locs, Value: []int64{v0, v1}}
	}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			s(1, 10, l4, l2, l1),
			s(2, 20, l3, l1),
			s(1, 5, l5, l2, l1),
			s(1, 3, l1),
			s(1, 7, l2, l2, l1),
		},
		Mapping:  []*profile.Mapping{app, libc},
		Location: []*profile.Location{l1, l2, l3, l4, l5},
		Function: []*profile.Function{fMain, fA, fB, fC, fInl},
	}
}

type jsonTree struct {
	Version    int      `json:"version"`
	SampleType string   `json:"sampleType"`
	Unit       string   `json:"unit"`
	Total      int64    `json:"total"`
	Names      []string `json:"names"`
	Mapping    []int    `json:"mapping"`
	Mappings   []string `json:"mappings"`
	Nodes      []int64  `json:"nodes"`
}

func decode(t *testing.T, tr *Tree) jsonTree {
	t.Helper()
	var j jsonTree
	if err := json.Unmarshal(tr.JSON(), &j); err != nil {
		t.Fatalf("flame.json does not parse: %v\n%s", err, tr.JSON())
	}
	return j
}

func TestBuildByHand(t *testing.T) {
	p := handProfile()
	si, err := SampleIndex(p, "")
	if err != nil || si != 1 {
		t.Fatalf("default SampleIndex = %d, %v; want 1 (the last)", si, err)
	}
	got := decode(t, Build(p, si, Options{}))
	want := jsonTree{
		Version: 1, SampleType: "cpu", Unit: "nanoseconds", Total: 45,
		Names:    []string{"root", "main", "a", "c", "libc.so.6+0x2a2b", "b", "inl"},
		Mapping:  []int{-1, 0, 0, 0, 1, 0, 0},
		Mappings: []string{"/bin/app", "/usr/lib/libc.so.6"},
		Nodes: []int64{
			0, 0, 45, 0, // root
			1, 1, 45, 3, // main
			2, 2, 22, 0, // main→a
			2, 3, 7, 7, // main→a→a
			3, 3, 10, 10, // main→a→c
			4, 3, 5, 5, // main→a→libc
			5, 2, 20, 0, // main→b
			6, 3, 20, 20, // main→b→inl
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tree:\n got %+v\nwant %+v", got, want)
	}

	// With a threshold of 0.2*45 = 9, a's children a (7) and libc (5) merge
	// into one "…" of 12, sorted after "c".
	got = decode(t, Build(p, si, Options{MinFraction: 0.2}))
	wantNodes := []int64{
		0, 0, 45, 0,
		1, 1, 45, 3,
		2, 2, 22, 0,
		3, 3, 10, 10,
		4, 3, 12, 12, // "…"
		5, 2, 20, 0, // b
		6, 3, 20, 20, // inl
	}
	if !reflect.DeepEqual(got.Nodes, wantNodes) || got.Names[4] != MergedName {
		t.Errorf("compacted tree:\n got %v %q\nwant %v", got.Nodes, got.Names, wantNodes)
	}

	// The other sample type counts samples instead.
	got = decode(t, Build(p, 0, Options{}))
	if got.Total != 6 || got.SampleType != "samples" || got.Unit != "count" {
		t.Errorf("samples tree: total %d type %q unit %q", got.Total, got.SampleType, got.Unit)
	}
}

func TestSampleIndex(t *testing.T) {
	p := handProfile()
	for _, tc := range []struct {
		si   string
		want int
		bad  bool
	}{{"", 1, false}, {"cpu", 1, false}, {"samples", 0, false}, {"0", 0, false}, {"1", 1, false}, {"2", 0, true}, {"alloc_space", 0, true}} {
		got, err := SampleIndex(p, tc.si)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "cpu") {
				t.Errorf("SampleIndex(%q) err = %v, want an error listing the sample types", tc.si, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SampleIndex(%q) = %d, %v; want %d", tc.si, got, err, tc.want)
		}
	}
	p.DefaultSampleType = "samples"
	if got, _ := SampleIndex(p, ""); got != 0 {
		t.Errorf("with DefaultSampleType=samples, SampleIndex(\"\") = %d, want 0", got)
	}
}

func TestTop(t *testing.T) {
	rows, total := Top(handProfile(), 1)
	want := []TopRow{
		{"inl", 20, 20},
		{"c", 10, 10},
		{"a", 7, 22}, // recursion counted once per stack
		{"libc.so.6+0x2a2b", 5, 5},
		{"main", 3, 45},
		{"b", 0, 20},
	}
	if total != 45 || !reflect.DeepEqual(rows, want) {
		t.Errorf("Top = %v, total %d\nwant %v, total 45", rows, total, want)
	}
}

// goldenProfile is handProfile plus a frame whose name needs escaping in
// both JSON and SVG.
func goldenProfile() *profile.Profile {
	p := handProfile()
	f := &profile.Function{ID: 6, Name: `std::vector<int>::at<&"x">`}
	l := &profile.Location{ID: 6, Mapping: p.Mapping[0], Address: 0x406000, Line: []profile.Line{{Function: f}}}
	p.Function = append(p.Function, f)
	p.Location = append(p.Location, l)
	p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l, p.Location[0]}, Value: []int64{1, 15}})
	return p
}

func TestGolden(t *testing.T) {
	in := filepath.Join("testdata", "small.pb.gz")
	if *update {
		var b bytes.Buffer
		if err := goldenProfile().Write(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	si, _ := SampleIndex(p, "")
	tr := Build(p, si, Options{MinFraction: -1})
	var svg bytes.Buffer
	if err := Build(p, si, Options{MinFraction: SVGMinFraction}).WriteSVG(&svg, "small.pb.gz cpu"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		file string
		got  []byte
	}{{"small.flame.json", tr.JSON()}, {"small.flame.svg", svg.Bytes()}} {
		path := filepath.Join("testdata", g.file)
		if *update {
			if err := os.WriteFile(path, g.got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(g.got, want) {
			t.Errorf("%s differs from the golden file; if the change is intended run go test ./web/flame -update\ngot:\n%s", g.file, g.got)
		}
	}
	if bytes.Contains(svg.Bytes(), []byte("<int>")) || !bytes.Contains(svg.Bytes(), []byte("std::vector&lt;int&gt;::at&lt;&amp;&quot;x&quot;&gt;")) {
		t.Errorf("SVG does not escape the C++ name:\n%s", svg.Bytes())
	}
	if !bytes.Contains(tr.JSON(), []byte(`"std::vector\u003cint\u003e::at\u003c\u0026\"x\"\u003e"`)) {
		t.Errorf("flame.json does not escape the C++ name:\n%s", tr.JSON())
	}
}

// TestFrameNamesOfFunctionArray checks the frame names of locations whose
// functions lie in one array (as web/ingest's decoder makes them, each
// named once however many locations it has): a named function's
// locations share its name, one named by its system name only takes it,
// and a function without a name leaves each location its own address.
func TestFrameNamesOfFunctionArray(t *testing.T) {
	app := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app"}
	fns := []profile.Function{{ID: 1, Name: "main"}, {ID: 2, SystemName: "_Z3runv"}, {ID: 3}}
	p := &profile.Profile{Mapping: []*profile.Mapping{app}}
	for i := range fns {
		p.Function = append(p.Function, &fns[i])
	}
	for i := range 6 {
		fn := &fns[i%3]
		p.Location = append(p.Location, &profile.Location{ID: uint64(i + 1), Mapping: app, Address: 0x401000 + uint64(i)*0x10,
			Line: []profile.Line{{Function: fn, Line: int64(i)}}})
	}
	f := newFrames(p)
	want := []string{"main", "_Z3runv", "app+0x1020", "main", "_Z3runv", "app+0x1050"}
	for i, l := range p.Location {
		ids := f.loc(l)
		if len(ids) != 1 || f.names[ids[0]] != want[i] {
			var got []string
			for _, id := range ids {
				got = append(got, f.names[id])
			}
			t.Errorf("location %d: frames %q; want %q", l.ID, got, want[i])
		}
	}
}
