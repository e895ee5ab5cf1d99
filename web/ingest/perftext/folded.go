package perftext

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/pprof/profile"
)

// foldedLine splits "a;b;c 12" into its frames (root first) and count, as
// flamegraph.pl reads it: the count is the last blank-separated field, digits
// with an optional decimal part; the stack is everything before it.
func foldedLine(s string) (stack string, count float64, ok bool) {
	i := strings.LastIndexAny(s, " \t")
	if i <= 0 || !isCount(s[i+1:]) {
		return "", 0, false
	}
	stack = s[:i] // a last frame of blanks is a frame (an empty symbol)
	c, err := strconv.ParseFloat(s[i+1:], 64)
	if err != nil || math.IsInf(c, 0) || stack == "" {
		return "", 0, false
	}
	return stack, c, true
}

// isCount reports whether s is flamegraph.pl's count: \d+(\.\d*)?.
func isCount(s string) bool {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" {
		return false
	}
	for _, r := range whole + frac {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// foldedComment reports whether a line is blank or a "#" or "//" comment.
func foldedComment(s string) bool {
	t := strings.TrimSpace(s)
	return t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "//")
}

// SniffFolded reports whether head looks like folded stacks ("frame;frame;frame
// count" lines): at least half of its lines are such lines, and one at
// least, comments aside. A stack and one bad line is claimed, so that the
// stack is read and the bad line reported as a warning (flamegraph.pl draws
// it and says "Ignored 1 lines"), not refused as an unknown format.
// A first line longer than head that holds ';' is claimed too, so that
// ParseFolded can say the line is too long.
func SniffFolded(head []byte) bool {
	head = DecodeText(head)
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) == 1 && len(head) >= 4096 && bytes.IndexByte(head, ';') > 0 && utf8.Valid(head[:len(head)-utf8.UTFMax]) {
		return true
	}
	c := countFolded(head)
	return c.Good > 0 && c.Good >= c.Bad
}

// FoldedCount is how many of a text's lines are folded stacks, as
// SniffFolded counts them, comments aside.
type FoldedCount struct {
	Good, Bad int
	// FirstBad is the first line that is not one (1-based), BadLine its
	// text, cut to 80 bytes.
	FirstBad int
	BadLine  string
}

// CountFolded counts the folded-stack lines of head, the first bytes of an
// input: what a refusal says of a text that has some but too few of them.
func CountFolded(head []byte) FoldedCount { return countFolded(DecodeText(head)) }

func countFolded(head []byte) FoldedCount {
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) > 1 && len(head) >= 4096 {
		lines = lines[:len(lines)-1] // the last line may be cut short
	}
	var c FoldedCount
	for i, l := range lines {
		s := strings.TrimRight(string(l), "\r")
		if foldedComment(s) {
			continue
		}
		if _, _, ok := foldedLine(s); ok && s[0] != ' ' && s[0] != '\t' && s[0] != '{' && s[0] != '[' && s[0] != '<' {
			c.Good++
			continue
		}
		c.Bad++
		if c.FirstBad == 0 {
			c.FirstBad = i + 1
			if c.BadLine = s; len(s) > 80 {
				c.BadLine = s[:80] + "…"
			}
		}
	}
	return c
}

// ParseFolded reads folded stacks, as flamegraph.pl's stackcollapse scripts
// and many profilers write them: one "root;...;leaf count" per line, in
// UTF-8 or (with a byte-order mark) UTF-16, with "#" and "//" comment lines.
// Lines that are not stacks are skipped and counted in the profile's
// warnings, as flamegraph.pl's "Ignored N lines". Counts may be decimal;
// then every value is the count × 1000 (unit "millicount").
func ParseFolded(data []byte, maxSamples int) (*profile.Profile, error) {
	type entry struct {
		stack string
		count float64
	}
	var entries []entry
	b := newBuilder(maxSamples)
	fractional := false
	err := eachLine(DecodeText(data), func(n int, s string) error {
		if foldedComment(s) {
			return nil
		}
		stack, c, ok := foldedLine(s)
		if !ok {
			b.badLine(n, s, "not \"frame;frame;... count\"")
			return nil
		}
		if c != math.Trunc(c) {
			fractional = true
		}
		entries = append(entries, entry{stack, c})
		return nil
	})
	if err != nil {
		return nil, err
	}
	scale := 1.0
	if fractional {
		scale = 1000
	}
	var frames []Frame
	for _, e := range entries {
		parts := strings.Split(e.stack, ";")
		frames = frames[:0]
		for i := len(parts) - 1; i >= 0; i-- {
			switch name := parts[i]; {
			case name == "":
			case strings.TrimSpace(name) == "":
				// stackcollapse-perf.pl folds perf's "addr  (dso)", a frame
				// with no symbol, into a blank name.
				frames = append(frames, Frame{Func: "[unknown]"})
			default:
				frames = append(frames, Frame{Func: name})
			}
		}
		if err := b.add("samples", frames, int64(math.Round(e.count*scale)), 0, "", -1, -1); err != nil {
			return nil, err
		}
	}
	p, err := b.finish("folded stacks")
	if err != nil {
		return nil, err
	}
	// Folded stacks carry one number per stack: the one count type.
	if fractional {
		p.SampleType[0].Unit = "millicount"
		p.Comments = append(p.Comments, fmt.Sprintf("folded counts have decimals: values are the counts × %.0f (unit millicount)", scale))
	}
	return p, nil
}
