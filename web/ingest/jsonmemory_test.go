package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"viewer/testdata/bench/v8gen"
	"viewer/web/heappeak"
)

// writeJSONProfiles writes large JSON profiles of each kind jsonprof reads
// into dir, n samples or events each, over a few hundred distinct stacks,
// and returns their paths.
func writeJSONProfiles(t testing.TB, dir string, n int) map[string]string {
	files := map[string]string{}
	write := func(name string, fn func(w *bufio.Writer)) {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		fn(w)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files[name] = path
	}
	const fanout, depth = 8, 4 // 8+64+512+4096 nodes below the root
	nodes := 1
	for d, k := 1, fanout; d <= depth; d, k = d+1, k*fanout {
		nodes += k
	}
	// A node's parent in the complete tree of fanout, root 1.
	parent := func(id int) int { return (id-2)/fanout + 1 }
	write("big.cpuprofile", func(w *bufio.Writer) {
		w.WriteString(`{"nodes":[`)
		for id := 1; id <= nodes; id++ {
			if id > 1 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"id":%d,"callFrame":{"functionName":"fn%d","scriptId":"1","url":"file:///app/src/module%d.js","lineNumber":%d,"columnNumber":4},"hitCount":1`, id, id, id%50, id)
			if id > 1 {
				fmt.Fprintf(w, `,"parent":%d`, parent(id))
			}
			w.WriteString("}")
		}
		w.WriteString(`],"startTime":1000,"endTime":99999999,"samples":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, "%d", nodes-(i*7919)%(nodes/2))
		}
		w.WriteString(`],"timeDeltas":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, "%d", 100+i%900)
		}
		w.WriteString("]}")
	})
	write("big.trace.json", func(w *bufio.Writer) {
		w.WriteString(`{"traceEvents":[{"pid":1,"tid":1,"ph":"M","name":"thread_name","args":{"name":"main"}}`)
		ts := 0
		for i := 0; i < n/2; i++ {
			fmt.Fprintf(w, `,{"pid":1,"tid":%d,"ph":"X","cat":"toplevel","name":"Task%d","ts":%d,"dur":%d,"args":{"src":"file%d.cc"}}`, 1+i%4, i%300, ts, 50, i%20)
			fmt.Fprintf(w, `,{"pid":1,"tid":%d,"ph":"X","cat":"toplevel","name":"Inner%d","ts":%d,"dur":%d}`, 1+i%4, i%50, ts+10, 20)
			ts += 60
		}
		w.WriteString("]}")
	})
	write("big.speedscope.json", func(w *bufio.Writer) {
		w.WriteString(`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[`)
		for i := 0; i < 400; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"name":"func_%d","file":"/usr/lib/python3/module%d.py","line":%d}`, i, i%40, i)
		}
		w.WriteString(`]},"profiles":[{"type":"sampled","name":"MainThread","unit":"seconds","startValue":0,"endValue":100,"samples":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, "[%d,%d,%d,%d,%d]", i%3, 3+i%7, 10+i%11, 30+i%13, 50+(i*31)%350)
		}
		w.WriteString(`],"weights":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			w.WriteString("0.01")
		}
		w.WriteString("]}]}")
	})
	write("big.firefox.json", func(w *bufio.Writer) {
		w.WriteString(`{"meta":{"version":27,"startTime":1700000000000,"interval":1},"libs":[],"threads":[{"name":"GeckoMain","pid":10,"tid":10,`)
		w.WriteString(`"stringTable":[`)
		for i := 0; i < 400; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `"fn%d (https://example.com/app/module%d.js:%d:%d)"`, i, i%40, i, i%80)
		}
		w.WriteString(`],"frameTable":{"schema":{"location":0,"relevantForJS":1,"implementation":2,"optimizations":3,"line":4,"column":5,"category":6},"data":[`)
		for i := 0; i < 400; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `[%d,false,null,null,%d,%d,1]`, i, i, i%80)
		}
		w.WriteString(`]},"stackTable":{"schema":{"prefix":0,"frame":1},"data":[`)
		const stacks = 5000
		for i := 0; i < stacks; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			if i < 8 {
				fmt.Fprintf(w, `[null,%d]`, i)
			} else {
				fmt.Fprintf(w, `[%d,%d]`, (i-8)/8, i%400)
			}
		}
		w.WriteString(`]},"samples":{"schema":{"stack":0,"time":1,"eventDelay":2},"data":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `[%d,%.3f,0.5]`, (i*7919)%stacks, float64(i)*1.01)
		}
		w.WriteString(`]},"markers":{"schema":{"name":0},"data":[]}}],"processes":[]}`)
	})
	return files
}

// TestJSONMemoryEstimate prints, for large JSON profiles of each kind
// jsonprof reads (VIEWER_JSON_MEMORY=N samples each), the peak heap of
// ParseFile against the file's size and what the budget takes for it.
// It fails when the estimate is under the peak. BENCHMARKS.md records its
// figures.
func TestJSONMemoryEstimate(t *testing.T) {
	n := 0
	fmt.Sscan(os.Getenv("VIEWER_JSON_MEMORY"), &n)
	if n == 0 {
		t.Skip("set VIEWER_JSON_MEMORY to the samples per input to measure")
	}
	files := writeJSONProfiles(t, t.TempDir(), n)
	for name, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		debug.FreeOSMemory()
		stop := heappeak.Watch()
		b := NewBudget(1<<40, time.Second)
		p, format, err := ParseFile(context.Background(), f, Limits{Memory: b})
		peak := stop()
		est := b.peak.Load()
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s (%s): %d bytes, %d samples kept; peak heap %.1f MiB = %.2f × the file; estimate %.1f MiB",
			name, format, st.Size(), len(p.Sample), float64(peak)/(1<<20), float64(peak)/float64(st.Size()), float64(est)/(1<<20))
		if int64(peak) > est {
			t.Errorf("%s: peak heap %d over the estimate %d", name, peak, est)
		}
	}
}

// TestJSONProfileWithinBudget reads large JSON profiles of each kind
// under a memory budget too small for their records: each is refused as
// too large, naming --ingest-memory, before its heap passes the budget
// by more than the decoder's scratch; under a budget that fits, each is
// read.
func TestJSONProfileWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 100k-sample JSON profiles of each format: make test runs it")
	}
	files := writeJSONProfiles(t, t.TempDir(), 100000)
	for name, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		small := NewBudget(jsonMemory(st.Size())+2<<20, time.Second)
		_, _, err = ParseFile(context.Background(), f, Limits{Memory: small})
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--ingest-memory") {
			t.Errorf("%s (%d bytes) under a %d-byte budget: %v; want it refused as too large, naming --ingest-memory", name, st.Size(), small.Size(), err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ParseFile(context.Background(), f, Limits{Memory: NewBudget(DefaultMemory, time.Second)}); err != nil {
			t.Errorf("%s under the default budget: %v", name, err)
		}
		f.Close()
	}
}

// TestBigTraceStreamsWithinBudget reads a 20 MB Chrome trace of
// ProfileChunk events (testdata/bench/v8gen) and a 1M-sample
// .cpuprofile as streams under a 256 MiB budget: each has every thread's
// samples, and its heap stays under what the read took from the budget
// (TestJSONFileMemory measures a 1 GB trace the same way).
func TestBigTraceStreamsWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 30 MB")
	}
	dir := t.TempDir()
	write := func(name string, fn func(*os.File) error) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return path
	}
	trace := write("trace.json", func(f *os.File) error {
		return v8gen.WriteChromeTrace(f, v8gen.TraceShape{Bytes: 20_000_000, Threads: 2, Nodes: 2000, ChunkSamples: 300, XPerChunk: 20, Seed: 1})
	})
	cpu := write("1m.cpuprofile", func(f *os.File) error { return v8gen.WriteCPUProfile(f, 1_000_000, 2000, 1) })
	for _, c := range []struct {
		path    string
		budget  int64
		threads int
	}{{trace, 256 << 20, 2}, {cpu, 256 << 20, 1}} {
		f, err := os.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		debug.FreeOSMemory()
		stop := heappeak.Watch()
		b := NewBudget(c.budget, time.Second)
		p, format, err := ParseFile(context.Background(), f, Limits{Memory: b})
		peak := stop()
		f.Close()
		if err != nil {
			t.Fatalf("%s (%d bytes) under a %d MiB budget: %v", c.path, st.Size(), c.budget>>20, err)
		}
		threads := map[int64]bool{}
		for _, s := range p.Sample {
			if tid := s.NumLabel["tid"]; len(tid) == 1 {
				threads[tid[0]] = true
			}
		}
		if len(threads) != c.threads && !(c.threads == 1 && len(threads) == 0) {
			t.Errorf("%s: samples of %d threads, want %d", format, len(threads), c.threads)
		}
		if int64(peak) > b.peak.Load() {
			t.Errorf("%s: peak heap %d MiB over the %d MiB the read took from the budget", format, peak>>20, b.peak.Load()>>20)
		}
		t.Logf("%s, %d MB: peak heap %d MiB, %d MiB taken of a %d MiB budget", format, st.Size()/1e6, peak>>20, b.peak.Load()>>20, c.budget>>20)
	}
}
