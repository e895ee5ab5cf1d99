// Package instruments reads the call tree text that Apple's Instruments
// copies (Edit > Deep Copy of a Time Profiler, Counters or Allocations
// call tree) into a pprof profile. Each row is a node of the tree, its
// depth the indent of its symbol, its weight inclusive; a node's self
// weight is what its children do not explain, as speedscope reads it.
package instruments

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// ErrLimit is wrapped by errors about inputs over the caller's limits.
var ErrLimit = errors.New("over the limit")

// Options bound a read; zero fields mean no limit.
type Options struct {
	MaxLineBytes  int
	MaxSamples    int // distinct stacks
	MaxStackDepth int
}

// Sniff accepts a deep copy: a header of tab-separated columns ending in
// "Symbol Name" or "Symbol Names".
func Sniff(head []byte) bool {
	l, _, _ := strings.Cut(string(head), "\n")
	l = strings.TrimRight(l, "\r")
	return strings.Contains(l, "\t") && (strings.HasSuffix(l, "Symbol Name") || strings.HasSuffix(l, "Symbol Names"))
}

// weightRe is a weight column: a number, its unit, and a percentage.
var weightRe = regexp.MustCompile(`^\s*([\d.,]+)\s*([A-Za-zµ]+)`)

// units are the weight units Instruments writes, with the sample type
// each is read into and its factor to that type's unit.
var units = map[string]struct {
	typ, unit string
	factor    float64
}{
	"ns": {"cpu", "nanoseconds", 1}, "µs": {"cpu", "nanoseconds", 1e3}, "us": {"cpu", "nanoseconds", 1e3},
	"ms": {"cpu", "nanoseconds", 1e6}, "s": {"cpu", "nanoseconds", 1e9}, "min": {"cpu", "nanoseconds", 60e9},
	"cycles": {"cycles", "count", 1}, "Kc": {"cycles", "count", 1e3}, "Mc": {"cycles", "count", 1e6}, "Gc": {"cycles", "count", 1e9},
	"Bytes": {"space", "bytes", 1}, "KB": {"space", "bytes", 1 << 10}, "MB": {"space", "bytes", 1 << 20}, "GB": {"space", "bytes", 1 << 30},
}

type node struct {
	name     string
	weight   float64
	children float64 // the weight the children took
}

// Parse reads a deep copy from r.
func Parse(r io.Reader, opt Options) (*profile.Profile, error) {
	sc := bufio.NewScanner(r)
	maxLine := opt.MaxLineBytes
	if maxLine <= 0 {
		maxLine = 64 << 20
	}
	maxDepth := opt.MaxStackDepth
	if maxDepth <= 0 {
		maxDepth = 1 << 16
	}
	sc.Buffer(make([]byte, 0, min(maxLine, 64<<10)), maxLine)
	if !sc.Scan() {
		return nil, errors.New("no header line")
	}
	header := strings.Split(strings.TrimRight(strings.TrimPrefix(sc.Text(), "\ufeff"), "\r"), "\t")
	symCol, weightCol := len(header)-1, -1
	for i, h := range header {
		switch h {
		case "Weight", "Running Time", "Bytes Used":
			weightCol = i
		}
	}
	if weightCol < 0 {
		return nil, fmt.Errorf("the header %q has no Weight, Running Time or Bytes Used column", strings.Join(header, " | "))
	}
	p := &profile.Profile{}
	locs := map[string]*profile.Location{}
	samples := map[string]*profile.Sample{}
	var stack []node
	base := -1
	n, skipped := 1, 0
	var typErr error
	// pop closes the deepest open node: its self weight is what its
	// children did not take, and it takes the more of its weight and
	// theirs from its parent.
	pop := func() error {
		top := stack[len(stack)-1]
		took := max(top.weight, top.children)
		if self := took - top.children; self > 0 {
			var k strings.Builder
			for _, nd := range stack {
				k.WriteString(nd.name)
				k.WriteByte(0)
			}
			s := samples[k.String()]
			if s == nil {
				if opt.MaxSamples > 0 && len(samples) >= opt.MaxSamples {
					return fmt.Errorf("%w: more than %d distinct stacks (restart the server with a larger --max-samples to accept it)", ErrLimit, opt.MaxSamples)
				}
				s = &profile.Sample{Value: []int64{0}}
				for i := len(stack) - 1; i >= 0; i-- {
					name := stack[i].name
					l := locs[name]
					if l == nil {
						fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
						p.Function = append(p.Function, fn)
						l = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
						p.Location = append(p.Location, l)
						locs[name] = l
					}
					s.Location = append(s.Location, l)
				}
				samples[k.String()] = s
				p.Sample = append(p.Sample, s)
			}
			s.Value[0] += int64(self + 0.5)
		}
		stack = stack[:len(stack)-1]
		if len(stack) > 0 {
			stack[len(stack)-1].children += took
		}
		return nil
	}
	for sc.Scan() {
		n++
		cols := strings.Split(strings.TrimRight(sc.Text(), "\r"), "\t")
		if len(cols) <= symCol || len(cols) <= weightCol {
			if strings.TrimSpace(sc.Text()) != "" {
				skipped++
			}
			continue
		}
		sym := cols[symCol]
		name := strings.TrimLeft(sym, " ")
		if name == "" {
			skipped++
			continue
		}
		depth := len(sym) - len(name)
		if base < 0 {
			base = depth
		}
		depth -= base
		if depth < 0 || depth > len(stack) {
			skipped++
			continue
		}
		if depth > maxDepth {
			return nil, fmt.Errorf("%w: line %d is %d calls deep, over the limit of %d", ErrLimit, n, depth, maxDepth)
		}
		m := weightRe.FindStringSubmatch(cols[weightCol])
		if m == nil {
			skipped++
			continue
		}
		u, ok := units[m[2]]
		if !ok {
			skipped++
			continue
		}
		if p.SampleType == nil {
			p.SampleType = []*profile.ValueType{{Type: u.typ, Unit: u.unit}}
			p.DefaultSampleType = u.typ
		} else if p.SampleType[0].Type != u.typ && typErr == nil {
			typErr = fmt.Errorf("line %d weighs %s, the lines before it %s", n, m[2], p.SampleType[0].Unit)
		}
		w, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
		if err != nil {
			skipped++
			continue
		}
		for len(stack) > depth {
			if err := pop(); err != nil {
				return nil, err
			}
		}
		stack = append(stack, node{name: name, weight: w * u.factor})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrLimit, n+1, maxLine)
		}
		return nil, err
	}
	if typErr != nil {
		return nil, typErr
	}
	for len(stack) > 0 {
		if err := pop(); err != nil {
			return nil, err
		}
	}
	if len(p.Sample) == 0 {
		return nil, errors.New("the call tree has no weights")
	}
	if skipped > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: skipped %d lines that are not call tree rows", skipped))
	}
	return p, nil
}
