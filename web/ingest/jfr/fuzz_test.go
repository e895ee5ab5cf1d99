package jfr

import (
	"testing"
)

// FuzzJFR checks that no input panics the reader, makes it allocate past
// what its bytes can hold, or yields a profile pprof calls invalid. Its
// seeds are small recordings written by the test (testRecording: 2 to
// 5 KB, every kind of event read, both integer encodings): a JDK's
// recording (testdata's heavy.jfr, 355 KB, read by the speedscope corpus
// test) took a tenth of a second an execution. Inputs over 64 KiB are
// passed over: the reader does nothing with a large one that it does not
// with a small one (every count is checked against the bytes left), and
// the fuzz cache keeps the 853 KB inputs grown from heavy.jfr, on which
// 10 minutes made 5,600 executions.
func FuzzJFR(f *testing.F) {
	two := testRecording(true, 2)
	f.Add(two)
	f.Add(two[:len(two)*3/4]) // the second chunk cut short
	f.Add(two[:len(two)/2-5]) // the first one's last event cut short
	f.Add(testRecording(false, 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		p, err := Parse(data, Options{MaxSamples: 10000})
		if err != nil {
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile: %v", err)
		}
	})
}
