package jfr

import (
	"os"
	"testing"
)

// FuzzJFR checks that no input panics the reader, makes it allocate past
// what its bytes can hold, or yields a profile pprof calls invalid.
func FuzzJFR(f *testing.F) {
	if b, err := os.ReadFile("../../../testdata/peers/speedscope-formats/sample/profiles/java-flight-recorder/heavy.jfr"); err == nil {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, Options{MaxSamples: 10000})
		if err != nil {
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile: %v", err)
		}
	})
}
