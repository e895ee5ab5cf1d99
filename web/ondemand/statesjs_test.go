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
// the Go files in dir (from the module root) that pick chooses, each
// under its Go name without prefix.
type jsConst struct {
	name, doc string
	dir       string
	prefix    string
	pick      func(spec *ast.ValueSpec, typ string, name string) bool
	extra     [][2]string // further Go name (without prefix), value pairs
}

func ofType(t string) func(*ast.ValueSpec, string, string) bool {
	return func(_ *ast.ValueSpec, typ, _ string) bool { return typ == t }
}

var jsConsts = []jsConst{
	{
		name:   "BinaryState",
		doc:    "A binary's state, in its events and its panel row's data-state\n * (symbolize.State; Pseudo is views.StatePseudo).",
		dir:    "symbolize",
		prefix: "State",
		pick:   ofType("State"),
		extra:  [][2]string{{"Pseudo", views.StatePseudo}},
	},
	{
		name:   "RunState",
		doc:    "A symbolization job's state, in its status and the panel's data-job\n * (ondemand.RunState).",
		dir:    "web/ondemand",
		prefix: "Run",
		pick:   ofType("RunState"),
	},
	{
		name:   "SymbolizeEvent",
		doc:    "The event types of a profile's symbolization stream, /p/ID/events\n * (ondemand.Event*).",
		dir:    "web/ondemand",
		prefix: "Event",
		pick:   func(_ *ast.ValueSpec, _, name string) bool { return strings.HasPrefix(name, "Event") },
	},
}

// constsIn returns the string constants of dir's Go files (tests aside)
// that c picks, in source order, as (name without prefix, value).
func constsIn(t *testing.T, c jsConst) [][2]string {
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
					if !n.IsExported() || !c.pick(vs, typ, n.Name) {
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
					out = append(out, [2]string{strings.TrimPrefix(n.Name, c.prefix), v})
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no constants for %s in %s", c.name, c.dir)
	}
	return out
}

// statesJS is static/states.js as the Go constants make it.
func statesJS(t *testing.T) string {
	var b strings.Builder
	b.WriteString(`// states.js: the server's names that the pages' scripts compare with, one
// source for both sides: a binary's state in the symbolization panel, a
// job's state and the event types of its stream. Generated from the Go
// constants by TestStatesJS (web/ondemand/statesjs_test.go), which fails
// when this file is stale: do not edit it, run go generate ./web/ondemand/.
`)
	for _, c := range jsConsts {
		fmt.Fprintf(&b, "\n/**\n * %s\n */\nexport const %s = Object.freeze({\n", c.doc, c.name)
		for _, kv := range append(constsIn(t, c), c.extra...) {
			if strings.ContainsAny(kv[1], `'\`+"\n") {
				t.Fatalf("%s.%s = %q: quote it", c.name, kv[0], kv[1])
			}
			fmt.Fprintf(&b, "  %s: '%s',\n", kv[0], kv[1])
		}
		b.WriteString("});\n")
	}
	return b.String()
}

// TestStatesJS: static/states.js is what the Go constants generate (so a
// renamed or added state reaches the scripts), the copies of a state in
// views and symbolize agree, and symbolize.js, the panel's script, writes
// none of these names as a literal of its own but reads them from
// states.js. -update-states (go generate) rewrites the file.
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

	// Literals in symbolize.js equal to a name, but for words the browser
	// uses too: an EventSource's "error" event, a <progress> element.
	script, err := os.ReadFile("../../static/symbolize.js")
	if err != nil {
		t.Fatal(err)
	}
	browsers := []string{"error", "progress"}
	lits := regexp.MustCompile(`'([^'\\\n]*)'`).FindAllStringSubmatch(string(script), -1)
	for _, c := range jsConsts {
		for _, kv := range append(constsIn(t, c), c.extra...) {
			if slices.Contains(browsers, kv[1]) {
				continue
			}
			for _, l := range lits {
				if l[1] == kv[1] {
					t.Errorf("static/symbolize.js writes '%s': use %s.%s (states.js)", kv[1], c.name, kv[0])
					break
				}
			}
		}
	}
}
