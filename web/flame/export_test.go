package flame

import (
	"strconv"

	"github.com/google/pprof/profile"
)

// MergedElement is the zoom path element for a merged "…" block: the
// children, of the frame the path has reached, whose total is under
// minTotal (the MinTotal of the tree that drew the block).
func MergedElement(minTotal int64) string {
	return MergedName + "<" + strconv.FormatInt(minTotal, 10)
}

// TopFiltered is Top over the samples and frames f keeps.
func TopFiltered(p *profile.Profile, si int, f Filter) (rows []TopRow, total int64) {
	if !f.Active() {
		return Top(p, si)
	}
	fr := newFrames(p)
	flat, cum, total := flatCum(f.stacks(p, si, fr), len(fr.names), false, nil)
	for i := 1; i < len(fr.names); i++ {
		if flat[i] != 0 || cum[i] != 0 {
			rows = append(rows, TopRow{Name: fr.names[i], Flat: flat[i], Cum: cum[i]})
		}
	}
	sortTop(rows)
	return rows, total
}
