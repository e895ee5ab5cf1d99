package perfdata

import (
	"os"
	"testing"
)

// BenchmarkConvert converts the recording VIEWER_PERFDATA names (a large
// system-wide one: perf record -e cpu-clock -F 20000 -a -g -- sleep 15),
// Scan and Convert, as an upload does.
func BenchmarkConvert(b *testing.B) {
	name := os.Getenv("VIEWER_PERFDATA")
	if name == "" {
		b.Skip("VIEWER_PERFDATA names no recording")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		f, err := Scan(data, Options{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := Convert(f, ConvertOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(p.Sample)), "samples")
	}
}
