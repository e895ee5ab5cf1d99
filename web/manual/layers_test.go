package manual

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// layerRule forbids the packages matched by from to import those matched
// by to, but for the packages matched by except (on either side). Patterns
// are package paths below the module: "x" is x alone, "x/..." is x and
// every package under it, "x/*" only those under it, "..." all.
type layerRule struct {
	from, to []string
	why      string
	except   []string
}

// The README's architecture, as rules on go list's imports (tests' own
// imports aside). cmd/viewer may import anything.
var layerRules = []layerRule{
	{[]string{"views", "static", "symbolize/buildid", "symbolize/sampling"}, []string{"..."},
		"templates, assets, the build-ID rules and the samples' conventions are leaves: they import no project package", nil},
	{[]string{"symbolize/...", "views", "static"}, []string{"web/...", "cmd/..."},
		"symbolization, templates and assets sit below web", nil},
	{[]string{"web/*"}, []string{"web", "cmd/..."},
		"the root of web is HTTP, on top: no service, format reader or store imports it", nil},
	{[]string{"web", "web/*"}, []string{"symbolize/*"},
		"web asks symbolize (its facade) and the leaves symbolize/buildid and symbolize/sampling, not its internals",
		[]string{"symbolize/buildid", "symbolize/sampling"}},
	{[]string{"web/*"}, []string{"views"},
		"view models and templates are for the HTTP layer, not for services", nil},
	{[]string{"..."}, []string{"web/ingest/*"},
		"a format reader is reached through web/ingest, by nothing but ingest itself and cmd",
		[]string{"web/ingest"}},
}

// allowedImports are imports that break the rules above, each with why it
// is still there. None is left (issue 35 removed the last: perfdata's
// unwinding goes through the symbolize facade, the warnings' reader sits in
// symbolize/sampling). The list only shrinks: a new import that breaks a
// rule fails the test, and so does an entry here that no longer happens.
var allowedImports = map[string]string{}

// matchPkg reports whether package p (below the module) matches pattern.
func matchPkg(pattern, p string) bool {
	switch {
	case pattern == "...":
		return true
	case strings.HasSuffix(pattern, "/..."):
		base := strings.TrimSuffix(pattern, "/...")
		return p == base || strings.HasPrefix(p, base+"/")
	case strings.HasSuffix(pattern, "/*"):
		return strings.HasPrefix(p, strings.TrimSuffix(pattern, "*"))
	}
	return p == pattern
}

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if matchPkg(pat, p) {
			return true
		}
	}
	return false
}

// TestImportsPointDown: no package imports upward (the rules above, from
// the README's architecture), apart from the listed exceptions.
func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "viewer/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	var broken []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from := strings.TrimPrefix(strings.TrimPrefix(f[0], "viewer"), "/")
		if from == "" || strings.HasSuffix(from, "test") || matchPkg("cmd/...", from) {
			continue // test harnesses are not layers; cmd may import anything
		}
		for _, imp := range f[1:] {
			to, ok := strings.CutPrefix(imp, "viewer/")
			if !ok {
				continue
			}
			for _, r := range layerRules {
				if !matchAny(r.from, from) || !matchAny(r.to, to) || matchAny(r.except, from) || matchAny(r.except, to) {
					continue
				}
				key := from + " → " + to
				if _, ok := allowedImports[key]; ok {
					seen[key] = true
					continue
				}
				broken = append(broken, key+": "+r.why)
			}
		}
	}
	sort.Strings(broken)
	for _, b := range broken {
		t.Errorf("%s", b)
	}
	for key := range allowedImports {
		if !seen[key] {
			t.Errorf("%s is listed as an allowed exception but no longer happens: remove it from allowedImports", key)
		}
	}
}
