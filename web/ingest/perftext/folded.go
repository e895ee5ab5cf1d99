package perftext

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// foldedLine splits "a;b;c 12" into its frames (root first) and count.
func foldedLine(s string) (stack string, count float64, ok bool) {
	i := strings.LastIndexAny(s, " \t")
	if i <= 0 {
		return "", 0, false
	}
	stack = strings.TrimRight(s[:i], " \t")
	c, err := strconv.ParseFloat(s[i+1:], 64)
	if err != nil || c < 0 || math.IsInf(c, 0) || math.IsNaN(c) || stack == "" {
		return "", 0, false
	}
	return stack, c, true
}

// SniffFolded reports whether head looks like folded stacks ("frame;frame;frame
// count" lines): the first line is one, and most of the others are.
func SniffFolded(head []byte) bool {
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) > 1 && len(head) >= 4096 {
		lines = lines[:len(lines)-1] // the last line may be cut short
	}
	good, bad := 0, 0
	for _, l := range lines {
		s := strings.TrimRight(string(l), "\r")
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if _, _, ok := foldedLine(s); ok && s[0] != ' ' && s[0] != '\t' && s[0] != '{' && s[0] != '[' {
			good++
		} else if good == 0 {
			return false
		} else {
			bad++
		}
	}
	return good > bad
}

// ParseFolded reads folded stacks, as flamegraph.pl's stackcollapse scripts
// and many profilers write them: one "root;...;leaf count" per line. Counts
// may be decimal; then every value is the count × 1000 (unit "millicount").
func ParseFolded(data []byte, maxSamples int) (*profile.Profile, error) {
	type entry struct {
		stack string
		count float64
	}
	var entries []entry
	b := newBuilder(maxSamples)
	fractional := false
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		s := strings.TrimRight(string(line), "\r")
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		stack, c, ok := foldedLine(s)
		if !ok {
			b.badLine(lineNo, s, "not \"frame;frame;... count\"")
			continue
		}
		if c != math.Trunc(c) {
			fractional = true
		}
		entries = append(entries, entry{stack, c})
	}
	scale := 1.0
	event := "samples"
	if fractional {
		scale = 1000
		b.unit = func(string) string { return "millicount" }
		event = "samples"
	} else {
		b.unit = func(string) string { return "count" }
	}
	var frames []Frame
	for _, e := range entries {
		parts := strings.Split(e.stack, ";")
		frames = frames[:0]
		for i := len(parts) - 1; i >= 0; i-- {
			if parts[i] == "" {
				continue
			}
			frames = append(frames, Frame{Func: parts[i]})
		}
		v := int64(math.Round(e.count * scale))
		if err := b.add(event, frames, v, v, "", -1, -1); err != nil {
			return nil, err
		}
	}
	p, err := b.finish("folded stacks")
	if err != nil {
		return nil, err
	}
	// Folded stacks carry one number per stack: keep one sample type.
	p.SampleType = p.SampleType[1:2]
	p.SampleType[0].Type = "samples"
	for _, s := range p.Sample {
		s.Value = s.Value[1:2]
	}
	p.DefaultSampleType = "samples"
	p.PeriodType = nil
	if fractional {
		p.Comments = append(p.Comments, fmt.Sprintf("folded counts have decimals: values are the counts × %.0f (unit millicount)", scale))
	}
	return p, nil
}
