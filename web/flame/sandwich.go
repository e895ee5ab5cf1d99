package flame

import (
	"slices"
	"strconv"

	"github.com/google/pprof/profile"
)

// Sandwich is one function's callers and callees merged over every stack
// that contains it: Callers is inverted (the function first, then who
// called it, up to the outermost frame) and Callees is the usual call
// tree below the function. Both trees have the function as their root
// (depth 0), whose total is the function's cumulative value.
type Sandwich struct {
	Fn               string
	Flat, Cum, Total int64 // Total: all samples (after filters)
	Callers, Callees *Tree
}

// BuildSandwich builds the sandwich of the function named fn (a frame
// name as in flame.json) for sample index si. Under recursion a stack
// counts once: callees hang below the outermost call and callers above
// the innermost, so neither tree repeats the function at its root.
// opt.Filter applies first; frames smaller than opt.MinFraction of the
// function's cumulative value are merged.
func BuildSandwich(p *profile.Profile, si int, fn string, opt Options) *Sandwich {
	fr := newFrames(p)
	fr.work = opt.work
	ws := opt.Filter.stacks(p, si, fr) // the zero Filter keeps all
	sw := &Sandwich{Fn: fn}
	id, ok := fr.byName[fn]
	var callers, callees []weighted
	for _, w := range ws {
		sw.Total += w.v
		if !ok {
			continue
		}
		first := slices.Index(w.seq, id)
		if first < 0 {
			continue
		}
		last := lastIndex(w.seq, id)
		sw.Cum += w.v
		if w.seq[len(w.seq)-1] == id {
			sw.Flat += w.v
		}
		callees = append(callees, weighted{seq: w.seq[first:], v: w.v})
		callers = append(callers, weighted{seq: reversed(w.seq[:last+1]), v: w.v})
	}
	minFrac := opt.MinFraction
	if minFrac < 0 {
		minFrac = DefaultMinFraction
	}
	build := func(ws []weighted) *Tree {
		ft := buildTrie(ws, false, fr.work)
		t := opt.Budget.fit(compact(ft, fr, minFrac), minFrac, func(f float64) *Tree { return compact(ft, fr, f) })
		if si >= 0 && si < len(p.SampleType) {
			t.SampleType, t.Unit = p.SampleType[si].Type, p.SampleType[si].Unit
		}
		return dropRoot(t)
	}
	sw.Callers, sw.Callees = build(callers), build(callees)
	return sw
}

func reversed(s []int32) []int32 {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// dropRoot makes the root's only child (the sandwiched function) the root.
// An empty tree keeps its root.
func dropRoot(t *Tree) *Tree {
	if len(t.Nodes) < 2 {
		return t
	}
	t.Nodes = t.Nodes[1:]
	for i := range t.Nodes {
		t.Nodes[i].Depth--
	}
	return t
}

// SandwichJSON encodes s as sandwich.json: {"version":1,"fn":NAME,
// "flat":N,"cum":N,"total":N,"callers":FLAME,"callees":FLAME}, where each
// FLAME is a tree in the flame.json format rooted at the function.
func (s *Sandwich) JSON() []byte {
	b := []byte(`{"version":1,"fn":`)
	b = appendString(b, s.Fn)
	for _, kv := range []struct {
		k string
		v int64
	}{{"flat", s.Flat}, {"cum", s.Cum}, {"total", s.Total}} {
		b = append(b, `,"`+kv.k+`":`...)
		b = strconv.AppendInt(b, kv.v, 10)
	}
	b = append(b, `,"callers":`...)
	b = s.Callers.AppendJSON(b)
	b = b[:len(b)-1] // newline
	b = append(b, `,"callees":`...)
	b = s.Callees.AppendJSON(b)
	b = b[:len(b)-1]
	return append(b, "}\n"...)
}

func lastIndex(s []int32, v int32) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}
