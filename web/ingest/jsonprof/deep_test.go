package jsonprof

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
)

// chain is a profile of n nested frames f0 (the root) … f(n-1), in one
// of the formats whose stacks are a trie of nodes: a speedscope evented
// profile that opens them all, then closes them; a trace of as many B
// events, then as many unnamed E events (which close the innermost
// open B); a V8 .cpuprofile chain with a sample on each node. Each depth
// 1…n is one distinct stack of the profile.
func chain(format string, n int) []byte {
	var b strings.Builder
	switch format {
	case "speedscope":
		b.WriteString(`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[`)
		for i := range n {
			fmt.Fprintf(&b, `%s{"name":"f%d"}`, comma(i), i)
		}
		fmt.Fprintf(&b, `]},"profiles":[{"type":"evented","name":"x","unit":"none","startValue":0,"endValue":%d,"events":[`, 2*n)
		for i := range n {
			fmt.Fprintf(&b, `%s{"type":"O","frame":%d,"at":%d}`, comma(i), i, i)
		}
		for i := range n {
			fmt.Fprintf(&b, `,{"type":"C","frame":%d,"at":%d}`, n-1-i, n+i)
		}
		b.WriteString(`]}]}`)
	case "trace":
		b.WriteString(`{"traceEvents":[`)
		for i := range n {
			fmt.Fprintf(&b, `%s{"ph":"B","name":"f%d","ts":%d,"pid":1,"tid":1}`, comma(i), i, i)
		}
		for i := range n {
			fmt.Fprintf(&b, `,{"ph":"E","ts":%d,"pid":1,"tid":1}`, n+i)
		}
		b.WriteString(`]}`)
	case "cpuprofile":
		b.WriteString(`{"nodes":[`)
		for i := range n {
			children := ""
			if i+1 < n {
				children = fmt.Sprint(i + 2)
			}
			fmt.Fprintf(&b, `%s{"id":%d,"callFrame":{"functionName":"f%d","scriptId":"0","url":"","lineNumber":0,"columnNumber":0},"children":[%s]}`, comma(i), i+1, i, children)
		}
		b.WriteString(`],"startTime":0,"samples":[`)
		// The last sample weighs nothing: the deepest node has two.
		for i := range n {
			fmt.Fprintf(&b, "%s%d", comma(i), i+1)
		}
		fmt.Fprintf(&b, ",%d", n)
		b.WriteString(`],"timeDeltas":[`)
		for i := range n + 1 {
			fmt.Fprintf(&b, "%s1", comma(i))
		}
		b.WriteString(`]}`)
	}
	return []byte(b.String())
}

func comma(i int) string {
	if i == 0 {
		return ""
	}
	return ","
}

// parseChain reads chain(format, n).
func parseChain(format string, n int, opt Options) (*profile.Profile, error) {
	data := chain(format, n)
	switch format {
	case "speedscope":
		return ParseSpeedscope(data, opt)
	case "trace":
		return ParseTraceEvents(data, opt)
	}
	return ParseCPUProfile(data, opt)
}

var chainFormats = []string{"speedscope", "trace", "cpuprofile"}

// TestDeepStacksCut reads 3,000 nested frames of each format under a
// 100-frame depth limit: every stack deeper keeps its 99 leaf-most frames
// under "[truncated N frames]" (N the frames cut), as ingest cuts every
// format's stacks, and the profile's warning counts them; the memory the
// read takes covers the frames its stacks hold.
func TestDeepStacksCut(t *testing.T) {
	const n, depth = 3000, 100
	for _, format := range chainFormats {
		var reserved int64
		p, err := parseChain(format, n, Options{MaxStackDepth: depth, Reserve: func(m int64) error { reserved += m; return nil }})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		frames := 0
		cutStacks := map[int]bool{} // by depth: one stack of each
		slices := map[**profile.Location]bool{}
		depths := map[int]bool{}
		for _, s := range p.Sample {
			if len(s.Location) > depth {
				t.Fatalf("%s: a stack of %d frames, over the %d-frame limit", format, len(s.Location), depth)
			}
			if !slices[&s.Location[0]] {
				slices[&s.Location[0]] = true
				frames += len(s.Location)
			}
			leaf := s.Location[0].Line[0].Function.Name
			var d int
			fmt.Sscanf(leaf, "f%d", &d)
			d++ // the stack's depth
			depths[d] = true
			root := s.Location[len(s.Location)-1].Line[0].Function.Name
			if d <= depth {
				if len(s.Location) != d || root != "f0" {
					t.Errorf("%s: the stack of %s has %d frames from %s, want %d from f0", format, leaf, len(s.Location), root, d)
				}
				continue
			}
			cutStacks[d] = true
			if want := sampling.TruncatedName(d - (depth - 1)); len(s.Location) != depth || root != want {
				t.Errorf("%s: the stack of %s has %d frames under %q, want %d under %q", format, leaf, len(s.Location), root, depth, want)
			}
		}
		if len(depths) != n {
			t.Errorf("%s: %d stacks of distinct depths, want %d", format, len(depths), n)
		}
		// Distinct stacks, however many sample records each has.
		if want := sampling.DeepStacksWarning(len(cutStacks), depth, n); !strings.Contains(strings.Join(p.Comments, "\n"), want) {
			t.Errorf("%s: comments %q, want %q", format, p.Comments, want)
		}
		if reserved < int64(frames)*frameMemory {
			t.Errorf("%s: the read took %d bytes for stacks of %d frames (%d bytes of pointers)", format, reserved, frames, frames*frameMemory)
		}
	}
}

// TestDeepStacksOverMaxFrames reads 6,000 nested frames of each format,
// 18M frames in their stacks together, under a 1M-frame limit: the read
// is refused naming --max-frames, having allocated about what its input
// and nodes take, not the stacks (18M location pointers: 144 MB).
func TestDeepStacksOverMaxFrames(t *testing.T) {
	const n = 6000
	for _, format := range chainFormats {
		data := chain(format, n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := parseChain(format, n, Options{MaxFrames: 1_000_000})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrLimit) || !strings.Contains(fmt.Sprint(err), "--max-frames") {
			t.Errorf("%s: %v; want an error naming --max-frames", format, err)
		}
		// chain builds its input again: twice the input, and 32 MB for
		// the read's tables and garbage.
		if got, most := after.TotalAlloc-before.TotalAlloc, uint64(2*len(data)+32<<20); got > most {
			t.Errorf("%s: the refused read of %d bytes allocated %d MB, over %d MB", format, len(data), got>>20, most>>20)
		}
	}
}

// TestReadStopsWhenCancelled reads a deep profile of each format with a
// cancelled context, as when the client has left: the read stops with
// the context's error.
func TestReadStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, format := range chainFormats {
		if _, err := parseChain(format, 3000, Options{Context: ctx}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want %v", format, err, context.Canceled)
		}
	}
}

// TestTrieMemoryTaken reads a speedscope evented profile that opens one
// frame 200,000 times at one time: a single sample, but 200,000 stacks in
// the reader's trie, whose memory the read takes as they are made.
func TestTrieMemoryTaken(t *testing.T) {
	const n = 200000
	var b strings.Builder
	b.WriteString(`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"evented","name":"x","unit":"none","startValue":0,"endValue":1,"events":[`)
	for i := range n {
		fmt.Fprintf(&b, `%s{"type":"O","frame":0,"at":0}`, comma(i))
	}
	for range n {
		b.WriteString(`,{"type":"C","frame":0,"at":1}`)
	}
	b.WriteString(`]}]}`)
	var reserved int64
	p, err := ParseSpeedscope([]byte(b.String()), Options{MaxStackDepth: 100, Reserve: func(m int64) error { reserved += m; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 1 {
		t.Errorf("%d samples, want 1", len(p.Sample))
	}
	if reserved < n*trieMemory {
		t.Errorf("the read took %d bytes for a trie of %d stacks, under %d a stack", reserved, n, trieMemory)
	}
}
