package flame

import (
	"sort"

	"github.com/google/pprof/profile"
)

// TopRow is one function's flat value (samples where it is the leaf) and
// cumulative value (samples whose stack contains it, counted once per stack
// even under recursion).
type TopRow struct {
	Name      string
	Flat, Cum int64
}

// Top returns every function's flat and cumulative value for sample index
// si, sorted by flat, then cum, then name (descending values), and the
// total of all samples.
func Top(p *profile.Profile, si int) (rows []TopRow, total int64) {
	fr := newFrames(p)
	flat := make([]int64, len(fr.names))
	cum := make([]int64, len(fr.names))
	seen := make([]int32, len(fr.names)) // sample number+1 that last counted a name
	for n, s := range groupStacks(p, si) {
		v := s.v
		total += v
		mark := int32(n + 1)
		leaf := int32(-1)
		for i, l := range s.locs {
			fs := fr.loc(l)
			if i == 0 && len(fs) > 0 {
				leaf = fs[len(fs)-1] // innermost frame of the leaf location
			}
			for _, nm := range fs {
				if seen[nm] != mark {
					seen[nm] = mark
					cum[nm] += v
				}
			}
		}
		if leaf >= 0 {
			flat[leaf] += v
		}
	}
	for i := 1; i < len(fr.names); i++ {
		if flat[i] != 0 || cum[i] != 0 {
			rows = append(rows, TopRow{Name: fr.names[i], Flat: flat[i], Cum: cum[i]})
		}
	}
	sortTop(rows)
	return rows, total
}

// sortTop orders rows by flat, then cum, then name (descending values).
func sortTop(rows []TopRow) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if abs(a.Flat) != abs(b.Flat) {
			return abs(a.Flat) > abs(b.Flat)
		}
		if abs(a.Cum) != abs(b.Cum) {
			return abs(a.Cum) > abs(b.Cum)
		}
		return a.Name < b.Name
	})
}

// Rows is how many of the first n rows fit b, each encoded in about
// perRow bytes plus copies escaped copies of its name (nameBytes): the
// bound on a top table's output, as a tree's is its nodes and bytes.
func (b Budget) Rows(rows []TopRow, n, perRow, copies int) int {
	n = min(n, len(rows))
	m := b.Meter()
	for i, r := range rows[:n] {
		if !m.Take(perRow + copies*nameBytes(r.Name)) {
			return i
		}
	}
	return n
}

// Meter spends a Budget row by row, for an output of several lists (the
// data-type page and types.json): each row counts as a node, and its
// bytes, after the 1,536 of the header as encodedSize counts them.
type Meter struct {
	b           Budget
	rows, bytes int
}

// Meter starts spending b.
func (b Budget) Meter() *Meter { return &Meter{b: b, bytes: 1536} }

// Take counts a row of about size bytes (NameBytes for each name it holds)
// and reports whether it fits; a row that does not is not counted.
func (m *Meter) Take(size int) bool {
	if (m.b.Nodes > 0 && m.rows >= m.b.Nodes) || (m.b.Bytes > 0 && m.bytes+size > m.b.Bytes) {
		return false
	}
	m.rows++
	m.bytes += size
	return true
}

// NameBytes bounds the bytes of s once encoded in JSON or HTML text: each
// byte six when any needs escaping.
func NameBytes(s string) int { return nameBytes(s) }
