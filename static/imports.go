package static

import (
	"io/fs"
	"regexp"
	"sync"
)

// The module graph of the embedded scripts, so that a page can ask the
// browser to fetch every module its entry scripts import at once
// (<link rel="modulepreload">, which views' moduleScripts writes) instead
// of one level of imports per round trip: the graph is read from the
// scripts' own import statements, so it stays true as they change.

// importRE matches a static import's specifier: `import … from './x.js'`
// (the names may span lines) and `import './x.js'`.
var importRE = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^;'"]*?(?:\bfrom\s*)?['"]\./([A-Za-z0-9_.-]+\.js)['"]`)

// importGraph maps each embedded module to the modules it imports, in the
// order it imports them.
var importGraph = sync.OnceValue(func() map[string][]string {
	g := map[string][]string{}
	names, _ := fs.Glob(FS, "*.js")
	for _, n := range names {
		b, err := fs.ReadFile(FS, n)
		if err != nil {
			continue
		}
		for _, m := range importRE.FindAllSubmatch(b, -1) {
			g[n] = append(g[n], string(m[1]))
		}
	}
	return g
})

// Imports returns the modules the entry modules (names in FS, such as
// "page.js") import, directly or through others, that are not entries
// themselves: each once, in the order a depth-first walk of the imports
// meets them.
func Imports(entries ...string) []string {
	g := importGraph()
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e] = true
	}
	var out []string
	var walk func(string)
	walk = func(n string) {
		for _, m := range g[n] {
			if seen[m] {
				continue
			}
			seen[m] = true
			out = append(out, m)
			walk(m)
		}
	}
	for _, e := range entries {
		walk(e)
	}
	return out
}
