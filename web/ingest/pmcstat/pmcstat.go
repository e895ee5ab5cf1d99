// Package pmcstat reads the callgraphs FreeBSD's pmcstat writes
// (`pmcstat -R file -G out.txt`) into a pprof profile, one sample type per
// event: each "@ event [N samples]" section lists leaf functions, each
// with its callers indented one space deeper, a line's count the samples
// of that path; a line with no deeper line after it ends a stack.
package pmcstat

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
	MaxLineBytes int
	MaxSamples   int // distinct stacks
	// MaxStackDepth bounds the indent of a line (the depth of a stack).
	MaxStackDepth int
}

// Sniff accepts a pmcstat callgraph: its first line "@ event [N samples]".
func Sniff(head []byte) bool {
	line, _, _ := strings.Cut(string(head), "\n")
	return strings.HasPrefix(line, "@ ") && strings.Contains(line, " samples]")
}

var (
	eventRe = regexp.MustCompile(`^@ (\S+) \[(\d+) samples\]`)
	lineRe  = regexp.MustCompile(`^( *)[\d.]+%\s+\[(\d+)\]\s*(\S+)(?: @ (.*))?$`)
)

type frame struct{ name, file string }

// Parse reads a pmcstat callgraph from r. Lines that are neither an
// event's header nor a callgraph line are skipped and counted in a
// warning.
func Parse(r io.Reader, opt Options) (*profile.Profile, error) {
	p := &profile.Profile{}
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
	fns := map[frame]*profile.Location{}
	samples := map[string]*profile.Sample{}
	var order []*profile.Sample
	typ := -1
	var stack []frame
	file := ""
	prevIndent, prevCount := -1, int64(0)
	skipped, n := 0, 0
	emit := func() error {
		if prevIndent < 0 || typ < 0 {
			return nil
		}
		var k strings.Builder
		for _, f := range stack[:prevIndent+1] {
			k.WriteString(f.name)
			k.WriteByte(0)
			k.WriteString(f.file)
			k.WriteByte(0)
		}
		s := samples[k.String()]
		if s == nil {
			if opt.MaxSamples > 0 && len(samples) >= opt.MaxSamples {
				return fmt.Errorf("%w: more than %d distinct stacks (restart the server with a larger --max-samples to accept it)", ErrLimit, opt.MaxSamples)
			}
			s = &profile.Sample{}
			for _, f := range stack[:prevIndent+1] { // leaf first
				l := fns[f]
				if l == nil {
					fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.name, SystemName: f.name, Filename: f.file}
					p.Function = append(p.Function, fn)
					l = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
					p.Location = append(p.Location, l)
					fns[f] = l
				}
				s.Location = append(s.Location, l)
			}
			samples[k.String()] = s
			order = append(order, s)
		}
		for len(s.Value) <= typ {
			s.Value = append(s.Value, 0)
		}
		s.Value[typ] += prevCount
		return nil
	}
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if m := eventRe.FindStringSubmatch(line); m != nil {
			if err := emit(); err != nil {
				return nil, err
			}
			prevIndent = -1
			typ = len(p.SampleType)
			p.SampleType = append(p.SampleType, &profile.ValueType{Type: m[1], Unit: "count"})
			continue
		}
		m := lineRe.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "//") {
				skipped++
			}
			continue
		}
		indent := len(m[1])
		if indent > maxDepth {
			return nil, fmt.Errorf("%w: line %d is %d calls deep, over the limit of %d", ErrLimit, n, indent, maxDepth)
		}
		if indent > prevIndent+1 {
			skipped++ // a caller without its callee
			continue
		}
		if indent <= prevIndent {
			if err := emit(); err != nil {
				return nil, err
			}
		}
		count, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			skipped++
			continue
		}
		if m[4] != "" {
			file = m[4]
		}
		stack = append(stack[:indent], frame{m[3], file})
		prevIndent, prevCount = indent, count
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrLimit, n+1, maxLine)
		}
		return nil, err
	}
	if err := emit(); err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, errors.New("the pmcstat callgraph has no samples")
	}
	for _, s := range order {
		for len(s.Value) < len(p.SampleType) {
			s.Value = append(s.Value, 0)
		}
	}
	p.Sample = order
	p.DefaultSampleType = p.SampleType[0].Type
	if skipped > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: skipped %d lines that are not pmcstat callgraph lines", skipped))
	}
	return p, nil
}
