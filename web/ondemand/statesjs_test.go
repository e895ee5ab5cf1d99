package ondemand_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"viewer/symbolize"
	"viewer/views"
)

var updateStates = flag.Bool("update-states", false, "rewrite static/states.js from the Go constants (TestStatesJS)")

// statesFile is the generated module, from this package's directory.
const statesFile = "../../static/states.js"

// jsConst is one generated object of static/states.js: the constants of
// its sources, then extra.
type jsConst struct {
	name, doc string
	sources   []constSource
	extra     [][2]string // further Go name (without prefix), value pairs
}

// constSource is the string constants of the Go files in dir (from the
// module root) that pick chooses, each under its Go name without prefix
// (and with a capital).
type constSource struct {
	dir    string
	prefix string
	pick   func(typ string, name string) bool
}

func ofType(t string) func(string, string) bool {
	return func(typ, name string) bool { return typ == t && ast.IsExported(name) }
}

func named(prefix string) func(string, string) bool {
	return func(_, name string) bool { return strings.HasPrefix(name, prefix) }
}

var jsConsts = []jsConst{
	{
		name:    "BinaryState",
		doc:     "A binary's state, in its events and its panel row's data-state\n * (symbolize.State; Pseudo is views.StatePseudo).",
		sources: []constSource{{"symbolize", "State", ofType("State")}},
		extra:   [][2]string{{"Pseudo", views.StatePseudo}},
	},
	{
		name:    "RunState",
		doc:     "A symbolization job's state, in its status and the panel's data-job\n * (ondemand.RunState).",
		sources: []constSource{{"web/ondemand", "Run", ofType("RunState")}},
	},
	{
		name:    "SymbolizeEvent",
		doc:     "The event types of a profile's symbolization stream, /p/ID/events\n * (ondemand.Event*).",
		sources: []constSource{{"web/ondemand", "Event", named("Event")}},
	},
	{
		name: "UploadPhase",
		doc: "The phases of an upload's progress stream, /api/uploads/KEY/progress:\n" +
			" * the server's own (web's phase*), then the reader's (perfdata.Phase*).",
		sources: []constSource{{"web", "phase", named("phase")}, {"web/ingest/perfdata", "Phase", named("Phase")}},
	},
}

// constsOf returns c's names and values: its sources' constants, then
// its extra ones.
func constsOf(t *testing.T, c jsConst) [][2]string {
	t.Helper()
	var out [][2]string
	for _, s := range c.sources {
		kvs := constsIn(t, s)
		if len(kvs) == 0 {
			t.Fatalf("no constants for %s in %s", c.name, s.dir)
		}
		out = append(out, kvs...)
	}
	return append(out, c.extra...)
}

// constsIn returns the string constants of c.dir's Go files (tests aside)
// that c picks, in file and source order, as (name without prefix, value).
func constsIn(t *testing.T, c constSource) [][2]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("../..", c.dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, n := range vs.Names {
					if !c.pick(typ, n.Name) {
						continue
					}
					if i >= len(vs.Values) {
						t.Fatalf("%s: %s has no value of its own", f, n.Name)
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: %s is not a string literal", f, n.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					js := strings.TrimPrefix(n.Name, c.prefix)
					out = append(out, [2]string{strings.ToUpper(js[:1]) + js[1:], v})
				}
			}
		}
	}
	return out
}

// statesJS is static/states.js as the Go constants make it.
func statesJS(t *testing.T) string {
	var b strings.Builder
	b.WriteString(`// states.js: the server's names that the pages' scripts compare with, one
// source for both sides: a binary's state in the symbolization panel, a
// job's state and the event types of its stream, an upload's phases.
// Generated from the Go
// constants by TestStatesJS (web/ondemand/statesjs_test.go), which fails
// when this file is stale: do not edit it, run go generate ./web/ondemand/.
`)
	for _, c := range jsConsts {
		fmt.Fprintf(&b, "\n/**\n * %s\n */\nexport const %s = Object.freeze({\n", c.doc, c.name)
		for _, kv := range constsOf(t, c) {
			if strings.ContainsAny(kv[1], `'\`+"\n") {
				t.Fatalf("%s.%s = %q: quote it", c.name, kv[0], kv[1])
			}
			fmt.Fprintf(&b, "  %s: '%s',\n", kv[0], kv[1])
		}
		b.WriteString("});\n")
	}
	return b.String()
}

// lineComments matches a script's comment lines, which may quote names.
var lineComments = regexp.MustCompile(`(?m)^\s*//.*$`)

// TestStatesJS: static/states.js is what the Go constants generate (so a
// renamed or added state reaches the scripts), the copies of a state in
// views and symbolize agree, and the scripts that read these names
// (symbolize.js, upload.js) write none of them as a literal of their own
// but take them from states.js. -update-states (go generate) rewrites the
// file.
func TestStatesJS(t *testing.T) {
	want := statesJS(t)
	if *updateStates {
		if err := os.WriteFile(statesFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(statesFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("static/states.js is stale: run go generate ./web/ondemand/ and commit it; want:\n%s", want)
	}
	if views.StateNoSymbols != string(symbolize.StateNotFound) {
		t.Errorf("views.StateNoSymbols = %q, symbolize.StateNotFound = %q: one state, two names", views.StateNoSymbols, symbolize.StateNotFound)
	}

	// The scripts that read these names write none of them themselves
	// (as a string or an object's key), but for words the browser uses
	// too: an EventSource's "error" event, a <progress> element.
	readers := map[string][]string{
		"symbolize.js": {"BinaryState", "RunState", "SymbolizeEvent"},
		"upload.js":    {"UploadPhase"},
	}
	browsers := []string{"error", "progress"}
	for script, names := range readers {
		src, err := os.ReadFile("../../static/" + script)
		if err != nil {
			t.Fatal(err)
		}
		src = lineComments.ReplaceAll(src, nil)
		for _, c := range jsConsts {
			if !slices.Contains(names, c.name) {
				continue
			}
			for _, kv := range constsOf(t, c) {
				if slices.Contains(browsers, kv[1]) {
					continue
				}
				q := regexp.QuoteMeta(kv[1])
				if regexp.MustCompile(`'` + q + `'|"` + q + `"|\b` + q + `\s*:`).Match(src) {
					t.Errorf("static/%s writes %q: use %s.%s (states.js)", script, kv[1], c.name, kv[0])
				}
			}
		}
	}
}
