package papyrus

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzPapyrus checks that no input panics the reader or makes a profile
// pprof calls invalid.
func FuzzPapyrus(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(corpus, "*.log"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("Script_a log opened (PC)\n1:PUSH:7:1:None:a..f\n3:PUSH:8:1:None:a..g\n3:POP:8:1:None:a..g\n9:POP:7:1:None:a..f\nLog closed\n"))
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
