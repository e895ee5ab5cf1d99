// Package ghcprof reads the text report of GHC's profiler (a Haskell
// program built with -prof and run with +RTS -p, or -P for exact
// counts: "Time and Allocation Profiling Report") into a pprof profile
// of two sample types, time and alloc, as the JSON report (+RTS -pj,
// read by package jsonprof) gives them: the report's cost centre tree is
// the stacks (a line's indent its depth), each cost centre named
// MODULE.LABEL with the file and line of its SRC. A line's own ticks and
// bytes are its weights when the report has them (-P); otherwise its
// individual %time and %alloc of the report's total ticks and bytes (to
// 0.1%, as GHC rounds them). The report has no times.
package ghcprof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
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
	MaxStackDepth int // the indent of a line
}

// Sniff accepts a GHC profiling report: one of its first lines says so.
func Sniff(head []byte) bool {
	for i := 0; i < 3; i++ {
		line, rest, _ := bytes.Cut(head, []byte("\n"))
		if bytes.Contains(line, []byte("Time and Allocation Profiling Report")) {
			return true
		}
		head = rest
	}
	return false
}

var (
	// totalTime is "total time  =  0.80 secs   (798 ticks @ 1000 us, 1 processor)".
	totalTime = regexp.MustCompile(`total time\s*=.*\(\s*([\d,]+) ticks? @ ([\d,.]+) (us|ms)`)
	// totalAlloc is "total alloc = 1,921,672,664 bytes".
	totalAlloc = regexp.MustCompile(`total alloc\s*=\s*([\d,]+) bytes`)
	// srcLoc is where SRC names the file and first line: "Main.hs:12:1-20",
	// "Main.hs:(12,1)-(14,30)".
	srcLoc = regexp.MustCompile(`^(.+?):\(?(\d+)[,:](\d+)`)
)

type frame struct {
	name, file string
	line, col  int64
}

// Parse reads a GHC profiling report from r.
func Parse(r io.Reader, opt Options) (*profile.Profile, error) {
	maxLine := opt.MaxLineBytes
	if maxLine <= 0 {
		maxLine = 64 << 20
	}
	maxDepth := opt.MaxStackDepth
	if maxDepth <= 0 {
		maxDepth = 1 << 16
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(maxLine, 64<<10)), maxLine)
	var (
		ticks, tickNanos float64 = -1, 1e6
		allocTotal       float64 = -1
		inTree           bool
		hasSrc           bool
		cols             []string // the numeric columns' names, from "no."
		stack            []*profile.Location
		n, skipped       int
		firstBad         string
	)
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "time", Unit: "nanoseconds"}, {Type: "alloc", Unit: "bytes"}},
		DefaultSampleType: "time",
		PeriodType:        &profile.ValueType{Type: "time", Unit: "nanoseconds"},
	}
	locs := map[frame]*profile.Location{}
	fns := map[frame]*profile.Function{}
	samples := map[string]*profile.Sample{}
	col := func(name string, nth int) int { // index of the nth column called name
		for i, c := range cols {
			if c == name {
				if nth == 0 {
					return i
				}
				nth--
			}
		}
		return -1
	}
	var iTicks, iBytes, iTime, iAlloc int
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \r")
		if !inTree {
			if m := totalTime.FindStringSubmatch(line); m != nil {
				ticks, _ = strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
				if t, err := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64); err == nil && t > 0 {
					tickNanos = t * 1e3
					if m[3] == "ms" {
						tickNanos = t * 1e6
					}
				}
			}
			if m := totalAlloc.FindStringSubmatch(line); m != nil {
				allocTotal, _ = strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
			}
			// The tree's header: the one with "no." and "entries".
			if f := strings.Fields(line); len(f) > 2 && f[0] == "COST" && f[1] == "CENTRE" && strings.Contains(line, " no. ") {
				inTree = true
				hasSrc = false
				cols = cols[:0]
				for i, c := range f[2:] {
					if c == "SRC" {
						hasSrc = true
					}
					if c == "no." {
						cols = append(cols, f[2+i:]...)
						break
					}
				}
				iTicks, iBytes = col("ticks", 0), col("bytes", 0)
				iTime, iAlloc = col("%time", 0), col("%alloc", 0)
				if iTicks < 0 && (iTime < 0 || iAlloc < 0) {
					return nil, fmt.Errorf("line %d: the cost centre tree's header names neither ticks and bytes nor %%time and %%alloc: %.120q", n, line)
				}
			}
			continue
		}
		if line == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		f := strings.Fields(line)
		names := 2
		if hasSrc {
			names = 3
		}
		if len(f) < names+len(cols) || indent > len(stack) {
			skipped++
			if firstBad == "" {
				firstBad = fmt.Sprintf("line %d: %.80q", n, line)
			}
			continue
		}
		if indent >= maxDepth {
			return nil, fmt.Errorf("%w: line %d is %d cost centres deep", ErrLimit, n, indent)
		}
		num := f[len(f)-len(cols):]
		value := func(i int) (float64, bool) {
			if i < 0 {
				return 0, false
			}
			v, err := strconv.ParseFloat(strings.ReplaceAll(num[i], ",", ""), 64)
			return v, err == nil && v >= 0 && !math.IsInf(v, 0)
		}
		fr := frame{name: f[1] + "." + f[0]}
		if hasSrc {
			src := strings.Join(f[2:len(f)-len(cols)], " ")
			if src != "" && src[0] != '<' {
				fr.file = src
				if m := srcLoc.FindStringSubmatch(src); m != nil {
					fr.file = m[1]
					fr.line, _ = strconv.ParseInt(m[2], 10, 64)
					fr.col, _ = strconv.ParseInt(m[3], 10, 64)
				}
			}
		}
		var t, a float64
		var ok1, ok2 bool
		if iTicks >= 0 && iBytes >= 0 {
			t, ok1 = value(iTicks)
			a, ok2 = value(iBytes)
			t *= tickNanos
		} else {
			if ticks < 0 || allocTotal < 0 {
				return nil, errors.New("the report has no total time or total alloc line before its cost centre tree, which its percentages are of")
			}
			t, ok1 = value(iTime)
			a, ok2 = value(iAlloc)
			t, a = t/100*ticks*tickNanos, a/100*allocTotal
		}
		if !ok1 || !ok2 {
			skipped++
			if firstBad == "" {
				firstBad = fmt.Sprintf("line %d: %.80q", n, line)
			}
			continue
		}
		l := locs[fr]
		if l == nil {
			fk := frame{name: fr.name, file: fr.file}
			fn := fns[fk]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: fr.name, SystemName: fr.name, Filename: fr.file, StartLine: fr.line}
				fns[fk] = fn
				p.Function = append(p.Function, fn)
			}
			l = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn, Line: fr.line, Column: fr.col}}}
			locs[fr] = l
			p.Location = append(p.Location, l)
		}
		stack = append(stack[:indent], l)
		tv, av := int64(math.Round(t)), int64(math.Round(a))
		if tv == 0 && av == 0 {
			continue
		}
		var key strings.Builder
		for _, l := range stack {
			key.WriteString(strconv.FormatUint(l.ID, 36))
			key.WriteByte(';')
		}
		s := samples[key.String()]
		if s == nil {
			if opt.MaxSamples > 0 && len(samples) >= opt.MaxSamples {
				return nil, fmt.Errorf("%w: more than %d distinct stacks (restart the server with a larger --max-samples to accept it)", ErrLimit, opt.MaxSamples)
			}
			s = &profile.Sample{Value: make([]int64, 2), Location: make([]*profile.Location, len(stack))}
			for i, l := range stack {
				s.Location[len(stack)-1-i] = l
			}
			samples[key.String()] = s
			p.Sample = append(p.Sample, s)
		}
		s.Value[0] += tv
		s.Value[1] += av
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrLimit, n+1, maxLine)
		}
		return nil, err
	}
	if !inTree {
		return nil, errors.New("the GHC report has no cost centre tree (the COST CENTRE ... no. entries header): was it cut short, or written with +RTS -pa?")
	}
	if len(p.Sample) == 0 {
		if skipped > 0 {
			return nil, fmt.Errorf("no line of the GHC report's cost centre tree could be read (%s)", firstBad)
		}
		return nil, errors.New("the GHC report's cost centre tree has no time or allocation")
	}
	p.Period = int64(tickNanos)
	if skipped > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("warning: skipped %d lines of the cost centre tree that could not be read (first: %s)", skipped, firstBad))
	}
	return p, nil
}
