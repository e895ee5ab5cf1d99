package flame

import (
	"strconv"
	"strings"
)

// FormatValue renders v in unit for people: nanoseconds as ns/µs/ms/s,
// bytes as B/KiB/MiB/GiB, counts as plain integers.
func FormatValue(v int64, unit string) string {
	neg := v < 0
	a := abs(v)
	var s string
	switch strings.ToLower(unit) {
	case "nanoseconds", "ns":
		s = scale(float64(a), []step{{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}}, "ns")
	case "microseconds", "us":
		s = scale(float64(a)*1e3, []step{{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}}, "ns")
	case "milliseconds", "ms":
		s = scale(float64(a)*1e6, []step{{1e9, "s"}, {1e6, "ms"}}, "ms")
	case "seconds", "s":
		s = strconv.FormatInt(a, 10) + "s"
	case "bytes", "b":
		s = scale(float64(a), []step{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}}, "B")
	case "count", "", "samples":
		s = strconv.FormatInt(a, 10)
	default:
		s = strconv.FormatInt(a, 10) + " " + unit
	}
	if neg {
		return "-" + s
	}
	return s
}

type step struct {
	div  float64
	name string
}

func scale(v float64, steps []step, base string) string {
	for _, st := range steps {
		if v >= st.div {
			return strconv.FormatFloat(v/st.div, 'f', 2, 64) + st.name
		}
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + base
}

// Percent renders part/whole as a percentage with two decimals.
func Percent(part, whole int64) string {
	if whole == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 2, 64) + "%"
}
