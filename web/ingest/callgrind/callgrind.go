// Package callgrind reads the profiles Valgrind's callgrind and cachegrind
// tools write (valgrind.org's "Callgrind Format Specification"), and the
// profilers that write the same format (Xdebug, KCachegrind's converters),
// into a pprof profile: one sample type per event ("Ir", "Dr", ...).
//
// A callgrind file is a call graph: each function's self cost, and for
// each call from one function to another the inclusive cost of the call.
// A graph does not say which path a callee's cost took, so the flame
// graph is made as speedscope makes it: each function's cost is shared
// among its callers in proportion to the inclusive cost of their calls.
// Every function's self cost is kept whole (callgrind_annotate's
// per-function totals), only the paths above it are an estimate.
package callgrind

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// ErrLimit is wrapped by errors about inputs over the caller's limits.
var ErrLimit = errors.New("over the limit")

// Options bound a read; zero fields mean no limit.
type Options struct {
	// MaxLineBytes bounds one line of the input.
	MaxLineBytes int
	// MaxSamples bounds the distinct stacks of the profile.
	MaxSamples int
}

// Bounds of the call tree made from the graph: a path whose share of an
// event's total is under minShare, or that is deeper than maxDepth, or
// any path once maxVisits have been made, ends in the callee it reaches,
// which gets the path's whole cost as its own. Recursion in the graph
// otherwise unrolls until these stop it.
// The visits are bounded so that the tree's cells (stacks × events) stay
// under maxCells.
// The visits are bounded in proportion to the input too (visitsPerByte,
// at least minVisits): a recursion that passes its whole cost around, no
// self cost ending it, takes every visit it is given, and a 100-byte
// file took the 8M of maxCells (1.5 s).
const (
	minShare      = 1e-4
	maxDepth      = 256
	maxCells      = 1 << 23
	visitsPerByte = 16
	minVisits     = 1 << 16
)

// maxEvents bounds the events of a file: Valgrind's tools count at most
// 13 (cachegrind's cache and branch simulation), Xdebug's 2.
const maxEvents = 64

// maxBadLines is how many unreadable lines a file may have before it is
// refused; the ones before are skipped with a warning.
const maxBadLines = 100

// Sniff accepts callgrind and cachegrind output: a "# callgrind format"
// line, or an "events:" header followed by "fl=" or "fn=" lines.
func Sniff(head []byte) bool {
	if bytes.HasPrefix(head, []byte("# callgrind format")) {
		return true
	}
	hasEvents := false
	for _, line := range strings.Split(string(head), "\n") {
		switch {
		case strings.HasPrefix(line, "events:"):
			hasEvents = true
		case strings.HasPrefix(line, "creator: callgrind"),
			strings.HasPrefix(line, "cmd:") && bytes.Contains(head, []byte("\nevents:")):
			return true
		case hasEvents && (strings.HasPrefix(line, "fn=") || strings.HasPrefix(line, "fl=")):
			return true
		}
	}
	return false
}

// fnKey is a function as callgrind_annotate names it: file and name.
type fnKey struct{ file, name string }

// graph is the call graph of one file: per function its self cost and
// the inclusive cost of its calls to each callee, one value per event.
type graph struct {
	nev     int
	fns     []fnKey
	fnIdx   map[fnKey]int32
	self    [][]float64           // per function
	callees []map[int32][]float64 // per function: callee -> inclusive cost
	order   [][]int32             // per function: callees in the order first seen
}

func (g *graph) fn(k fnKey) int32 {
	if i, ok := g.fnIdx[k]; ok {
		return i
	}
	i := int32(len(g.fns))
	g.fnIdx[k] = i
	g.fns = append(g.fns, k)
	g.self = append(g.self, make([]float64, g.nev))
	g.callees = append(g.callees, nil)
	g.order = append(g.order, nil)
	return i
}

func (g *graph) call(from, to int32, cost []int64) {
	m := g.callees[from]
	if m == nil {
		m = map[int32][]float64{}
		g.callees[from] = m
	}
	c := m[to]
	if c == nil {
		c = make([]float64, g.nev)
		m[to] = c
		g.order[from] = append(g.order[from], to)
	}
	for i, v := range cost {
		c[i] += float64(v)
	}
}

// eventType is one event of the "events:" line as a pprof sample type:
// Xdebug's "Time_(10ns)" is time in nanoseconds, each unit 10 of them.
type eventType struct {
	typ, unit string
	scale     int64
}

var unitRe = regexp.MustCompile(`^(.+?)_?\((\d*)\s*(ns|us|µs|ms|s|bytes|B)\)$`)

func parseEvent(name string) eventType {
	m := unitRe.FindStringSubmatch(name)
	if m == nil {
		return eventType{name, "count", 1}
	}
	scale := int64(1)
	if m[2] != "" {
		if n, err := strconv.ParseInt(m[2], 10, 32); err == nil && n > 0 {
			scale = n
		}
	}
	switch m[3] {
	case "bytes", "B":
		return eventType{m[1], "bytes", scale}
	case "us", "µs":
		scale *= 1e3
	case "ms":
		scale *= 1e6
	case "s":
		scale *= 1e9
	}
	return eventType{m[1], "nanoseconds", scale}
}

// reader holds the state of the lines read so far.
type reader struct {
	g      graph
	events []eventType
	npos   int // position columns of a cost line (positions: header)

	files, names, objects map[string]string // name compression: "(id)"

	file, fnName string // fl= (the function's file), fn=
	curFile      string // fl=, fi= or fe=: the file the next lines are in
	cur          int32  // the current function, -1 before fn=
	cfile, cfn   string
	calls        bool // the next cost line is a call's

	prevPos  []int64
	prevCost []int64
	cost     []int64

	line    int
	bytes   int // read so far, newlines included
	bad     int
	badWhat []string
	visits  int // made by the call tree (profile)
}

// Parse reads a callgrind or cachegrind file from r.
func Parse(r io.Reader, opt Options) (*profile.Profile, error) {
	rd, err := read(r, opt)
	if err != nil {
		return nil, err
	}
	return rd.profile(opt)
}

// read reads the lines of a file into its call graph.
func read(r io.Reader, opt Options) (*reader, error) {
	rd := &reader{
		npos:    1,
		files:   map[string]string{},
		names:   map[string]string{},
		objects: map[string]string{},
		cur:     -1,
	}
	rd.g.fnIdx = map[fnKey]int32{}
	sc := bufio.NewScanner(r)
	maxLine := opt.MaxLineBytes
	if maxLine <= 0 {
		maxLine = 64 << 20
	}
	sc.Buffer(make([]byte, 0, min(maxLine, 64<<10)), maxLine)
	for sc.Scan() {
		rd.line++
		rd.bytes += len(sc.Bytes()) + 1
		if err := rd.readLine(sc.Text()); err != nil {
			return nil, fmt.Errorf("line %d: %w", rd.line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrLimit, rd.line+1, maxLine)
		}
		return nil, err
	}
	if rd.events == nil {
		return nil, errors.New(`no "events:" line names what the costs count`)
	}
	return rd, nil
}

func (rd *reader) skip(what string) error {
	rd.bad++
	if len(rd.badWhat) < 3 {
		rd.badWhat = append(rd.badWhat, fmt.Sprintf("line %d: %s", rd.line, what))
	}
	if rd.bad > maxBadLines {
		return fmt.Errorf("more than %d unreadable lines (%s)", maxBadLines, strings.Join(rd.badWhat, "; "))
	}
	return nil
}

func (rd *reader) readLine(line string) error {
	line = strings.TrimRight(line, "\r")
	t := strings.TrimSpace(line)
	if t == "" || t[0] == '#' {
		return nil
	}
	switch c := t[0]; {
	case c >= '0' && c <= '9', c == '+', c == '-', c == '*':
		return rd.costLine(t)
	}
	if k, v, ok := strings.Cut(t, "="); ok && isWord(k) {
		return rd.assign(k, strings.TrimSpace(v))
	}
	if k, v, ok := strings.Cut(t, ":"); ok && isWord(k) {
		return rd.header(k, strings.TrimSpace(v))
	}
	return rd.skip(fmt.Sprintf("not a callgrind line: %.40q", t))
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (rd *reader) header(k, v string) error {
	switch k {
	case "events":
		if rd.events != nil {
			return errors.New(`a second "events:" line; callgrind files of several runs must be read one at a time`)
		}
		if f := strings.Fields(v); len(f) > maxEvents {
			return fmt.Errorf("%w: the \"events:\" line names %d events, more than %d", ErrLimit, len(f), maxEvents)
		}
		for _, e := range strings.Fields(v) {
			rd.events = append(rd.events, parseEvent(e))
		}
		if len(rd.events) == 0 {
			return errors.New(`the "events:" line names no event`)
		}
		rd.g.nev = len(rd.events)
		rd.cost = make([]int64, len(rd.events))
		rd.prevCost = make([]int64, len(rd.events))
	case "positions":
		f := strings.Fields(v)
		if len(f) == 0 || len(f) > 2 {
			return rd.skip(fmt.Sprintf("positions: %.40q", v))
		}
		rd.npos = len(f)
	}
	// version, creator, pid, cmd, part, thread, desc, summary, totals and
	// event: lines say nothing the profile needs.
	return nil
}

// name resolves callgrind's name compression: "(12) name" defines id 12,
// "(12)" uses it.
func (rd *reader) name(table map[string]string, v string) (string, error) {
	if !strings.HasPrefix(v, "(") {
		return v, nil
	}
	end := strings.IndexByte(v, ')')
	if end < 0 {
		return v, nil
	}
	id, rest := v[1:end], strings.TrimSpace(v[end+1:])
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return v, nil
	}
	if rest == "" {
		n, ok := table[id]
		if !ok {
			return "", fmt.Errorf("name (%s) is used before it is defined", id)
		}
		return n, nil
	}
	table[id] = rest
	return rest, nil
}

func (rd *reader) assign(k, v string) error {
	var err error
	switch k {
	case "fl":
		if rd.file, err = rd.name(rd.files, v); err == nil {
			rd.curFile = rd.file
		}
	case "fi", "fe":
		rd.curFile, err = rd.name(rd.files, v)
	case "fn":
		var n string
		if n, err = rd.name(rd.names, v); err == nil {
			rd.fnName = n
			rd.cur = -1
			rd.curFile = rd.file
		}
	case "cfi", "cfl":
		rd.cfile, err = rd.name(rd.files, v)
	case "cfn":
		rd.cfn, err = rd.name(rd.names, v)
	case "ob", "cob":
		_, err = rd.name(rd.objects, v)
	case "jfi":
		_, err = rd.name(rd.files, v)
	case "jfn":
		_, err = rd.name(rd.names, v)
	case "calls":
		rd.calls = true
	}
	// jump=, jcnd= and unknown keys carry nothing the profile needs.
	return err
}

// number reads one column of a cost line: decimal or 0x hex, or relative
// to prev ("+n", "-n", "*": subposition compression, which speedscope
// applies to costs too).
func number(s string, prev int64) (int64, bool) {
	switch {
	case s == "*":
		return prev, true
	case strings.HasPrefix(s, "+"), strings.HasPrefix(s, "-"):
		n, ok := number(s[1:], 0)
		if !ok {
			return 0, false
		}
		if s[0] == '-' {
			n = -n
		}
		return prev + n, true
	case strings.HasPrefix(s, "0x"):
		n, err := strconv.ParseUint(s[2:], 16, 63)
		return int64(n), err == nil
	}
	n, err := strconv.ParseUint(s, 10, 63)
	return int64(n), err == nil
}

func (rd *reader) costLine(t string) error {
	if rd.events == nil {
		return errors.New(`a cost line before the "events:" line`)
	}
	f := strings.Fields(t)
	if len(f) < rd.npos || len(f) > rd.npos+len(rd.events) {
		return rd.skip(fmt.Sprintf("%d columns, want %d positions and up to %d costs", len(f), rd.npos, len(rd.events)))
	}
	if len(rd.prevPos) != rd.npos {
		// The first cost line, or the first after a positions: line that
		// changed the columns (a cost line before it read one).
		rd.prevPos = make([]int64, rd.npos)
	}
	for i := 0; i < rd.npos; i++ {
		n, ok := number(f[i], rd.prevPos[i])
		if !ok {
			return rd.skip(fmt.Sprintf("bad position %.20q", f[i]))
		}
		rd.prevPos[i] = n
	}
	clear(rd.cost)
	for i, s := range f[rd.npos:] {
		n, ok := number(s, rd.prevCost[i])
		if !ok || n < 0 {
			return rd.skip(fmt.Sprintf("bad cost %.20q", s))
		}
		rd.cost[i] = n
	}
	copy(rd.prevCost, rd.cost)
	if rd.cur < 0 {
		if rd.fnName == "" {
			return rd.skip("a cost line before any fn= line")
		}
		rd.cur = rd.g.fn(fnKey{rd.file, rd.fnName})
	}
	if rd.calls {
		rd.calls = false
		file := rd.cfile
		if file == "" {
			file = rd.curFile
		}
		name := rd.cfn
		if name == "" {
			name = rd.fnName
		}
		// A callee's file is named again for each call it applies to.
		rd.cfile = ""
		callee := rd.g.fn(fnKey{file, name})
		rd.g.call(rd.cur, callee, rd.cost)
		return nil
	}
	self := rd.g.self[rd.cur]
	for i, v := range rd.cost {
		self[i] += float64(v)
	}
	return nil
}

// profile makes the call tree of the graph, event by event, and returns
// it as a pprof profile.
func (rd *reader) profile(opt Options) (*profile.Profile, error) {
	g := &rd.g
	nev := len(rd.events)
	p := &profile.Profile{}
	for _, e := range rd.events {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: e.typ, Unit: e.unit})
	}
	p.DefaultSampleType = rd.events[0].typ
	p.PeriodType = &profile.ValueType{Type: rd.events[0].typ, Unit: rd.events[0].unit}
	if rd.bad > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: skipped %s: %s", sampling.CountOf(rd.bad, "unreadable callgrind lines"), strings.Join(rd.badWhat, "; ")))
	}

	// total[f] is each function's cost with its calls; what its callers'
	// calls do not explain, it spent as a root of the call tree.
	total := make([][]float64, len(g.fns))
	root := make([][]float64, len(g.fns))
	for f := range g.fns {
		total[f] = append([]float64(nil), g.self[f]...)
		root[f] = make([]float64, nev)
	}
	for f, m := range g.callees {
		for _, c := range m {
			for e, v := range c {
				total[f][e] += v
			}
		}
	}
	for f := range g.fns {
		copy(root[f], total[f])
	}
	for _, m := range g.callees {
		for to, c := range m {
			for e, v := range c {
				root[to][e] -= v
			}
		}
	}
	// The call tree: nodes (parent, function), each with its self cost
	// per event.
	type node struct{ parent, fn int32 }
	nodeIdx := map[node]int32{}
	var nodes []node
	var values []float64
	nodeOf := func(parent, fn int32) (int32, error) {
		k := node{parent, fn}
		if i, ok := nodeIdx[k]; ok {
			return i, nil
		}
		if opt.MaxSamples > 0 && len(nodes) >= opt.MaxSamples {
			return 0, fmt.Errorf("%w: the call tree has more than %d distinct stacks (restart the server with a larger --max-samples to accept it)", ErrLimit, opt.MaxSamples)
		}
		i := int32(len(nodes))
		nodeIdx[k] = i
		nodes = append(nodes, k)
		values = append(values, make([]float64, nev)...)
		return i, nil
	}
	// Each visit makes at most one node: the expanded paths take up to
	// maxVisits, their flattened ends as many again.
	maxVisits := min(max(1<<12, maxCells/nev/2), max(minVisits, visitsPerByte*rd.bytes))
	visits := 0
	defer func() { rd.visits = visits }()
	for e := 0; e < nev; e++ {
		sum := 0.0
		for f := range g.fns {
			sum += g.self[f][e]
		}
		cutoff := sum * minShare
		// flatten ends the path at node n of function fn, of weight w:
		// the self costs w comes to in fn and in the functions it calls,
		// directly or not, are put right under n, so that each
		// function's self cost stays whole. What is left once the
		// shares are negligible, or the visits are spent, is fn's.
		type share struct {
			fn int32
			w  float64
		}
		var queue []share
		flatten := func(n, fn int32, w float64, e int) error {
			queue = append(queue[:0], share{fn, w})
			for len(queue) > 0 {
				s := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				visits++
				at := n
				if s.fn != fn {
					var err error
					if at, err = nodeOf(n, s.fn); err != nil {
						return err
					}
				}
				t := total[s.fn][e]
				if t <= 0 || s.w < sum*1e-12 || visits+len(queue)+len(g.order[s.fn]) > 2*maxVisits {
					values[int(at)*nev+e] += s.w
					continue
				}
				ratio := s.w / t
				values[int(at)*nev+e] += g.self[s.fn][e] * ratio
				for _, to := range g.order[s.fn] {
					if c := g.callees[s.fn][to][e] * ratio; c > 0 {
						queue = append(queue, share{to, c})
					}
				}
			}
			return nil
		}
		var visit func(parent, fn int32, w float64, depth int) error
		visit = func(parent, fn int32, w float64, depth int) error {
			n, err := nodeOf(parent, fn)
			if err != nil {
				return err
			}
			visits++
			t := total[fn][e]
			if t <= 0 || w < cutoff || depth >= maxDepth || visits+len(g.order[fn]) > maxVisits {
				return flatten(n, fn, w, e)
			}
			ratio := w / t
			for _, to := range g.order[fn] {
				if c := g.callees[fn][to][e] * ratio; c > 0 {
					if err := visit(n, to, c, depth+1); err != nil {
						return err
					}
				}
			}
			values[int(n)*nev+e] += g.self[fn][e] * ratio
			return nil
		}
		for f := range g.fns {
			if w := root[f][e]; w > 0 {
				if err := visit(-1, int32(f), w, 0); err != nil {
					return nil, err
				}
			}
		}
	}

	fns := make([]*profile.Function, len(g.fns))
	locs := make([]*profile.Location, len(g.fns))
	for i, k := range g.fns {
		fn := &profile.Function{ID: uint64(i + 1), Name: k.name, SystemName: k.name, Filename: k.file}
		fns[i] = fn
		locs[i] = &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
	}
	scales := make([]float64, nev)
	for e := range scales {
		scales[e] = float64(rd.events[e].scale)
	}
	costs := roundShares(values, func(i int) int32 { return nodes[i].fn }, len(g.fns), scales)
	used := make([]bool, len(g.fns))
	for i := range nodes {
		var v []int64
		for e := 0; e < nev; e++ {
			if x := costs[i*nev+e]; x != 0 {
				if v == nil {
					v = make([]int64, nev)
				}
				v[e] = x
			}
		}
		if v == nil {
			continue
		}
		s := &profile.Sample{Value: v}
		for n := int32(i); n >= 0; n = nodes[n].parent {
			s.Location = append(s.Location, locs[nodes[n].fn])
			used[nodes[n].fn] = true
		}
		p.Sample = append(p.Sample, s)
	}
	for i, u := range used {
		if u {
			p.Function = append(p.Function, fns[i])
			p.Location = append(p.Location, locs[i])
		}
	}
	if len(p.Sample) == 0 {
		return nil, errors.New("the callgrind input has no costs")
	}
	return p, nil
}

// roundShares rounds the call tree's shares of self costs (values, one
// per event a node, the node's function fnOf(i) of nfns, each event's
// values times its scale) to integers whose sum over a function's nodes
// is its whole cost rounded, as callgrind_annotate lists it: the shares
// with the largest remainders are rounded up. Rounding each share alone
// lost or added cost spread over many paths (fstatat's 3 I1 misses over
// several paths read as 0; ls's total Ir 25 over the file's).
func roundShares(values []float64, fnOf func(i int) int32, nfns int, scales []float64) []int64 {
	nev := len(scales)
	n := len(values) / nev
	// The nodes grouped by function (a counting sort).
	start := make([]int32, nfns+1)
	for i := 0; i < n; i++ {
		start[fnOf(i)+1]++
	}
	for f := 0; f < nfns; f++ {
		start[f+1] += start[f]
	}
	byFn := make([]int32, n)
	next := slices.Clone(start[:nfns])
	for i := 0; i < n; i++ {
		f := fnOf(i)
		byFn[next[f]] = int32(i)
		next[f]++
	}
	out := make([]int64, len(values))
	const most = math.MaxInt64 / 2
	var up []int32
	for e := 0; e < nev; e++ {
		for f := 0; f < nfns; f++ {
			group := byFn[start[f]:start[f+1]]
			sum, floors := 0.0, 0.0
			for _, i := range group {
				x := values[int(i)*nev+e] * scales[e]
				sum += x
				floors += math.Floor(x)
				out[int(i)*nev+e] = int64(min(math.Floor(x), most))
			}
			left := int(min(math.Round(sum)-floors, float64(len(group))))
			if left <= 0 {
				continue
			}
			frac := func(i int32) float64 {
				x := values[int(i)*nev+e] * scales[e]
				return x - math.Floor(x)
			}
			up = append(up[:0], group...)
			slices.SortStableFunc(up, func(a, b int32) int { return cmp.Compare(frac(b), frac(a)) })
			for _, i := range up[:left] {
				if out[int(i)*nev+e] < most {
					out[int(i)*nev+e]++
				}
			}
		}
	}
	return out
}
