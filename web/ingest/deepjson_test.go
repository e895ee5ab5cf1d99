package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"viewer/symbolize/sampling"
)

// evented writes a speedscope evented profile of n nested frames (n
// opens, then n closes: n distinct stacks, of depths 1 to n) to dir.
func evented(t *testing.T, dir string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"evented","name":"x","unit":"none","startValue":0,"endValue":%d,"events":[`, 2*n)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"O","frame":0,"at":%d}`, i)
	}
	for i := range n {
		fmt.Fprintf(&b, `,{"type":"C","frame":0,"at":%d}`, n+i)
	}
	b.WriteString(`]}]}`)
	path := filepath.Join(dir, fmt.Sprintf("evented%d.json", n))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDeepJSONStacks uploads speedscope evented profiles of nested
// frames under the default limits, as the hostile-client check did. 30,000
// (2 MB; 450M frames whole, 114M as the depth limit keeps them) is
// refused naming --max-frames. 10,000 (670 KB) is read with every stack
// deeper than --max-stack-depth cut to its leaf-most frames under a
// "[truncated N frames]" frame, one warning counting them, and the
// memory of its stacks' 32.6M frames taken from --ingest-memory.
func TestDeepJSONStacks(t *testing.T) {
	dir := t.TempDir()
	lim := Limits{MaxFrames: DefaultMaxFrames, MaxStackDepth: DefaultMaxStackDepth, MaxSamples: DefaultMaxSamples}
	f, err := os.Open(evented(t, dir, 30000))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lim.Memory = NewBudget(DefaultMemory, time.Second)
	if _, _, err := ParseFile(context.Background(), f, lim); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-frames") {
		t.Errorf("30,000 nested frames: %v; want refused naming --max-frames", err)
	}

	f, err = os.Open(evented(t, dir, 10000))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lim.Memory = NewBudget(DefaultMemory, time.Second)
	p, _, err := ParseFile(context.Background(), f, lim)
	if err != nil {
		t.Fatalf("10,000 nested frames: %v", err)
	}
	cut, frames := 0, 0
	for _, s := range p.Sample {
		frames += len(s.Location)
		if len(s.Location) > DefaultMaxStackDepth {
			t.Fatalf("a stack of %d frames, over the %d-frame limit", len(s.Location), DefaultMaxStackDepth)
		}
		if strings.HasPrefix(s.Location[len(s.Location)-1].Line[0].Function.Name, "[truncated ") {
			cut++
		}
	}
	deep := 0
	for _, w := range sampling.Warnings(p) {
		if strings.Contains(w, "stacks were deeper than") {
			deep++
		}
	}
	if cut != 10000-DefaultMaxStackDepth || deep != 1 {
		t.Errorf("%d stacks cut, %d warnings of it (%q); want %d, one", cut, deep, sampling.Warnings(p), 10000-DefaultMaxStackDepth)
	}
	if peak := lim.Memory.peak.Load(); peak < int64(frames)*8 {
		t.Errorf("the read took %d MiB of --ingest-memory for stacks of %d frames (%d MiB of pointers)", peak>>20, frames, frames*8>>20)
	}
}
