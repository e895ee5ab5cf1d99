package ghcprof

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzGHCReport checks that no input panics the reader or makes a
// profile pprof calls invalid.
func FuzzGHCReport(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.prof"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b[:min(len(b), 8192)])
		}
	}
	f.Add([]byte("\tTime and Allocation Profiling Report  (Final)\n\ttotal time  =  0.01 secs   (10 ticks @ 1000 us, 1 processor)\n" +
		"\ttotal alloc =  1,000 bytes\n\nCOST CENTRE MODULE SRC no. entries %time %alloc %time %alloc\n\n" +
		"MAIN MAIN <built-in> 1 0 10.0 20.0 100.0 100.0\n f Main a.hs:3:1-9 2 1 90.0 80.0 90.0 80.0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data), Options{MaxSamples: 1000, MaxStackDepth: 100})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile: %v", err)
		}
	})
}
