package jfr

import (
	"testing"
)

// FuzzJFR checks that no input panics the reader, makes it allocate past
// what its bytes can hold, or yields a profile pprof calls invalid. Its
// seeds are small recordings written by the test (testRecording: 2 to
// 5 KB, every kind of event read, both integer encodings): a JDK's
// recording (testdata's heavy.jfr, 355 KB, read by the speedscope corpus
// test) took a tenth of a second an execution.
func FuzzJFR(f *testing.F) {
	two := testRecording(true, 2)
	f.Add(two)
	f.Add(two[:len(two)*3/4]) // the second chunk cut short
	f.Add(two[:len(two)/2-5]) // the first one's last event cut short
	f.Add(testRecording(false, 1))
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
