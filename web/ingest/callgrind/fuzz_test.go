package callgrind

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCallgrind checks that no input panics the reader or makes a profile
// pprof calls invalid.
func FuzzCallgrind(f *testing.F) {
	seeds, _ := filepath.Glob("../../../testdata/peers/speedscope-formats/sample/profiles/callgrind/*.log")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("events: Ir Dr\npositions: instr line\nfn=(1) a\n0x10 3 5 6\ncfn=(1)\ncalls=2 0x10 3\n+2 * 4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data), Options{MaxLineBytes: 1 << 16, MaxSamples: 1000})
		if err != nil {
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile: %v", err)
		}
	})
}
