package flame

import (
	"math"
	"sort"
	"strconv"

	"github.com/google/pprof/profile"
)

// DiffTree is a differential call tree: the shape and values of the
// compared profile with, per node, the total of the same call path in the
// base profile (Tree.Base), and a table of every function's change.
type DiffTree struct {
	*Tree
	BaseTotal int64 // total of the base profile (after filters)
	// Samples and BaseSamples estimate how many sampling events make up
	// the two totals: the page's noise floor is the binomial standard
	// error of a share measured on that many samples (see events).
	Samples, BaseSamples float64
	Top                  []DiffRow
}

// DiffRow is one function's flat and cumulative value in both profiles.
type DiffRow struct {
	Name                         string
	Flat, Cum, BaseFlat, BaseCum int64
}

// Delta is the change of the row's cumulative share: Cum/total -
// BaseCum/baseTotal, so profiles of different lengths compare fairly.
func (r DiffRow) Delta(total, baseTotal int64) float64 {
	return share(r.Cum, total) - share(r.BaseCum, baseTotal)
}

func share(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return float64(v) / float64(total)
}

// Diff compares p (sample index si) against base (sample index bsi).
// Frames are matched by name, so an unsymbolized profile compares with a
// symbolized one only once both have names. opt.Filter applies to both;
// compaction is by p's total, and merged nodes carry the sum of their
// base values. A call path only in base has total 0 (no width) but keeps
// its base value.
func Diff(base *profile.Profile, bsi int, p *profile.Profile, si int, opt Options) *DiffTree {
	fr := newFrames(p)
	fr.work = opt.work
	fb, tr := fr, []int32(nil) // a profile against itself (another sample type) shares its names
	if base != p {
		fb = newFrames(base)
		tr = fr.adopt(fb)
	}
	ws := opt.Filter.stacks(p, si, fr)
	nb := len(ws)
	for _, w := range opt.Filter.stacks(base, bsi, fb) {
		if tr != nil {
			for k, nm := range w.seq {
				w.seq[k] = tr[nm]
			}
		}
		ws = append(ws, weighted{seq: w.seq, base: w.v})
	}
	rows, total, baseTotal := diffTop(ws[:nb], ws[nb:], fr)
	minFrac := opt.MinFraction
	if minFrac < 0 {
		minFrac = DefaultMinFraction
	}
	ft := buildTrie(ws, true, fr.work)
	t := opt.Budget.fit(compact(ft, fr, minFrac), minFrac, func(f float64) *Tree { return compact(ft, fr, f) })
	if si >= 0 && si < len(p.SampleType) {
		t.SampleType, t.Unit = p.SampleType[si].Type, p.SampleType[si].Unit
	}
	return &DiffTree{Tree: t, BaseTotal: baseTotal, Top: rows,
		Samples: events(p, si, total), BaseSamples: events(base, bsi, baseTotal)}
}

// events estimates how many sampling events make up total, the value of
// sample type si kept by the filters. Values are often weights (time,
// bytes), and a share's sampling noise depends on the events counted, not
// on the weight: from the profile's count-typed sample type when it has
// one (Go's "samples", perf's "samples"), else total / Period when the
// period is in si's unit, else the sample records in proportion to total
// (records can merge events, so that errs towards more noise).
func events(p *profile.Profile, si int, total int64) float64 {
	if si < 0 || si >= len(p.SampleType) || total <= 0 {
		return 0
	}
	unit := p.SampleType[si].Unit
	if unit == "count" {
		return float64(total)
	}
	c := -1
	for i, st := range p.SampleType {
		if st.Unit == "count" {
			c = i
			break
		}
	}
	if c < 0 && p.Period > 0 && p.PeriodType != nil && p.PeriodType.Unit == unit {
		return float64(total) / float64(p.Period)
	}
	var all, n int64
	for _, s := range p.Sample {
		if si < len(s.Value) {
			all += s.Value[si]
		}
		if c < 0 {
			n++
		} else if c < len(s.Value) {
			n += s.Value[c]
		}
	}
	if all <= 0 {
		return 0
	}
	return float64(n) * float64(total) / float64(all)
}

// adopt interns every name of g into f and returns, per name ID of g, its
// name ID in f.
func (f *frames) adopt(g *frames) []int32 {
	mi := make(map[string]int32, len(f.mappings))
	for i, m := range f.mappings {
		mi[m] = int32(i)
	}
	out := make([]int32, len(g.names))
	for i, nm := range g.names {
		if i == 0 {
			continue // both roots are 0
		}
		if j, ok := f.byName[nm]; ok {
			out[i] = j
			continue
		}
		m := int32(-1)
		if gm := g.nameMapping[i]; gm >= 0 {
			file := g.mappings[gm]
			var ok bool
			if m, ok = mi[file]; !ok {
				m = int32(len(f.mappings))
				f.mappings = append(f.mappings, file)
				mi[file] = m
			}
		}
		// Names from g are already unique and never reserved: add as is.
		j := int32(len(f.names))
		f.names = append(f.names, nm)
		f.nameMapping = append(f.nameMapping, m)
		f.byName[nm] = j
		if f.src != nil {
			f.src.copyFrom(j, g.src, int32(i))
		}
		out[i] = j
	}
	return out
}

// flatCum computes per name flat and cum values of weighted stacks (value
// v), cum counting a name once per stack.
func flatCum(ws []weighted, n int, base bool, work *work) (flat, cum []int64, total int64) {
	flat = make([]int64, n)
	cum = make([]int64, n)
	seen := make([]int32, n)
	for k, w := range ws {
		work.tick()
		v := w.v
		if base {
			v = w.base
		}
		total += v
		if len(w.seq) == 0 {
			continue
		}
		mark := int32(k + 1)
		for _, nm := range w.seq {
			if seen[nm] != mark {
				seen[nm] = mark
				cum[nm] += v
			}
		}
		flat[w.seq[len(w.seq)-1]] += v
	}
	return flat, cum, total
}

// diffTop is every function's row, largest change of cumulative share
// first.
func diffTop(cur, base []weighted, fr *frames) (rows []DiffRow, total, baseTotal int64) {
	n := len(fr.names)
	flat, cum, total := flatCum(cur, n, false, fr.work)
	bflat, bcum, baseTotal := flatCum(base, n, true, fr.work)
	for i := 1; i < n; i++ {
		if flat[i] != 0 || cum[i] != 0 || bflat[i] != 0 || bcum[i] != 0 {
			rows = append(rows, DiffRow{Name: fr.names[i], Flat: flat[i], Cum: cum[i], BaseFlat: bflat[i], BaseCum: bcum[i]})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := math.Abs(rows[i].Delta(total, baseTotal)), math.Abs(rows[j].Delta(total, baseTotal))
		if a != b {
			return a > b
		}
		return rows[i].Name < rows[j].Name
	})
	return rows, total, baseTotal
}

// DiffJSONVersion is the "version" of diff.json.
const DiffJSONVersion = 2

// DiffJSON encodes d as diff.json: flame.json's fields (the tree of the
// compared profile) plus "baseTotal", "samples" and "baseSamples" (the
// estimated sampling events of the two totals), "base" (per node, the base profile's
// total for the same call path, parallel to nodes) and "top" (at most
// maxTop rows of [name, flat, cum, baseFlat, baseCum], largest change first).
func (d *DiffTree) DiffJSON(maxTop int) []byte {
	b := d.Tree.AppendJSON(make([]byte, 0, 64+len(d.Names)*24+len(d.Nodes)*28))
	b = b[:len(b)-2] // drop "}\n"
	b = append(b, `,"diffVersion":`...)
	b = strconv.AppendInt(b, DiffJSONVersion, 10)
	b = append(b, `,"baseTotal":`...)
	b = strconv.AppendInt(b, d.BaseTotal, 10)
	b = append(b, `,"samples":`...)
	b = strconv.AppendFloat(b, math.Round(d.Samples), 'f', -1, 64)
	b = append(b, `,"baseSamples":`...)
	b = strconv.AppendFloat(b, math.Round(d.BaseSamples), 'f', -1, 64)
	b = append(b, `,"base":[`...)
	for i, v := range d.Base {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, `],"top":[`...)
	for i, r := range d.Top[:min(maxTop, len(d.Top))] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendString(b, r.Name)
		for _, v := range []int64{r.Flat, r.Cum, r.BaseFlat, r.BaseCum} {
			b = append(b, ',')
			b = strconv.AppendInt(b, v, 10)
		}
		b = append(b, ']')
	}
	return append(b, "]}\n"...)
}
