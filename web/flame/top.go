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
	if b.Nodes > 0 {
		n = min(n, b.Nodes)
	}
	if b.Bytes <= 0 {
		return n
	}
	size := 1536 // the header, as encodedSize counts it
	for i, r := range rows[:n] {
		if size += perRow + copies*nameBytes(r.Name); size > b.Bytes {
			return i
		}
	}
	return n
}
