// Package sourcemap reads JavaScript source maps (revision 3,
// https://tc39.es/ecma426/) and finds the original source, line, column
// and name of a position in the generated (bundled, minified) code, as
// speedscope does for the frames of a profile whose script has a map.
//
// No Go source map library is served by the module proxy this project
// uses, so the "mappings" field's base64 VLQ segments are decoded here
// (FuzzParse checks that no input panics it).
package sourcemap

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// Map is a decoded source map: per generated line, its segments in
// column order.
type Map struct {
	File    string
	Sources []string
	Names   []string
	lines   [][]segment
}

// segment is one mapping: a generated column and, when src ≥ 0, the
// original source, line and column (0-based) and name (-1: none).
type segment struct {
	genCol            int32
	src, line, col, n int32
}

// Position is where generated code came from: its source file, 1-based
// line and column, and the original name at that point ("" if none).
type Position struct {
	Source       string
	Line, Column int
	Name         string
}

// maxSegments bounds the segments of one map, so that a hostile map
// cannot take more memory than its size warrants (a segment takes at
// least 2 bytes of "mappings").
const maxSegments = 1 << 26

// Parse decodes a source map's JSON. Index maps ("sections") are not
// read: bundlers write them rarely, and the error says so.
func Parse(data []byte) (*Map, error) {
	var raw struct {
		Version    int      `json:"version"`
		File       string   `json:"file"`
		SourceRoot string   `json:"sourceRoot"`
		Sources    []string `json:"sources"`
		Names      []string `json:"names"`
		Mappings   string   `json:"mappings"`
		Sections   []any    `json:"sections"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("source map: %w", err)
	}
	if raw.Sections != nil {
		return nil, errors.New("source map: an index map (sections) is not read; give the bundle's own map")
	}
	if raw.Version != 3 {
		return nil, fmt.Errorf("source map: version %d; only version 3 is read", raw.Version)
	}
	m := &Map{File: raw.File, Names: raw.Names, Sources: make([]string, len(raw.Sources))}
	for i, s := range raw.Sources {
		if raw.SourceRoot != "" && !strings.Contains(s, "://") && !strings.HasPrefix(s, "/") {
			s = strings.TrimSuffix(raw.SourceRoot, "/") + "/" + s
		}
		m.Sources[i] = s
	}
	if err := m.decode(raw.Mappings); err != nil {
		return nil, fmt.Errorf("source map: mappings: %w", err)
	}
	return m, nil
}

// decode reads the mappings: lines separated by ';', segments by ',',
// each 1, 4 or 5 base64 VLQ fields, relative to the previous segment's
// (the generated column to the line's previous one).
func (m *Map) decode(s string) error {
	var src, line, col, name int32
	var cur []segment
	total := 0
	for i := 0; i <= len(s); {
		if i == len(s) || s[i] == ';' {
			sort.SliceStable(cur, func(a, b int) bool { return cur[a].genCol < cur[b].genCol })
			m.lines = append(m.lines, cur)
			cur = nil
			i++
			if i > len(s) {
				break
			}
			continue
		}
		if s[i] == ',' {
			i++
			continue
		}
		var f [5]int32
		n := 0
		for n < 5 && i < len(s) && s[i] != ',' && s[i] != ';' {
			v, k, err := vlq(s[i:])
			if err != nil {
				return fmt.Errorf("at byte %d: %w", i, err)
			}
			f[n] = v
			n++
			i += k
		}
		if i < len(s) && s[i] != ',' && s[i] != ';' {
			return fmt.Errorf("at byte %d: a segment of more than 5 fields", i)
		}
		if n != 1 && n != 4 && n != 5 {
			return fmt.Errorf("at byte %d: a segment of %d fields (want 1, 4 or 5)", i, n)
		}
		total++
		if total > maxSegments {
			return fmt.Errorf("more than %d segments", maxSegments)
		}
		g := f[0]
		if len(cur) > 0 {
			g += cur[len(cur)-1].genCol
		}
		sg := segment{genCol: g, src: -1, n: -1}
		if n >= 4 {
			src += f[1]
			line += f[2]
			col += f[3]
			sg.src, sg.line, sg.col = src, line, col
			if n == 5 {
				name += f[4]
				sg.n = name
			}
		}
		cur = append(cur, sg)
	}
	return nil
}

// vlq decodes one base64 VLQ value from the start of s: the value and
// the bytes it took.
func vlq(s string) (int32, int, error) {
	var v uint64
	shift := uint(0)
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(b64, s[i])
		if d < 0 {
			return 0, 0, fmt.Errorf("%q is not base64", s[i])
		}
		v |= uint64(d&31) << shift
		if d&32 == 0 {
			if v>>1 > 1<<31 {
				return 0, 0, errors.New("a value out of 32-bit range")
			}
			r := int32(v >> 1)
			if v&1 != 0 {
				r = -r
			}
			return r, i + 1, nil
		}
		shift += 5
		if shift > 31 {
			return 0, 0, errors.New("a value out of 32-bit range")
		}
	}
	return 0, 0, errors.New("a value cut short")
}

// b64 is base64's alphabet, a digit's index its value.
const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// Find returns where 1-based generated line and column came from: the
// last segment of that line at or before the column; ok is false when
// none maps it to a source.
func (m *Map) Find(line, column int) (Position, bool) {
	if line < 1 || line > len(m.lines) {
		return Position{}, false
	}
	segs := m.lines[line-1]
	i := sort.Search(len(segs), func(i int) bool { return int(segs[i].genCol) > column-1 }) - 1
	if i < 0 || segs[i].src < 0 || int(segs[i].src) >= len(m.Sources) {
		return Position{}, false
	}
	sg := segs[i]
	p := Position{Source: m.Sources[sg.src], Line: int(sg.line) + 1, Column: int(sg.col) + 1}
	if sg.n >= 0 && int(sg.n) < len(m.Names) {
		p.Name = m.Names[sg.n]
	}
	return p, true
}

// Inline returns the map a script names inline in its last
// "//# sourceMappingURL=data:application/json;base64,..." comment, nil
// when it names none or names a file (the uploader must send that one).
func Inline(script []byte) ([]byte, error) {
	s := string(script)
	k := max(strings.LastIndex(s, "//# sourceMappingURL="), strings.LastIndex(s, "//@ sourceMappingURL="))
	if k < 0 {
		return nil, nil
	}
	k += len("//# ")
	u := s[k+len("sourceMappingURL="):]
	if e := strings.IndexAny(u, " \r\n*"); e >= 0 {
		u = u[:e]
	}
	if !strings.HasPrefix(u, "data:") {
		return nil, nil
	}
	comma := strings.IndexByte(u, ',')
	if comma < 0 {
		return nil, errors.New("sourceMappingURL: a data: URL without ','")
	}
	meta, payload := u[len("data:"):comma], u[comma+1:]
	if !strings.HasSuffix(meta, ";base64") {
		return []byte(payload), nil
	}
	return base64.StdEncoding.DecodeString(payload)
}

// URL returns the sourceMappingURL a script's last
// "//# sourceMappingURL=" comment names ("" when none): a data: URL
// (Inline reads it) or a path relative to the script.
func URL(script []byte) string {
	s := string(script)
	k := max(strings.LastIndex(s, "//# sourceMappingURL="), strings.LastIndex(s, "//@ sourceMappingURL="))
	if k < 0 {
		return ""
	}
	u := s[k+len("//# sourceMappingURL="):]
	if e := strings.IndexAny(u, " \r\n*"); e >= 0 {
		u = u[:e]
	}
	return u
}

// Apply rewrites p's frames whose file has a map (lookup returns nil for
// a file without one) to where the map says their code came from: the
// original source file, line and column, and the original name at that
// position when the map has one (a minified function's position is its
// declaration's, whose name the map keeps), else the frame's own name.
// It returns how many locations' lines it rewrote.
func Apply(p *profile.Profile, lookup func(file string) *Map) int {
	type key struct{ name, file string }
	funcs := map[key]*profile.Function{}
	maps := map[string]*Map{}
	nextID := uint64(0)
	for _, f := range p.Function {
		nextID = max(nextID, f.ID)
	}
	n := 0
	for _, l := range p.Location {
		for i := range l.Line {
			ln := &l.Line[i]
			fn := ln.Function
			if fn == nil || fn.Filename == "" || ln.Line <= 0 {
				continue
			}
			m, ok := maps[fn.Filename]
			if !ok {
				m = lookup(fn.Filename)
				maps[fn.Filename] = m
			}
			if m == nil {
				continue
			}
			pos, ok := m.Find(int(ln.Line), int(max(ln.Column, 1)))
			if !ok {
				continue
			}
			k := key{fn.Name, pos.Source}
			if pos.Name != "" {
				k.name = pos.Name
			}
			nf := funcs[k]
			if nf == nil {
				nextID++
				nf = &profile.Function{ID: nextID, Name: k.name, SystemName: fn.Name, Filename: pos.Source}
				funcs[k] = nf
				p.Function = append(p.Function, nf)
			}
			ln.Function, ln.Line, ln.Column = nf, int64(pos.Line), int64(pos.Column)
			n++
		}
	}
	return n
}

// Set is source maps by the base name of the script each one maps, for
// Apply's lookup: maps given by file (the CLI's --source-map, an
// upload's "sourcemap" fields) rather than found beside the scripts.
type Set map[string]*Map

// Add parses data, the source map file called name, under the base name
// of the script its "file" field names, else name without ".map" (a
// bundler writes app.min.js.map beside app.min.js). It returns the key.
func (s Set) Add(name string, data []byte) (string, error) {
	m, err := Parse(data)
	if err != nil {
		return "", err
	}
	key := path.Base(strings.ReplaceAll(name, `\`, "/"))
	key = strings.TrimSuffix(key, ".map")
	if m.File != "" {
		key = path.Base(m.File)
	}
	s[key] = m
	return key, nil
}

// Lookup returns the map of the script file (a URL or a path, as a
// profile's frames name it) by its base name, or nil.
func (s Set) Lookup(file string) *Map {
	if u, err := url.Parse(file); err == nil && u.Scheme != "" && u.Path != "" {
		file = u.Path
	}
	return s[path.Base(strings.ReplaceAll(file, `\`, "/"))]
}
