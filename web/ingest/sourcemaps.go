package ingest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/sourcemap"
)

// SourceMaps are JavaScript source maps sent with a profile (an upload's
// "sourcemap" fields), by the base name of the script each one maps.
type SourceMaps struct{ set sourcemap.Set }

// Add parses data, the source map file called name (sourcemap.Set.Add).
func (s *SourceMaps) Add(name string, data []byte) error {
	if s.set == nil {
		s.set = sourcemap.Set{}
	}
	_, err := s.set.Add(name, data)
	return err
}

// Len is how many maps s holds.
func (s *SourceMaps) Len() int { return len(s.set) }

// Apply maps p's JavaScript frames through s with sourcemap.Apply, as
// `viewer upload --source-map` does, and says in a comment how many
// frames were mapped, and in a warning which maps matched no frame (a
// map applies to the script its "file" field names, else the script its
// own name names without ".map").
func (s *SourceMaps) Apply(p *profile.Profile) {
	used := map[*sourcemap.Map]bool{}
	n := sourcemap.Apply(p, func(file string) *sourcemap.Map {
		m := s.set.Lookup(file)
		if m != nil {
			used[m] = true
		}
		return m
	})
	p.Comments = append(p.Comments, fmt.Sprintf("source maps: %d frames mapped to their original source", n))
	var unused []string
	for key, m := range s.set {
		if !used[m] {
			unused = append(unused, key)
		}
	}
	if len(unused) > 0 {
		slices.Sort(unused)
		p.Comments = append(p.Comments, fmt.Sprintf("warning: the source maps of %s matched no frame of the profile: a map applies to the script its \"file\" field names, else to its own name without .map", strings.Join(unused, ", ")))
	}
}
