package firefoxprofile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/pprof/profile"
)

// TestMainThreads checks the pid, tid and isMainThread of each thread
// against the rule the Firefox Profiler's upgrade to processed version 46
// applies to a version 41 file (it overwrites isMainThread): a string pid
// makes a main thread, else String(pid) === tid does. Each process has at
// most one main thread, which it shows as its track (a second one would
// replace the first, whose thread would have no track), and every other
// thread is a track of its process. Found live: viewer wrote pids as
// strings, and the Firefox Profiler showed one thread per process.
func TestMainThreads(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	sample := func(comm string, pid, tid int64) *profile.Sample {
		s := &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1}, Label: map[string][]string{}, NumLabel: map[string][]int64{}}
		if comm != "" {
			s.Label["comm"] = []string{comm}
		}
		if pid >= 0 {
			s.NumLabel["pid"] = []int64{pid}
		}
		if tid >= 0 {
			s.NumLabel["tid"] = []int64{tid}
		}
		return s
	}
	type want struct {
		name string
		pid  int64
		tid  string // "null": none
		main bool
	}
	for _, c := range []struct {
		name    string
		samples []*profile.Sample
		want    []want
	}{
		{"no labels", []*profile.Sample{sample("", -1, -1)},
			[]want{{"p", 0, `"0"`, true}}},
		{"perf threads", []*profile.Sample{sample("app", 10, 10), sample("worker", 10, 11), sample("worker", 10, 12), sample("child", 20, 20)},
			[]want{{"app", 10, `"10"`, true}, {"worker", 10, `"11"`, false}, {"worker", 10, `"12"`, false}, {"child", 20, `"20"`, true}}},
		{"no main thread sampled", []*profile.Sample{sample("worker", 10, 11), sample("worker", 10, 12)},
			[]want{{"worker", 10, `"11"`, false}, {"worker", 10, `"12"`, false}}},
		{"names only", []*profile.Sample{sample("a", -1, -1), sample("b", -1, -1)},
			[]want{{"a", 0, "null", false}, {"b", 0, "null", false}}},
		{"one named thread", []*profile.Sample{sample("a", -1, -1)},
			[]want{{"a", 0, `"0"`, true}}},
		{"pid only", []*profile.Sample{sample("a", 7, -1), sample("b", 8, -1), sample("c", 8, -1)},
			[]want{{"a", 7, `"7"`, true}, {"b", 8, "null", false}, {"c", 8, "null", false}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}, Sample: c.samples, Location: []*profile.Location{loc}, Function: []*profile.Function{fn}}
			var b bytes.Buffer
			if err := Write(&b, p, Options{Name: "p"}); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Threads []struct {
					Name         string
					Pid          json.RawMessage
					Tid          json.RawMessage
					IsMainThread bool
				}
			}
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			var got []want
			mains := map[string]int{}
			for _, th := range doc.Threads {
				pid, err := strconv.ParseInt(string(th.Pid), 10, 64)
				if err != nil {
					t.Fatalf("thread %q: pid %s is not a number: the Firefox Profiler would take every thread of it for a main thread", th.Name, th.Pid)
				}
				got = append(got, want{th.Name, pid, string(th.Tid), th.IsMainThread})
				if upgraded := string(th.Tid) == strconv.Quote(strconv.FormatInt(pid, 10)); upgraded != th.IsMainThread {
					t.Errorf("thread %q: isMainThread %v, the Firefox Profiler's upgrade makes it %v", th.Name, th.IsMainThread, upgraded)
				}
				if th.IsMainThread {
					mains[string(th.Pid)]++
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("threads (name pid tid main) %v, want %v", got, c.want)
			}
			for pid, n := range mains {
				if n > 1 {
					t.Errorf("process %s has %d main threads: the Firefox Profiler shows only the last", pid, n)
				}
			}
		})
	}
}

// TestNoStack checks that a sample without frames keeps its weight in the
// call tree: the Firefox Profiler leaves out samples whose stack is null,
// so its one frame is NoStack. Found live: a Go heap profile's call tree
// total was less than viewer's by its one frameless sample.
func TestNoStack(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "inuse_space", Unit: "bytes"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{100}}, {Value: []int64{24}}},
		Location:   []*profile.Location{loc}, Function: []*profile.Function{fn},
	}
	var b bytes.Buffer
	if err := Write(&b, p, Options{Name: "heap"}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Threads []struct {
			Samples struct {
				Stack  []*int
				Weight []int64
			}
			StackTable struct {
				Prefix []*int
				Frame  []int
			}
			FrameTable  struct{ Func []int }
			FuncTable   struct{ Name []int }
			StringArray []string
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	th := doc.Threads[0]
	got := map[string]int64{}
	for i, st := range th.Samples.Stack {
		if st == nil {
			if th.Samples.Weight[i] != 0 {
				t.Errorf("sample %d: null stack with weight %d: the Firefox Profiler would not count it", i, th.Samples.Weight[i])
			}
			continue
		}
		got[th.StringArray[th.FuncTable.Name[th.FrameTable.Func[th.StackTable.Frame[*st]]]]] += th.Samples.Weight[i]
	}
	if want := map[string]int64{"f": 100, NoStack: 24}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("weights by leaf %v, want %v", got, want)
	}
}
