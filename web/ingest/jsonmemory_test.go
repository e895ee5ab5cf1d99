package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

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
	write("big.ghc.prof", func(w *bufio.Writer) {
		// A cost-centre tree of n/4 nodes, fanout 10, over 500 cost
		// centres: GHC's profile has no samples, a tick and alloc sum
		// per node.
		w.WriteString(`{"program":"big","arguments":["big"],"rts_arguments":["-pj"],"end_time":"Thu Jan 1 00:00 1970","initial_capabilities":1,"total_time":1.0,"total_ticks":1000,"tick_interval":1000,"total_alloc":1,"cost_centres":[`)
		for i := 1; i <= 500; i++ {
			if i > 1 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"id":%d,"label":"fn%d","module":"Module%d","src_loc":"src/Module%d.hs:(%d,1)-(%d,20)","is_caf":false}`, i, i, i%40, i%40, i, i+3)
		}
		w.WriteString(`],"profile":`)
		nodes := max(n/4, 1)
		var node func(id, depth int)
		count := 0
		node = func(id, depth int) {
			count++
			fmt.Fprintf(w, `{"id":%d,"entries":%d,"alloc":%d,"ticks":%d,"children":[`, 1+(count*7919)%500, count, 64*(count%13), count%7)
			if depth < 6 {
				for c := 0; c < 10 && count < nodes; c++ {
					if c > 0 {
						w.WriteString(",")
					}
					node(count, depth+1)
				}
			}
			w.WriteString("]}")
		}
		node(1, 0)
		w.WriteString("}")
	})
	write("big.heapprofile", func(w *bufio.Writer) {
		// A V8 heap-sampling tree of n/4 nodes, fanout 10, over 400
		// functions, each with the bytes allocated on its stack.
		nodes := max(n/4, 1)
		count := 0
		var node func(depth int)
		node = func(depth int) {
			count++
			f := count % 400
			fmt.Fprintf(w, `{"callFrame":{"functionName":"fn%d","scriptId":"%d","url":"https://example.com/app/module%d.js","lineNumber":%d,"columnNumber":%d},"selfSize":%d,"id":%d,"children":[`, f, f%40, f%40, f, f%80, 64*(count%13), count)
			if depth < 6 {
				for c := 0; c < 10 && count < nodes; c++ {
					if c > 0 {
						w.WriteString(",")
					}
					node(depth + 1)
				}
			}
			w.WriteString("]}")
		}
		w.WriteString(`{"head":`)
		node(0)
		w.WriteString(`,"samples":[]}`)
	})
	write("big.v8log.json", func(w *bufio.Writer) {
		// node --prof-process --preprocess: 500 code objects and n ticks
		// of stacks 4 deep, in time order but for every tenth.
		w.WriteString(`{"code":[`)
		for i := 0; i < 500; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"name":"fn%d https://example.com/app/module%d.js:%d:%d","type":"JS","kind":"Opt"}`, i, i%40, i, i%80)
		}
		w.WriteString(`],"ticks":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			tm := i
			if i%10 == 9 {
				tm = i - 5
			}
			fmt.Fprintf(w, `{"tm":%d,"vm":0,"s":[%d,0,%d,0,%d,0,%d,0]}`, tm*1000, 50+(i*31)%450, 30+i%13, 10+i%11, i%3)
		}
		w.WriteString("]}")
	})
	write("big.safari.json", func(w *bufio.Writer) {
		// n/4 samples of stacks 4 deep over 400 functions, their
		// durations after them as Safari writes them.
		samples := max(n/4, 1)
		w.WriteString(`{"version":1,"recording":{"displayName":"Recording 1","startTime":1,"endTime":1000,"discontinuities":[],"instrumentTypes":["timeline-record-type-script"],"records":[],"markers":[],"memoryPressureEvents":[],"sampleStackTraces":[`)
		for i := 0; i < samples; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"timestamp":%.6f,"stackFrames":[`, 1+float64(i)*0.001)
			for k, f := range []int{50 + (i*31)%350, 30 + i%13, 10 + i%11, i % 3} {
				if k > 0 {
					w.WriteString(",")
				}
				fmt.Fprintf(w, `{"sourceID":"%d","name":"fn%d","line":%d,"column":%d,"url":"https://example.com/app/module%d.js"}`, f%40, f, f, f%80, f%40)
			}
			w.WriteString("]}")
		}
		w.WriteString(`],"sampleDurations":[`)
		for i := 0; i < samples; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			w.WriteString("0.001")
		}
		w.WriteString("]}}")
	})
	return files
}

// TestJSONMemoryEstimate prints, for large JSON profiles of each kind
// jsonprof reads (VIEWER_JSON_MEMORY=N samples each; a GHC profile of N/4
// nodes, a Safari recording of N/4 samples), the peak heap of ParseFile
// against the file's size, the profile it reads (the heap it holds once
// the read's garbage is collected) and what the budget takes for it.
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
		base := heapObjects()
		stop := heappeak.Watch()
		b := NewBudget(1<<40, time.Second)
		c0 := cpuTime()
		p, format, err := ParseFile(context.Background(), f, Limits{Memory: b})
		cpu := cpuTime() - c0
		peak := stop()
		est := b.peak.Load()
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// What the profile read holds, once the read's garbage is gone.
		kept := max(int64(heapObjects())-int64(base), 1)
		runtime.KeepAlive(p)
		t.Logf("%s (%s): %d bytes, %d samples kept in %.2f CPU s; peak heap %.1f MiB = %.2f × the file = %.2f × the profile read (%.1f MiB); estimate %.1f MiB",
			name, format, st.Size(), len(p.Sample), cpu.Seconds(), float64(peak)/(1<<20), float64(peak)/float64(st.Size()), float64(peak)/float64(kept), float64(kept)/(1<<20), float64(est)/(1<<20))
		if int64(peak) > est {
			t.Errorf("%s: peak heap %d over the estimate %d", name, peak, est)
		}
	}
}

// cpuTime is the CPU time the process has used, user and system: what
// a read costs, whatever the load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapObjects is the heap's live objects after a collection.
func heapObjects() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
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

// writeWideJSONProfiles writes JSON profiles whose text is mostly what
// the profile does not keep, about size bytes each, into dir: a
// speedscope evented profile in no unit (its events sum into a few
// stacks, without times), a Firefox profile whose markers fill it beside
// a thousand samples, and a Safari recording whose timeline records do.
func writeWideJSONProfiles(t testing.TB, dir string, size int) map[string]string {
	files := map[string]string{}
	write := func(name string, fn func(w *bufio.Writer, written func() int)) {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		cw := &countingWriter{w: f}
		w := bufio.NewWriterSize(cw, 1<<20)
		fn(w, func() int { return cw.n + w.Buffered() })
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files[name] = path
	}
	write("wide.speedscope.json", func(w *bufio.Writer, written func() int) {
		w.WriteString(`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[`)
		for i := range 20 {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"name":"func_%d","file":"/usr/lib/ruby/module%d.rb","line":%d}`, i, i, i)
		}
		w.WriteString(`]},"profiles":[{"type":"evented","name":"main","unit":"none","startValue":0,"endValue":1,"events":[`)
		at := 0
		for i := 0; written() < size; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			// Open 0..4, close them: five stacks over and over.
			for k := range 5 {
				fmt.Fprintf(w, `{"type":"O","frame":%d,"at":%d},`, (i+k)%20, at)
				at++
			}
			for k := 4; k >= 0; k-- {
				fmt.Fprintf(w, `{"type":"C","frame":%d,"at":%d}`, (i+k)%20, at)
				if k > 0 {
					w.WriteString(",")
				}
				at++
			}
		}
		fmt.Fprintf(w, `],"endValue":%d}]}`, at)
	})
	write("wide.firefox.json", func(w *bufio.Writer, written func() int) {
		w.WriteString(`{"meta":{"version":27,"startTime":1700000000000,"interval":1},"libs":[],"threads":[{"name":"GeckoMain","pid":10,"tid":10,`)
		w.WriteString(`"samples":{"schema":{"stack":0,"time":1,"eventDelay":2},"data":[`)
		for i := range 1000 {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `[%d,%d,0.5]`, i%4, i)
		}
		w.WriteString(`]},"markers":{"schema":{"name":0,"startTime":1,"endTime":2,"phase":3,"category":4,"data":5},"data":[`)
		for i := 0; written() < size; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `[%d,%d.5,null,0,1,{"type":"DOMEvent","eventType":"mousemove","innerWindowID":%d}]`, i%4, i, i)
		}
		w.WriteString(`]},"stackTable":{"schema":{"prefix":0,"frame":1},"data":[[null,0],[0,1],[1,2],[0,3]]},`)
		w.WriteString(`"frameTable":{"schema":{"location":0},"data":[[0],[1],[2],[3]]},`)
		w.WriteString(`"stringTable":["main (https://example.com/a.js:1:1)","f (https://example.com/a.js:5:1)","g (https://example.com/b.js:9:3)","h (https://example.com/c.js:2:7)","DOMEvent"]}],"processes":[]}`)
	})
	write("wide.safari.json", func(w *bufio.Writer, written func() int) {
		w.WriteString(`{"version":1,"recording":{"displayName":"Recording 1","startTime":1,"endTime":1000,"instrumentTypes":["timeline-record-type-script"],"records":[`)
		for i := 0; written() < size; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"type":"timeline-record-type-layout","eventType":"paint","startTime":%d.25,"endTime":%d.5,"quad":[0,0,100,0,100,100,0,100]}`, i, i)
		}
		w.WriteString(`],"markers":[],"sampleStackTraces":[`)
		for i := range 1000 {
			if i > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"timestamp":%d.001,"stackFrames":[{"name":"f%d","url":"https://example.com/a.js","line":%d,"column":1},{"name":"main","url":"https://example.com/a.js","line":1,"column":1}]}`, 1+i, i%4, i%4)
		}
		w.WriteString(`],"sampleDurations":[`)
		for i := range 1000 {
			if i > 0 {
				w.WriteString(",")
			}
			w.WriteString("0.001")
		}
		w.WriteString("]}}")
	})
	return files
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w *os.File
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// TestJSONTextOverBudget reads speedscope, Firefox and Safari profiles of
// 30 MB of JSON under a 28 MiB budget: the text is more than the budget,
// but what they keep is not, so each is read as a stream, its heap under
// what it took from the budget. Mapped and charged twice its size, as
// they were before they streamed, none fit. Profiles whose kept samples
// are over that budget (writeJSONProfiles, GHC's too) are refused as too
// large, naming --ingest-memory, before their heap passes the budget by
// more than the decoder's scratch.
func TestJSONTextOverBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 100 MB")
	}
	const budget = 28 << 20
	dir := t.TempDir()
	read := func(path string) (p *profile.Profile, format string, peak uint64, b *Budget, err error) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		debug.FreeOSMemory()
		stop := heappeak.Watch()
		b = NewBudget(budget, time.Second)
		p, format, err = ParseFile(context.Background(), f, Limits{Memory: b})
		return p, format, stop(), b, err
	}
	for name, path := range writeWideJSONProfiles(t, dir, 30_000_000) {
		st, _ := os.Stat(path)
		p, format, peak, b, err := read(path)
		if err != nil {
			t.Errorf("%s (%d MB) under a %d MiB budget: %v", name, st.Size()/1e6, budget>>20, err)
			continue
		}
		if len(p.Sample) == 0 {
			t.Errorf("%s: no samples", name)
		}
		if int64(peak) > b.peak.Load() {
			t.Errorf("%s: peak heap %d MiB over the %d MiB the read took from the budget", format, peak>>20, b.peak.Load()>>20)
		}
		t.Logf("%s, %d MB: %d samples; peak heap %.1f MiB, %.1f MiB taken of a %d MiB budget", format, st.Size()/1e6, len(p.Sample), float64(peak)/(1<<20), float64(b.peak.Load())/(1<<20), budget>>20)
	}
	for name, path := range writeJSONProfiles(t, dir, 200000) {
		if !strings.Contains(name, "speedscope") && !strings.Contains(name, "firefox") && !strings.Contains(name, "ghc") && !strings.Contains(name, "safari") {
			continue
		}
		_, _, peak, _, err := read(path)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--ingest-memory") {
			t.Errorf("%s under a %d MiB budget: %v; want it refused as too large, naming --ingest-memory", name, budget>>20, err)
		}
		if peak > budget+16<<20 {
			t.Errorf("%s: peak heap %d MiB before it was refused, over the %d MiB budget and the decoder's scratch", name, peak>>20, budget>>20)
		}
		t.Logf("%s: refused at a peak heap of %.1f MiB: %v", name, float64(peak)/(1<<20), err)
	}
}
