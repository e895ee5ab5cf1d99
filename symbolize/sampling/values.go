package sampling

import (
	"math"
	"strconv"
	"strings"
)

// This file is viewer's one number formatter: every page, the flame graph
// SVG and the CLI call it, and static/flame.js's formatValue and formatPct
// are its JavaScript twins (web/browsertest/units_browser_plain_test.go checks they agree on
// one table). It lives in this leaf so web, web/flame, the format readers,
// symbolize and cmd may all import it.
//
// The rules: a value is scaled to the largest unit it reaches and shown
// with three significant digits (1.50 ms, 15.0 ms, 150 ms), rounded half
// up on the integer value, so both languages round alike; a value that
// rounds up to the next unit is shown in it (999.96 µs is 1.00 ms, never
// 1000 µs). Durations from 2 min are whole minutes and seconds, and from
// 120 min hours with one decimal. Counts are exact, with thousands
// separators, as perf and pprof print them.

// FormatValue renders v, in the pprof sample-type unit unit, for people:
// time units as ns/µs/ms/s/min/h, bytes as B/KiB/MiB/GiB/TiB, count as a
// plain number and any other unit as "N unit".
func FormatValue(v int64, unit string) string {
	a := uint64(v)
	if v < 0 {
		a = -a // two's complement: right for math.MinInt64 too
	}
	var s string
	switch strings.ToLower(unit) {
	case "nanoseconds", "nanosecond", "ns":
		s = formatNanos(a)
	case "microseconds", "microsecond", "us", "µs":
		s = formatNanos(mulSat(a, 1e3))
	case "milliseconds", "millisecond", "ms":
		s = formatNanos(mulSat(a, 1e6))
	case "seconds", "second", "s":
		s = formatNanos(mulSat(a, 1e9))
	case "bytes", "byte", "b":
		s, _ = scaled(a, byteSteps)
	case "count", "":
		s = group(strconv.FormatUint(a, 10))
	default:
		s = group(strconv.FormatUint(a, 10)) + " " + unit
	}
	if v < 0 {
		return "-" + s
	}
	return s
}

// FormatCount renders n exactly with thousands separators ("3,864").
func FormatCount(n int64) string { return FormatValue(n, "count") }

// Percent renders part/whole as a percentage with two decimals, rounded
// half away from zero like JavaScript's toFixed in formatPct.
func Percent(part, whole int64) string {
	if whole == 0 {
		return "0%"
	}
	neg := (part < 0) != (whole < 0)
	p, w := uint64(part), uint64(whole)
	if part < 0 {
		p = -p
	}
	if whole < 0 {
		w = -w
	}
	var s string
	if p < math.MaxUint64/20000 && w < math.MaxUint64/2 {
		r := roundDiv(p*10000, w)
		s = fixed(r, 2) + "%"
	} else {
		s = strconv.FormatFloat(100*float64(p)/float64(w), 'f', 2, 64) + "%"
	}
	if neg {
		return "-" + s
	}
	return s
}

// step is one unit of a scale: div base units, shown as name, until the
// value reaches limit of it (0: no limit).
type step struct {
	div   uint64
	limit uint64
	name  string
}

var (
	timeSteps = []step{{1, 1000, "ns"}, {1e3, 1000, "µs"}, {1e6, 1000, "ms"}, {1e9, 120, "s"}}
	byteSteps = []step{{1, 1024, "B"}, {1 << 10, 1024, "KiB"}, {1 << 20, 1024, "MiB"}, {1 << 30, 1024, "GiB"}, {1 << 40, 0, "TiB"}}
)

// pow10 are the scales for 0 to 3 decimals.
var pow10 = [...]uint64{1, 10, 100, 1000}

// scaled renders a (base units) in the largest step it reaches with three
// significant digits; over is true when a passes the last step's limit.
func scaled(a uint64, steps []step) (s string, over bool) {
	i := 0
	for i+1 < len(steps) && a >= steps[i+1].div {
		i++
	}
	for {
		st := steps[i]
		r, d := a, 0
		if st.div > 1 {
			switch q := a / st.div; {
			case q >= 100:
				d = 0
			case q >= 10:
				d = 1
			default:
				d = 2
			}
			r = roundDiv(a*pow10[d], st.div) // a < 100·div here when d > 0: no overflow
			for d > 0 && r >= 1000 {         // 9.996 → 10.0, 99.96 → 100
				d--
				r = roundDiv(a*pow10[d], st.div)
			}
		}
		if st.limit > 0 && r >= st.limit*pow10[d] {
			if i+1 == len(steps) {
				return "", true
			}
			i++
			continue
		}
		return fixed(r, d) + " " + st.name, false
	}
}

// formatNanos renders a duration of ns nanoseconds.
func formatNanos(ns uint64) string {
	if s, over := scaled(ns, timeSteps); !over {
		return s
	}
	sec := roundDiv(ns, 1e9)
	if m := sec / 60; m < 120 {
		return strconv.FormatUint(m, 10) + " min " + strconv.FormatUint(sec%60, 10) + " s"
	}
	return fixed(roundDiv(ns, 3600e8), 1) + " h" // tenths of an hour
}

// roundDiv is x/d rounded half up.
func roundDiv(x, d uint64) uint64 {
	q, r := x/d, x%d
	if r >= d-r {
		q++
	}
	return q
}

// mulSat is a·k, saturating at the largest uint64.
func mulSat(a, k uint64) uint64 {
	if a > math.MaxUint64/k {
		return math.MaxUint64
	}
	return a * k
}

// fixed renders r/10^d with d decimals and a grouped integer part.
func fixed(r uint64, d int) string {
	s := group(strconv.FormatUint(r/pow10[d], 10))
	if d == 0 {
		return s
	}
	f := strconv.FormatUint(r%pow10[d]+pow10[d], 10)[1:] // zero-padded
	return s + "." + f
}

// group inserts thousands separators into a string of digits.
func group(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	lead := len(digits) % 3
	if lead == 0 {
		lead = 3
	}
	b.WriteString(digits[:lead])
	for i := lead; i < len(digits); i += 3 {
		b.WriteByte(',')
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// Column is the one unit a column of values is written in, as pprof
// writes a report in one unit: the largest unit no value of the column
// is below 1/1000 of (so its smallest value still shows, to three
// decimals) and its largest value reaches, for time (ns, µs, ms, s) and
// bytes (B, KiB, MiB, GiB, TiB); counts and other units as FormatValue
// writes them. static/flame.js's columnUnit and formatIn are its twins.
type Column struct {
	unit string // the values' pprof unit
	mul  uint64 // base units (ns, bytes) per value unit; 0: not scaled
	st   step   // the column's unit
}

// ColumnOf is the unit of a column of values in the pprof unit unit.
func ColumnOf(unit string, values ...int64) Column {
	c := Column{unit: unit}
	var steps []step
	switch strings.ToLower(unit) {
	case "nanoseconds", "nanosecond", "ns":
		c.mul, steps = 1, timeSteps
	case "microseconds", "microsecond", "us", "µs":
		c.mul, steps = 1e3, timeSteps
	case "milliseconds", "millisecond", "ms":
		c.mul, steps = 1e6, timeSteps
	case "seconds", "second", "s":
		c.mul, steps = 1e9, timeSteps
	case "bytes", "byte", "b":
		c.mul, steps = 1, byteSteps
	default:
		return c
	}
	var lo, hi uint64
	for _, v := range values {
		a := mulSat(abs(v), c.mul)
		if a == 0 {
			continue
		}
		if lo == 0 || a < lo {
			lo = a
		}
		hi = max(hi, a)
	}
	c.st = steps[0]
	for _, s := range steps[1:] {
		if s.div <= hi && s.div <= mulSat(lo, 1000) {
			c.st = s
		}
	}
	return c
}

// Unit is the column's unit ("ms", "MiB"), "" for counts and other units.
func (c Column) Unit() string { return c.st.name }

// Format writes v in the column's unit: three significant digits from 1
// (1.50 ms, 15.0 ms, 1,500 ms), three decimals below it (0.038 s), ns and
// bytes whole (35 ns), 0 as "0".
func (c Column) Format(v int64) string {
	if c.mul == 0 {
		return FormatValue(v, c.unit)
	}
	if v == 0 {
		return "0"
	}
	a := mulSat(abs(v), c.mul)
	d := 3
	switch q := a / c.st.div; {
	case c.st.div == 1: // ns and B are whole
		d = 0
	case q >= 100:
		d = 0
	case q >= 10:
		d = 1
	case q >= 1:
		d = 2
	}
	var s string
	if a <= math.MaxUint64/1000 {
		r := roundDiv(a*pow10[d], c.st.div)
		for d > 0 && r >= 1000 { // 9.996 → 10.0, 0.9996 → 1.00
			d--
			r = roundDiv(a*pow10[d], c.st.div)
		}
		s = fixed(r, d)
	} else {
		s = group(strconv.FormatFloat(float64(a)/float64(c.st.div), 'f', 0, 64))
	}
	if v < 0 {
		s = "-" + s
	}
	return s + " " + c.st.name
}

func abs(v int64) uint64 {
	if v < 0 {
		return -uint64(v)
	}
	return uint64(v)
}
