package jsonprof

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
)

// corpus is speedscope's sample profiles (testdata/peers/speedscope-formats).
const corpus = "../../../testdata/peers/speedscope-formats/sample/profiles"

// fuzzParse checks that a reader returns a valid profile or an error, and
// that sniffing any prefix never panics.
func fuzzParse(t *testing.T, data []byte, sniff func([]byte) bool, parse func([]byte, Options) (*profile.Profile, error)) {
	sniff(data[:min(len(data), 4096)])
	p, err := parse(data, Options{MaxSamples: 10000, MaxRecords: 100000})
	if err != nil {
		if err.Error() == "" {
			t.Fatal("empty error")
		}
		return
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("invalid profile: %v", err)
	}
}

// seed adds the first max bytes of each corpus file as a seed.
func seed(f *testing.F, max int, names ...string) {
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(corpus, filepath.FromSlash(name)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), max)])
	}
}

func FuzzSpeedscope(f *testing.F) {
	seed(f, 4096, "speedscope/0.0.1/simple.speedscope.json", "speedscope/0.1.2/simple-sampled.speedscope.json", "speedscope/0.6.0/two-sampled.speedscope.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffSpeedscope, ParseSpeedscope) })
}

// FuzzV8 reads each input as a V8 CPU profile, heap profile and node
// --prof log.
func FuzzV8(f *testing.F) {
	seed(f, 4096, "Chrome/65/simple.cpuprofile", "node/10.11.0/example.cpuprofile", "node/10.11.0/Heap-20181003T105432.heapprofile")
	f.Add([]byte(`{"code":[{"name":"T start","type":"CPP"},{"name":"a x.js:1:2","type":"JS"}],"ticks":[{"tm":5,"s":[1,0,0,0]},{"tm":9,"s":[7,0]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzParse(t, data, SniffCPUProfile, ParseCPUProfile)
		fuzzParse(t, data, SniffHeapProfile, ParseHeapProfile)
		fuzzParse(t, data, SniffV8Log, ParseV8Log)
	})
}

func FuzzTraceEvents(f *testing.F) {
	seed(f, 4096, "trace-event/end-non-top-of-stack.json", "trace-event/simple-hermes.json", "trace-event/simple-with-samples.json",
		"trace-event/multiprocess.json", "trace-event/simple-partial-trailing-comma.json", "trace-event/event-reordering-name-match.json")
	f.Add([]byte(`[{"pid":1,"tid":2,"ph":"P","name":"Profile","id":"0x1","ts":5,"args":{"data":{"startTime":5}}},` +
		`{"pid":1,"tid":2,"ph":"P","name":"ProfileChunk","id":"0x1","ts":6,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}},{"id":2,"parent":1,"callFrame":{"functionName":"f","url":"a.js","lineNumber":3}}],"samples":[2,2,1]},"timeDeltas":[1,2,3]}}}]`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffTraceEvents, ParseTraceEvents) })
}

func FuzzFirefox(f *testing.F) {
	f.Add([]byte(`{"meta":{"startTime":1000,"version":9},"libs":[],"threads":[{"name":"GeckoMain","pid":3,"tid":4,` +
		`"samples":{"schema":{"stack":0,"time":1},"data":[[1,0.5],[2,1.5],[null,2.5],[1,3]]},` +
		`"stackTable":{"schema":{"prefix":0,"frame":1},"data":[[null,0],[0,1],[1,2]]},` +
		`"frameTable":{"schema":{"location":0},"data":[[0],[1],[2]]},"stringTable":["(root)","a (http://x/a.js:1:2)","b (resource://gre/b.js:3)"]}],"processes":[]}`))
	f.Add([]byte(`{"meta":{"startTime":5,"preprocessedProfileVersion":47},"shared":{"stringArray":["main","f","a.js"]},"threads":[{"name":"T","pid":"1","tid":2,` +
		`"samples":{"stack":[0,1,null,1],"time":[0,1,2,3],"length":4},"stackTable":{"frame":[0,1],"prefix":[null,0],"length":2},` +
		`"frameTable":{"func":[0,1],"line":[null,4],"column":[null,2],"length":2},"funcTable":{"name":[0,1],"fileName":[null,2],"length":2}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffFirefox, ParseFirefox) })
}

func FuzzGHC(f *testing.F) {
	f.Add([]byte(`{"program":"p","rts_arguments":["-pj"],"initial_capabilities":0,"tick_interval":1000,` +
		`"cost_centres":[{"id":1,"label":"MAIN","module":"MAIN","src_loc":"<built-in>"},{"id":2,"label":"f","module":"Main","src_loc":"Main.hs:(3,1)-(4,9)"}],` +
		`"profile":{"id":1,"entries":0,"alloc":8,"ticks":1,"children":[{"id":2,"entries":3,"alloc":64,"ticks":5,"children":[]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffGHC, ParseGHC) })
}

func FuzzSafari(f *testing.F) {
	f.Add([]byte(`{"version":1,"recording":{"displayName":"R","startTime":1,"sampleStackTraces":[` +
		`{"timestamp":1.5,"stackFrames":[{"name":"","url":"file:///a.js","line":2,"column":3},{"name":"main","url":"file:///a.js","line":1,"column":1}]},` +
		`{"timestamp":1.6,"stackFrames":[{"name":"main","url":"file:///a.js","line":1,"column":1}]}],"sampleDurations":[0.001,0.002]}}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffSafari, ParseSafari) })
}
