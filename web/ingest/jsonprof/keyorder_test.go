package jsonprof

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// folded is every sample of p as a line of its labels, stack (leaf
// first, each frame with its file, line and column) and values, sorted:
// two profiles with the same folded are the same to every page.
func folded(p *profile.Profile) string {
	var lines []string
	for _, s := range p.Sample {
		var st []string
		for _, l := range s.Location {
			for _, ln := range l.Line {
				st = append(st, fmt.Sprintf("%s@%s:%d:%d", ln.Function.Name, ln.Function.Filename, ln.Line, ln.Column))
			}
		}
		lines = append(lines, fmt.Sprint(s.Label, s.NumLabel, " ", strings.Join(st, ";"), " ", s.Value))
	}
	slices.Sort(lines)
	var types []string
	for _, t := range p.SampleType {
		types = append(types, t.Type+"/"+t.Unit)
	}
	return fmt.Sprint(types, p.DefaultSampleType, "\n") + strings.Join(lines, "\n")
}

// TestKeyOrder reads each format with the keys of its objects in the
// order its writer puts them and in others JSON allows (a table's schema
// after its rows, meta and shared strings after the threads, weights
// before samples, a profile's type last, tick_interval after the tree,
// durations before the stack traces): the streaming readers, which add
// what they can as it arrives, give the same profile either way.
func TestKeyOrder(t *testing.T) {
	for _, c := range []struct {
		name      string
		parse     func([]byte, Options) (*profile.Profile, error)
		in, moved string
	}{
		{"Gecko", ParseFirefox,
			`{"meta":{"startTime":1000,"version":9},"libs":[],"threads":[{"name":"GeckoMain","pid":3,"tid":4,` +
				`"samples":{"schema":{"stack":0,"time":1},"data":[[1,0.5],[2,1.5],[null,2.5],[1,3],[0,4]]},` +
				`"stackTable":{"schema":{"prefix":0,"frame":1},"data":[[null,0],[0,1],[1,2]]},` +
				`"frameTable":{"schema":{"location":0},"data":[[0],[1],[2]]},"stringTable":["(root)","a (http://x/a.js:1:2)","b (http://x/b.js:3)"]}],"processes":[]}`,
			`{"libs":[],"threads":[{"stringTable":["(root)","a (http://x/a.js:1:2)","b (http://x/b.js:3)"],"pid":3,` +
				`"samples":{"data":[[0.5,1],[1.5,2],[2.5,null],[3,1],[4,0]],"schema":{"time":0,"stack":1}},` +
				`"frameTable":{"data":[[0],[1],[2]],"schema":{"location":0}},` +
				`"stackTable":{"data":[[0,null],[1,0],[2,1]],"schema":{"frame":0,"prefix":1}},"tid":4,"name":"GeckoMain"}],"processes":[],"meta":{"version":9,"startTime":1000}}`},
		{"processed", ParseFirefox,
			`{"meta":{"startTime":5,"preprocessedProfileVersion":47},"shared":{"stringArray":["main","f","a.js"]},"threads":[{"name":"T","pid":"1","tid":2,` +
				`"samples":{"stack":[0,1,null,1,0],"time":[0,1,2,3,5],"length":5},"stackTable":{"frame":[0,1],"prefix":[null,0],"length":2},` +
				`"frameTable":{"func":[0,1],"line":[null,4],"column":[null,2],"length":2},"funcTable":{"name":[0,1],"fileName":[null,2],"length":2}}]}`,
			`{"threads":[{"funcTable":{"fileName":[null,2],"name":[0,1]},"frameTable":{"column":[null,2],"line":[null,4],"func":[0,1]},` +
				`"stackTable":{"prefix":[null,0],"frame":[0,1]},"samples":{"time":[0,1,2,3,5],"stack":[0,1,null,1,0]},"tid":2,"pid":"1","name":"T"}],` +
				`"shared":{"stringArray":["main","f","a.js"]},"meta":{"preprocessedProfileVersion":47,"startTime":5}}`},
		{"speedscope", ParseSpeedscope,
			`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"a"},{"name":"b","file":"b.py","line":3}]},"profiles":[` +
				`{"type":"sampled","name":"p","unit":"milliseconds","startValue":0,"endValue":9,"samples":[[0,1],[0],[1],[1,1,0]],"weights":[1,2,3,4.5]},` +
				`{"type":"evented","name":"e","unit":"microseconds","startValue":1,"endValue":9,"events":[{"type":"O","frame":0,"at":1},{"type":"O","frame":1,"at":2},{"type":"C","frame":1,"at":4},{"type":"C","frame":0,"at":9}]}]}`,
			`{"profiles":[{"weights":[1,2,3,4.5],"endValue":9,"samples":[[0,1],[0],[1],[1,1,0]],"unit":"milliseconds","name":"p","type":"sampled"},` +
				`{"events":[{"type":"O","frame":0,"at":1},{"type":"O","frame":1,"at":2},{"type":"C","frame":1,"at":4},{"type":"C","frame":0,"at":9}],"startValue":1,"type":"evented","unit":"microseconds","name":"e"}],` +
				`"shared":{"frames":[{"name":"a"},{"name":"b","file":"b.py","line":3}]},"$schema":"https://www.speedscope.app/file-format-schema.json"}`},
		{"GHC", ParseGHC,
			`{"program":"p","rts_arguments":["-pj"],"initial_capabilities":0,"tick_interval":250,` +
				`"cost_centres":[{"id":1,"label":"MAIN","module":"MAIN","src_loc":"<built-in>"},{"id":2,"label":"f","module":"Main","src_loc":"Main.hs:(3,1)-(4,9)"}],` +
				`"profile":{"id":1,"entries":0,"alloc":8,"ticks":1,"children":[{"id":2,"entries":3,"alloc":64,"ticks":5,"children":[]}]}}`,
			`{"profile":{"id":1,"alloc":8,"ticks":1,"children":[{"id":2,"children":[],"ticks":5,"alloc":64}]},"initial_capabilities":0,` +
				`"cost_centres":[{"src_loc":"Main.hs:(3,1)-(4,9)","module":"Main","label":"f","id":2},{"id":1,"label":"MAIN","module":"MAIN","src_loc":"<built-in>"}],"rts_arguments":["-pj"],"tick_interval":250}`},
		{"Safari", ParseSafari,
			`{"version":1,"recording":{"displayName":"R","startTime":1,"sampleStackTraces":[` +
				`{"timestamp":1.5,"stackFrames":[{"name":"","url":"file:///a.js","line":2,"column":3},{"name":"main","url":"file:///a.js","line":1,"column":1}]},` +
				`{"timestamp":1.6,"stackFrames":[{"name":"main","url":"file:///a.js","line":1,"column":1}]}],"sampleDurations":[0.001,0.002]}}`,
			`{"recording":{"sampleDurations":[0.001,0.002],"sampleStackTraces":[` +
				`{"stackFrames":[{"name":"","url":"file:///a.js","line":2,"column":3},{"name":"main","url":"file:///a.js","line":1,"column":1}],"timestamp":1.5},` +
				`{"timestamp":1.6,"stackFrames":[{"name":"main","url":"file:///a.js","line":1,"column":1}]}],"startTime":1,"displayName":"R"},"version":1}`},
	} {
		want, err := c.parse([]byte(c.in), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(want.Sample) == 0 {
			t.Fatalf("%s: no samples", c.name)
		}
		got, err := c.parse([]byte(c.moved), Options{})
		if err != nil {
			t.Fatalf("%s, keys moved: %v", c.name, err)
		}
		if g, w := folded(got), folded(want); g != w {
			t.Errorf("%s, keys moved:\n%s\nwant, as written:\n%s", c.name, g, w)
		}
	}
}
