package views

import (
	"math"
	"strconv"
	"strings"
)

// This file is viewer's one number formatter: every page, the flame graph
// SVG and the CLI call it, and static/flame.js's formatValue and formatPct
// are its JavaScript twins (web/units_browser_test.go checks they agree on
// one table). It lives in views because views imports no project package,
// so web, web/flame and cmd may all import it.
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

// pow10 are the scales for 0, 1 and 2 decimals.
var pow10 = [...]uint64{1, 10, 100}

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
