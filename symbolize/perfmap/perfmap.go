// Package perfmap reads the symbol maps JIT runtimes write for perf
// (/tmp/perf-PID.map: node --perf-basic-prof, the JVM's perf-map-agent,
// CPython's -X perf), so their generated code's addresses get the names
// perf script gives them. It parses by perf's own rules, skipping and
// counting the lines perf would not take, and bounds what it reads.
package perfmap

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Dir is where perf, and the runtimes that write the maps, put them.
const Dir = "/tmp"

// PID returns the process ID a perf map's path names when the path is
// exactly /tmp/perf-<digits>.map, as perf spells it (decimal, no sign or
// leading zero): the only files the symbolizer reads as perf maps.
func PID(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, Dir+"/perf-")
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutSuffix(rest, ".map")
	if !ok || digits == "" || len(digits) > 10 || digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid > 1<<31-1 {
		return 0, false
	}
	return pid, true
}

// IsPath reports whether path is a perf map's path (PID).
func IsPath(path string) bool {
	_, ok := PID(path)
	return ok
}

// Path is the perf map perf reads for process pid.
func Path(pid int) string { return Dir + "/perf-" + strconv.Itoa(pid) + ".map" }

// DefaultMax bounds a map read with no other bound (Read's max ≤ 0).
const DefaultMax = 1 << 30

// ErrTooLarge is wrapped by Read's error for a map over its bound.
var ErrTooLarge = errors.New("perf map over the size limit")

// Map is a perf map's symbols as disjoint address ranges sorted by start,
// for binary search.
type Map struct {
	ranges []entry
	// Lines counts the lines read, Symbols those taken and Bad those
	// skipped (no hex start or size, a name shorter than perf takes, a
	// range past the end of the address space).
	Lines, Symbols, Bad int
	// FirstBad is the 1-based number of the first line skipped, 0: none.
	FirstBad int
	bytes    int64
}

type entry struct {
	start, end uint64 // [start, end)
	name       string
}

// Read parses a perf map from r, reading at most max bytes (≤ 0:
// DefaultMax); a longer input is refused with ErrTooLarge, never cut.
func Read(r io.Reader, max int64) (*Map, error) {
	if max <= 0 {
		max = DefaultMax
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return Parse(string(data)), nil
}

// Parse parses a perf map's text. Each line is "START SIZE NAME": START
// and SIZE hexadecimal with an optional 0x, each after optional blanks
// and followed by one separator character, NAME the rest of the line,
// kept as it is (perf's dso__load_perf_map, whose strtoull also takes
// the 0x). Like perf it skips a line whose name is shorter than three
// characters. A symbol of size 0 covers its start address only, as
// perf's lookup matches it. Where symbols overlap, a later line wins
// over an earlier one for the addresses they share: a runtime that
// reuses code memory appends the new code's line.
func Parse(text string) *Map {
	m := &Map{bytes: int64(len(text))}
	var raw []rawEntry
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, len(text)+1)
	for sc.Scan() {
		m.Lines++
		e, ok := parseLine(sc.Text())
		if !ok {
			m.Bad++
			if m.FirstBad == 0 {
				m.FirstBad = m.Lines
			}
			continue
		}
		e.seq = len(raw)
		raw = append(raw, e)
	}
	m.Symbols = len(raw)
	m.ranges = resolve(raw)
	return m
}

type rawEntry struct {
	entry
	seq int // the line's order among those taken: later wins
}

// parseLine reads one line by perf's rules; ok is false for a line perf
// would skip, or would take with a range that wraps past 2^64.
func parseLine(line string) (rawEntry, bool) {
	start, rest, ok := hexField(line)
	if !ok || rest == "" {
		return rawEntry{}, false
	}
	size, rest, ok := hexField(rest[1:]) // one separator character
	if !ok || len(rest) < 1+3 {
		return rawEntry{}, false
	}
	name := rest[1:]
	end := start + max(size, 1)
	if end < start {
		return rawEntry{}, false
	}
	return rawEntry{entry: entry{start: start, end: end, name: name}}, true
}

// hexField reads blanks, an optional 0x and at least one hex digit (a
// value that fits 64 bits), and returns the value and what follows.
func hexField(s string) (uint64, string, bool) {
	s = strings.TrimLeft(s, " \t")
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHex(s[2]) {
		s = s[2:]
	}
	n := 0
	for n < len(s) && isHex(s[n]) {
		n++
	}
	if n == 0 {
		return 0, s, false
	}
	v, err := strconv.ParseUint(s[:n], 16, 64)
	if err != nil {
		return 0, s, false
	}
	return v, s[n:], true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// resolve turns the symbols, in line order, into disjoint ranges sorted
// by start, each address owned by the last line that covers it; adjacent
// pieces of one line are joined.
func resolve(raw []rawEntry) []entry {
	if len(raw) == 0 {
		return nil
	}
	byStart := make([]int, len(raw))
	for i := range byStart {
		byStart[i] = i
	}
	sort.SliceStable(byStart, func(a, b int) bool { return raw[byStart[a]].start < raw[byStart[b]].start })
	if disjoint(raw, byStart) {
		out := make([]entry, len(raw))
		for i, j := range byStart {
			out[i] = raw[j].entry
		}
		return out
	}
	// A sweep over the distinct range boundaries, with the lines covering
	// the current one in a heap by line order (latest on top); lines that
	// ended leave it lazily.
	bounds := make([]uint64, 0, 2*len(raw))
	for _, e := range raw {
		bounds = append(bounds, e.start, e.end)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	var out []entry
	h := latest{raw: raw}
	next, owner := 0, -1 // owner: the line of out's last piece
	for bi, b := range bounds[:len(bounds)-1] {
		for next < len(byStart) && raw[byStart[next]].start <= b {
			heap.Push(&h, byStart[next])
			next++
		}
		for len(h.idx) > 0 && raw[h.idx[0]].end <= b {
			heap.Pop(&h)
		}
		if len(h.idx) == 0 {
			continue
		}
		top, nb := h.idx[0], bounds[bi+1] // [b, nb) is top's
		if n := len(out); n > 0 && owner == top && out[n-1].end == b {
			out[n-1].end = nb
			continue
		}
		out = append(out, entry{start: b, end: nb, name: raw[top].name})
		owner = top
	}
	return out
}

// disjoint reports whether no two symbols overlap, the usual case, which
// needs no sweep.
func disjoint(raw []rawEntry, byStart []int) bool {
	for k := 1; k < len(byStart); k++ {
		if raw[byStart[k]].start < raw[byStart[k-1]].end {
			return false
		}
	}
	return true
}

// latest is a max-heap (container/heap) of line indexes by line order.
type latest struct {
	raw []rawEntry
	idx []int
}

func (h *latest) Len() int           { return len(h.idx) }
func (h *latest) Less(a, b int) bool { return h.raw[h.idx[a]].seq > h.raw[h.idx[b]].seq }
func (h *latest) Swap(a, b int)      { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *latest) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *latest) Pop() any {
	n := len(h.idx) - 1
	x := h.idx[n]
	h.idx = h.idx[:n]
	return x
}

// Lookup returns the name of the symbol holding addr, an absolute address
// (perf maps hold runtime addresses; no file offset applies).
func (m *Map) Lookup(addr uint64) (string, bool) {
	i := sort.Search(len(m.ranges), func(i int) bool { return m.ranges[i].start > addr }) - 1
	if i < 0 || addr >= m.ranges[i].end {
		return "", false
	}
	return m.ranges[i].name, true
}

// Len is the number of disjoint ranges the map holds.
func (m *Map) Len() int { return len(m.ranges) }

// Size estimates the memory the map holds, in bytes.
func (m *Map) Size() int64 { return m.bytes + int64(len(m.ranges))*40 }
