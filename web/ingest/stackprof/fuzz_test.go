package stackprof

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzStackprof checks that no input panics the reader or makes a
// profile pprof calls invalid.
func FuzzStackprof(f *testing.F) {
	seeds, _ := filepath.Glob("../../../testdata/peers/speedscope-formats/sample/profiles/stackprof/*.json")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"version":1.2,"mode":"wall","interval":1000,"frames":{"1":{"name":"a"}},"raw":[1,1,3],"raw_timestamp_deltas":[5,6,7]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, Options{MaxSamples: 1000})
		if err != nil {
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile: %v", err)
		}
	})
}
