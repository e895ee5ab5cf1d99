package main

import (
	"os"
	"path/filepath"
	"testing"

	"viewer/web/ingest"
)

// TestStackDepthDefaultsToPerfs checks --max-stack-depth's default is never
// below the frames perf keeps on the machine (kernel.perf_event_max_stack,
// which can be raised to 655360): a sysctl above ingest's default raises
// it, one below or unreadable leaves it.
func TestStackDepthDefaultsToPerfs(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		sysctl string
		want   int
	}{
		{"10000\n", 10000},
		{"127\n", ingest.DefaultMaxStackDepth},
		{"", ingest.DefaultMaxStackDepth},
	} {
		file := filepath.Join(dir, "perf_event_max_stack")
		if err := os.WriteFile(file, []byte(tc.sysctl), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := defaultStackDepth(file); got != tc.want {
			t.Errorf("kernel.perf_event_max_stack %q: default depth %d, want %d", tc.sysctl, got, tc.want)
		}
	}
	if got := defaultStackDepth(filepath.Join(dir, "none")); got != ingest.DefaultMaxStackDepth {
		t.Errorf("no sysctl: default depth %d, want %d", got, ingest.DefaultMaxStackDepth)
	}
}
