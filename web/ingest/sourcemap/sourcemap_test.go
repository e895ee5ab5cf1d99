package sourcemap

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestFindAsTraceMapping checks every column of a real terser bundle
// (testdata/app.min.js, its map written by terser 5.51) maps where
// @jridgewell/trace-mapping, terser's own reader, says it does
// (testdata/expected.json, written by testdata/expected.js).
func TestFindAsTraceMapping(t *testing.T) {
	m := parseFile(t, "testdata/app.min.js.map")
	var want [][]any
	data, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, w := range want {
		line, col := int(w[0].(float64)), int(w[1].(float64))
		p, ok := m.Find(line, col)
		if w[2] == nil {
			if ok {
				t.Errorf("%d:%d maps to %+v; trace-mapping: nowhere", line, col, p)
			}
			continue
		}
		name, _ := w[5].(string)
		exp := Position{Source: w[2].(string), Line: int(w[3].(float64)), Column: int(w[4].(float64)), Name: name}
		if !ok || p != exp {
			t.Errorf("%d:%d maps to %+v (%v); trace-mapping: %+v", line, col, p, ok, exp)
		}
		if name != "" {
			named++
		}
	}
	if len(want) < 200 || named < 20 {
		t.Fatalf("only %d positions, %d named: expected.json is not the bundle's", len(want), named)
	}
}

// TestInline reads the map terser wrote inline (a data: URL) into the
// bundle: the same mappings as its map file.
func TestInline(t *testing.T) {
	script, err := os.ReadFile("testdata/app.inline.min.js")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := Inline(script)
	if err != nil || raw == nil {
		t.Fatalf("Inline: %v, %d bytes", err, len(raw))
	}
	in, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	file := parseFile(t, "testdata/app.min.js.map")
	for col := 1; col < 240; col++ {
		a, aok := in.Find(1, col)
		b, bok := file.Find(1, col)
		if a != b || aok != bok {
			t.Fatalf("1:%d: inline map %+v, map file %+v", col, a, b)
		}
	}
	for _, s := range []string{"no comment", "x()\n//# sourceMappingURL=app.min.js.map\n"} {
		if raw, err := Inline([]byte(s)); raw != nil || err != nil {
			t.Errorf("Inline(%q) = %q, %v; want nothing: no inline map", s, raw, err)
		}
	}
}

// TestProfileFrames maps the frames of a real node --cpu-prof recording
// of the bundle (testdata/app.min.cpuprofile): each minified function
// (n, t, e at V8's 0-based line and column of the function) comes from
// app.js's line that declares the original function.
func TestProfileFrames(t *testing.T) {
	m := parseFile(t, "testdata/app.min.js.map")
	src, err := os.ReadFile("testdata/app.js")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	data, err := os.ReadFile("testdata/app.min.cpuprofile")
	if err != nil {
		t.Fatal(err)
	}
	var prof struct {
		Nodes []struct {
			CallFrame struct {
				FunctionName             string
				URL                      string
				LineNumber, ColumnNumber int
			}
		}
	}
	if err := json.Unmarshal(data, &prof); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"n": "fibonacciRecursive", "t": "sumOfSquares", "e": "mainLoop"}
	seen := map[string]bool{}
	for _, n := range prof.Nodes {
		cf := n.CallFrame
		orig, ok := want[cf.FunctionName]
		if !strings.HasSuffix(cf.URL, "app.min.js") || !ok {
			continue
		}
		p, ok := m.Find(cf.LineNumber+1, cf.ColumnNumber+1)
		if !ok || p.Source != "app.js" || p.Line < 1 || p.Line > len(lines) || !strings.Contains(lines[p.Line-1], "function "+orig+"(") {
			t.Errorf("frame %s at %d:%d maps to %+v; want app.js's declaration of %s", cf.FunctionName, cf.LineNumber, cf.ColumnNumber, p, orig)
		}
		if p.Name != orig {
			t.Errorf("frame %s maps to name %q, want %q", cf.FunctionName, p.Name, orig)
		}
		seen[cf.FunctionName] = true
	}
	if len(seen) != len(want) {
		t.Errorf("the recording's bundle frames: %v; want %v", seen, want)
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"version":3,"sources":["a"],"mappings":"AAAA!"}`:    "not base64",
		`{"version":3,"sources":["a"],"mappings":"AA"}`:       "2 fields",
		`{"version":3,"sources":["a"],"mappings":"AAAAAA"}`:   "more than 5",
		`{"version":3,"sources":["a"],"mappings":"g"}`:        "cut short",
		`{"version":3,"sources":["a"],"mappings":"gggggggB"}`: "32-bit",
		`{"version":2,"sources":["a"],"mappings":"AAAA"}`:     "version 2",
		`{"version":3,"sections":[]}`:                         "index map",
		`not json`:                                            "source map",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s) = %v; want an error saying %q", in, err, want)
		}
	}
}

func parseFile(t *testing.T, name string) *Map {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzParse: no map panics Parse or Find, and Find's answers name only
// the map's sources.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/app.min.js.map"} {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"version":3,"sources":["a"],"names":["x"],"mappings":"AAAAA,CAAC;;EAAE"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		for line := 0; line < 4; line++ {
			for col := 0; col < 64; col += 7 {
				if p, ok := m.Find(line, col); ok && !contains(m.Sources, p.Source) {
					t.Fatalf("Find(%d,%d) names source %q not in the map", line, col, p.Source)
				}
			}
		}
		_, _ = Inline(bytes.Repeat(data, 1))
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
