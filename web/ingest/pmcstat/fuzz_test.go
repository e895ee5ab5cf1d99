package pmcstat

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzPmcstat checks that no input panics the reader or makes a profile
// pprof calls invalid.
func FuzzPmcstat(f *testing.F) {
	seeds, _ := filepath.Glob("../../../testdata/peers/speedscope-formats/sample/profiles/pmcstat/*.txt")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data), Options{MaxLineBytes: 1 << 16, MaxSamples: 1000, MaxStackDepth: 100})
		if err != nil {
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile: %v", err)
		}
	})
}
