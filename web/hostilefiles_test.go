package web

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteHostilePprofs writes the hostile table's pprof inputs to
// $VIEWER_HOSTILE_DIR, for ingest's TestMemoryEstimate to measure.
func TestWriteHostilePprofs(t *testing.T) {
	dir := os.Getenv("VIEWER_HOSTILE_DIR")
	if dir == "" {
		t.Skip("set VIEWER_HOSTILE_DIR to write the hostile pprof inputs there")
	}
	for name, b := range map[string][]byte{
		"deep-1m.pb.gz":        deepStack(t, 1_000_000),
		"deep-10m.pb.gz":       deepStack(t, 10_000_000),
		"locations-1.9m.pb.gz": manyLocations(t, 1_900_000),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
