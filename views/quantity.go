package views

import "strings"

// Quantity is what values of a sample type measure, for a column's
// header: "CPU time" (cpu, perf's cpu-clock), "Wall time", "Time" (other
// durations), "Bytes", "Samples" (the samples count), else the type's
// own name. static/flame.js's quantity is its twin.
func Quantity(sampleType, unit string) string {
	t := strings.ToLower(sampleType)
	switch strings.ToLower(unit) {
	case "", "count":
		if t == "" || t == "samples" || t == "sample" {
			return "Samples"
		}
		return sampleType
	case "nanoseconds", "nanosecond", "ns", "microseconds", "microsecond", "us", "µs", "milliseconds", "millisecond", "ms", "seconds", "second", "s":
		switch {
		case strings.HasPrefix(t, "cpu"):
			return "CPU time"
		case t == "wall":
			return "Wall time"
		}
		return "Time"
	case "bytes", "byte", "b":
		return "Bytes"
	}
	if sampleType == "" {
		return "Value"
	}
	return sampleType
}
