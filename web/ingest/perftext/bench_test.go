package perftext

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseScriptPeer reads FlameGraph's largest perf script input
// (1 MB of Java stacks, no time column): go test -bench ParseScriptPeer ./web/ingest/perftext.
func BenchmarkParseScriptPeer(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(peers, "flamegraph", "perf-vertx-stacks-01.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseScript(data, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseFoldedPeer reads speedscope's folded version of the same
// recording (264 KB).
func BenchmarkParseFoldedPeer(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(peers, "speedscope", "stackcollapse-perf-vertx-stacks-01-collapsed-all.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseFolded(data, 0); err != nil {
			b.Fatal(err)
		}
	}
}
