package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/sourcemap"
)

// maxScript bounds a script or map read for its source map.
const maxScript = 256 << 20

// sourceMapFlags are convert's and upload's source map flags: maps given
// by file, and the maps of the scripts a profile names on this machine.
// The maps are applied here, before the profile leaves the machine: the
// server never reads a script or a map a profile names.
type sourceMapFlags struct {
	files []string
	local *bool
}

func addSourceMapFlags(fs *flag.FlagSet) *sourceMapFlags {
	f := &sourceMapFlags{}
	fs.Func("source-map", "a JavaScript source map `FILE` (.map), or a script with an inline map or a sourceMappingURL next to it, for the profile's frames in the script it maps (by base name; repeatable)", func(s string) error {
		f.files = append(f.files, s)
		return nil
	})
	f.local = fs.Bool("local-source-maps", false, "map the profile's JavaScript frames through the source maps of the scripts it names by file:// URL or path on this machine (an inline data: map, or the sourceMappingURL file beside the script)")
	return f
}

func (f *sourceMapFlags) enabled() bool { return len(f.files) > 0 || *f.local }

// apply maps p's frames through the maps; it says on stderr how many
// frames were mapped and which maps could not be read.
func (f *sourceMapFlags) apply(p *profile.Profile, stderr io.Writer) error {
	given := map[string]*sourcemap.Map{}
	for _, name := range f.files {
		m, script, err := readSourceMap(name)
		if err != nil {
			return fmt.Errorf("--source-map %s: %w", name, err)
		}
		if m == nil {
			return fmt.Errorf("--source-map %s: the script names no source map (no //# sourceMappingURL= comment)", name)
		}
		key := script
		if key == "" {
			key = strings.TrimSuffix(filepath.Base(name), ".map")
			if m.File != "" {
				key = filepath.Base(m.File)
			}
		}
		given[key] = m
	}
	lookup := func(file string) *sourcemap.Map {
		path := file
		if u, err := url.Parse(file); err == nil && u.Scheme == "file" {
			path = u.Path
		}
		if m := given[filepath.Base(path)]; m != nil {
			return m
		}
		if !*f.local || !filepath.IsAbs(path) {
			return nil
		}
		m, _, err := readSourceMap(path)
		if err != nil {
			fmt.Fprintf(stderr, "viewer: source map of %s: %v\n", path, err)
		}
		return m
	}
	n := sourcemap.Apply(p, lookup)
	fmt.Fprintf(stderr, "viewer: source maps: %d frames mapped to their original source\n", n)
	return nil
}

// readSourceMap reads a .map file, or the map of a script (inline, or the
// file its sourceMappingURL names beside it; nil when it names none), and
// for a script, its base name.
func readSourceMap(name string) (m *sourcemap.Map, script string, err error) {
	data, err := readBounded(name)
	if err != nil {
		return nil, "", err
	}
	if strings.HasSuffix(name, ".map") {
		m, err = sourcemap.Parse(data)
		return m, "", err
	}
	script = filepath.Base(name)
	raw, err := sourcemap.Inline(data)
	if err != nil {
		return nil, script, err
	}
	if raw == nil {
		u := sourcemap.URL(data)
		if u == "" || strings.Contains(u, "://") {
			return nil, script, nil
		}
		if raw, err = readBounded(filepath.Join(filepath.Dir(name), filepath.FromSlash(u))); err != nil {
			return nil, script, err
		}
	}
	m, err = sourcemap.Parse(raw)
	return m, script, err
}

func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScript+1))
	if err == nil && len(data) > maxScript {
		err = fmt.Errorf("larger than %s", sizeFlag(maxScript))
	}
	return data, err
}
