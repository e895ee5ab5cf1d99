package web

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/web/flame"
)

// timeOrderJSON is time.json as the page reads it.
type timeOrderJSON struct {
	Version      int      `json:"version"`
	BucketNanos  int64    `json:"bucket_ns"`
	SpanNanos    int64    `json:"span_ns"`
	FromNanos    int64    `json:"from_ns"`
	ToNanos      int64    `json:"to_ns"`
	ColumnNanos  int64    `json:"column_ns"`
	Names        []string `json:"names"`
	Mapping      []int32  `json:"mapping"`
	Mappings     []string `json:"mappings"`
	OtherThreads int      `json:"other_threads"`
	Hidden       int      `json:"hidden"`
	Threads      []struct {
		Name  string  `json:"name"`
		Value int64   `json:"value"`
		Depth int     `json:"depth"`
		Boxes []int64 `json:"boxes"`
	} `json:"threads"`
}

// box is one of time.json's boxes, named.
type box struct {
	start, end int64
	depth      int
	name       string
	value      int64
}

func (b box) String() string {
	return fmt.Sprintf("%s@%d[%d,%d)=%d", b.name, b.depth, b.start, b.end, b.value)
}

// boxesOf is thread name's boxes in d, sorted by depth, then start.
func (d *timeOrderJSON) boxesOf(name string) []box {
	var out []box
	for _, th := range d.Threads {
		if th.Name != name {
			continue
		}
		for i := 0; i+5 <= len(th.Boxes); i += 5 {
			b := th.Boxes[i : i+5]
			out = append(out, box{b[0], b[1], int(b[2]), d.Names[b[3]], b[4]})
		}
	}
	sortBoxes(out)
	return out
}

func sortBoxes(bs []box) {
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && (bs[j].depth < bs[j-1].depth || bs[j].depth == bs[j-1].depth && bs[j].start < bs[j-1].start); j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
}

// timedProfile builds a CPU profile whose samples have a thread (comm,
// pid, tid) and a time (the time label, in ns, as the readers of timed
// inputs write it).
type timedProfile struct {
	p     *profile.Profile
	fns   map[string]*profile.Location
	comms map[string]map[string][]string
}

func newTimedProfile() *timedProfile {
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", HasFunctions: true}
	return &timedProfile{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
			Period:     1_000_000,
			Mapping:    []*profile.Mapping{m},
		},
		fns:   map[string]*profile.Location{},
		comms: map[string]map[string][]string{},
	}
}

// add adds n samples of stack (root first, ";"-separated) taken by thread
// comm/tid at ms milliseconds.
func (tp *timedProfile) add(comm string, tid int64, ms int64, stack string, n int64) {
	p := tp.p
	var locs []*profile.Location
	for _, name := range strings.Split(stack, ";") {
		l := tp.fns[name]
		if l == nil {
			f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
			l = &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: p.Mapping[0], Address: 0x400000 + uint64(len(p.Location))*16, Line: []profile.Line{{Function: f}}}
			p.Function = append(p.Function, f)
			p.Location = append(p.Location, l)
			tp.fns[name] = l
		}
		locs = append([]*profile.Location{l}, locs...) // leaf first
	}
	if tp.comms[comm] == nil {
		tp.comms[comm] = map[string][]string{"comm": {comm}}
	}
	p.Sample = append(p.Sample, &profile.Sample{
		Location: locs,
		Value:    []int64{n, n * 1_000_000},
		Label:    tp.comms[comm],
		NumLabel: map[string][]int64{"pid": {1}, "tid": {tid}, "time": {ms * 1_000_000}},
		NumUnit:  map[string][]string{"time": {"nanoseconds"}},
	})
}

func fetchTimeOrder(t *testing.T, u string) *timeOrderJSON {
	t.Helper()
	r := get(t, u)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", u, r.status, r.body)
	}
	var d timeOrderJSON
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return &d
}

// TestTimeOrderJSON checks time.json on a small profile whose layout is
// known: consecutive samples with a common prefix are one box, a bucket
// without samples splits them, a bucket's stacks share it by value, and a
// range (t=) keeps only its samples.
func TestTimeOrderJSON(t *testing.T) {
	tp := newTimedProfile()
	for ms := int64(0); ms < 4; ms++ {
		tp.add("app", 1, ms, "main;a;b", 4)
	}
	// 4 ms: the thread is off the CPU.
	tp.add("app", 1, 5, "main;a;b", 1)
	tp.add("app", 1, 5, "main;a;c", 3)
	for ms := int64(6); ms < 10; ms++ {
		tp.add("app", 1, ms, "main;a;c", 4)
	}
	tp.add("worker", 2, 3, "main;d", 2)
	_, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, tp.p, true))
	const ms = 1_000_000

	d := fetchTimeOrder(t, ts.URL+"/p/"+id+"/time.json?si=cpu&w=40")
	if d.BucketNanos != ms || d.SpanNanos != 10*ms || d.FromNanos != 0 || d.ToNanos != 10*ms || d.ColumnNanos != ms {
		t.Errorf("bucket %d, span %d, range [%d,%d), column %d; want 1 ms buckets over 10 ms, one a column", d.BucketNanos, d.SpanNanos, d.FromNanos, d.ToNanos, d.ColumnNanos)
	}
	if len(d.Threads) != 2 || d.Threads[0].Name != "app 1/1" || d.Threads[1].Name != "worker 1/2" {
		t.Fatalf("threads %+v; want app 1/1, then worker 1/2 (busiest first)", d.Threads)
	}
	want := []box{
		{0, 4 * ms, 0, "main", 16 * ms}, {5 * ms, 10 * ms, 0, "main", 20 * ms},
		{0, 4 * ms, 1, "a", 16 * ms}, {5 * ms, 10 * ms, 1, "a", 20 * ms},
		{0, 4 * ms, 2, "b", 16 * ms}, {5 * ms, 5*ms + ms/4, 2, "b", ms}, {5*ms + ms/4, 10 * ms, 2, "c", 19 * ms},
	}
	if got := d.boxesOf("app 1/1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("app's boxes:\n got %v\nwant %v", got, want)
	}
	if got, want := fmt.Sprint(d.boxesOf("worker 1/2")), fmt.Sprint([]box{{3 * ms, 4 * ms, 0, "main", 2 * ms}, {3 * ms, 4 * ms, 1, "d", 2 * ms}}); got != want {
		t.Errorf("worker's boxes:\n got %v\nwant %v", got, want)
	}
	if d.Threads[0].Depth != 3 || d.Threads[1].Depth != 2 {
		t.Errorf("depths %d, %d; want 3, 2", d.Threads[0].Depth, d.Threads[1].Depth)
	}
	for i, n := range d.Names {
		if d.Mapping[i] < 0 || d.Mappings[d.Mapping[i]] != "/bin/app" {
			t.Errorf("%s's binary: %d of %q", n, d.Mapping[i], d.Mappings)
		}
	}

	// A range: the worker's bucket is out of it, and so is the first run.
	d = fetchTimeOrder(t, ts.URL+"/p/"+id+"/time.json?si=cpu&w=40&t=0.005-0.01")
	if d.FromNanos != 5*ms || d.ToNanos != 10*ms || len(d.Threads) != 1 {
		t.Fatalf("t=0.005-0.01: range [%d,%d), %d threads; want [5 ms, 10 ms) and app alone", d.FromNanos, d.ToNanos, len(d.Threads))
	}
	// Forty columns of an eighth of a bucket: still a bucket a column.
	if got, want := fmt.Sprint(d.boxesOf("app 1/1")), fmt.Sprint([]box{want[1], want[3], want[5], want[6]}); got != want {
		t.Errorf("t=0.005-0.01: app's boxes\n got %v\nwant %v", got, want)
	}
	// Two columns over the whole recording: a column holds five buckets
	// and its stacks merged; the worker's bucket is in the first.
	d = fetchTimeOrder(t, ts.URL+"/p/"+id+"/time.json?si=cpu&w=2")
	if d.ColumnNanos != 5*ms {
		t.Errorf("w=2: a column is %d ns; want 5 ms", d.ColumnNanos)
	}
	wantWide := []box{{0, 10 * ms, 0, "main", 36 * ms}, {0, 10 * ms, 1, "a", 36 * ms}, {0, 5*ms + ms/4, 2, "b", 17 * ms}, {5*ms + ms/4, 10 * ms, 2, "c", 19 * ms}}
	if got := d.boxesOf("app 1/1"); fmt.Sprint(got) != fmt.Sprint(wantWide) {
		t.Errorf("w=2: app's boxes\n got %v\nwant %v", got, wantWide)
	}

	// Filters apply as on every view: with h=^a$ the frames below main
	// move up.
	d = fetchTimeOrder(t, ts.URL+"/p/"+id+"/time.json?si=cpu&w=40&h=%5Ea%24&t=0-0.004")
	if got := d.boxesOf("app 1/1"); len(got) != 2 || got[1].name != "b" || got[1].depth != 1 {
		t.Errorf("h=^a$: app's boxes %v; want main and b under it", got)
	}

	if r := get(t, ts.URL+"/p/"+id+"/time.json?w=0"); r.status != 400 || !strings.Contains(string(r.body), "w=") {
		t.Errorf("w=0: %d %s; want 400 naming w", r.status, r.body)
	}
	if r := get(t, ts.URL+"/p/"+id+"/time"); r.status != 200 || !strings.Contains(string(r.body), `id="timeorder-canvas"`) || !strings.Contains(string(r.body), "/time.json") {
		t.Errorf("/time: %d, the page has no chart or time.json", r.status)
	}
	if r := get(t, ts.URL+"/p/"+id); !strings.Contains(string(r.body), `href="/p/`+id+`/time"`) {
		t.Errorf("the flame page has no link to the time-order view")
	}
}

// TestTimeOrderNoTimes: a profile without sample times answers no
// threads and a zero bucket, and its page names the inputs that have
// times.
func TestTimeOrderNoTimes(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	d := fetchTimeOrder(t, ts.URL+"/p/"+id+"/time.json")
	if d.BucketNanos != 0 || len(d.Threads) != 0 {
		t.Errorf("a profile without times: bucket %d, %d threads", d.BucketNanos, len(d.Threads))
	}
	if r := get(t, ts.URL+"/p/"+id+"/time"); !strings.Contains(string(r.body), "needs sample times") || !strings.Contains(string(r.body), "perf.data") {
		t.Errorf("the page does not say the view needs times and which inputs have them")
	}
}

// TestTimeOrderBounded: time.json of a large profile (78k sample
// records of 13 threads over 500 buckets, each bucket a dozen stacks, a
// phase of the program every 10 buckets) is bounded by the width asked
// for, not by the samples: the busiest threads only, boxes at least half
// a column wide and never overlapping at one depth, and at most
// MaxTimeOrderBoxes when more would be wide enough.
func TestTimeOrderBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a large profile")
	}
	tp := newTimedProfile()
	rng := rand.New(rand.NewPCG(1, 2))
	const threads = flame.TimeOrderThreads + 1
	records := 0
	for tid := int64(1); tid <= threads; tid++ {
		for ms := int64(0); ms < 500; ms++ {
			for k := 0; k < 12; k++ {
				stack := fmt.Sprintf("main;pkg.phase%d;pkg.g%d;pkg.h%d;pkg.leaf%d", ms/10, k, rng.IntN(50), rng.IntN(400))
				tp.add(fmt.Sprintf("t%d", tid), tid, ms, stack, 1+tid)
				records++
			}
		}
	}
	_, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, tp.p, true))
	for _, w := range []int{200, 1500, 4096} {
		u := fmt.Sprintf("%s/p/%s/time.json?si=cpu&w=%d", ts.URL, id, w)
		r := get(t, u)
		var d timeOrderJSON
		if err := json.Unmarshal(r.body, &d); err != nil || r.status != 200 {
			t.Fatalf("GET %s: %d %v", u, r.status, err)
		}
		if len(d.Threads) != flame.TimeOrderThreads || d.OtherThreads != 1 || d.Threads[0].Name != fmt.Sprintf("t%d 1/%d", threads, threads) {
			t.Errorf("w=%d: %d threads, the first %q, and %d others; want the %d busiest and 1 other", w, len(d.Threads), d.Threads[0].Name, d.OtherThreads, flame.TimeOrderThreads)
		}
		minBox := float64(d.ToNanos-d.FromNanos) / float64(w) / 2
		boxes := 0
		for _, th := range d.Threads {
			bs := d.boxesOf(th.Name)
			boxes += len(bs)
			if len(bs) < 51 || bs[0].name != "main" || bs[0].start != 0 || bs[0].end != d.SpanNanos || bs[1].name != "pkg.phase0" || bs[1].end != 10_000_000 {
				t.Fatalf("w=%d: %s's first boxes %v; want main over the whole recording, then its 50 phases", w, th.Name, bs[:min(2, len(bs))])
			}
			for i, b := range bs {
				if float64(b.end-b.start) < minBox {
					t.Fatalf("w=%d: %s's box %v is under half a column (%v ns)", w, th.Name, b, minBox)
				}
				if i > 0 && bs[i-1].depth == b.depth && bs[i-1].end > b.start {
					t.Fatalf("w=%d: %s's boxes %v and %v overlap", w, th.Name, bs[i-1], b)
				}
			}
		}
		if boxes > flame.MaxTimeOrderBoxes || d.Hidden == 0 || boxes > 2*w*5*len(d.Threads) {
			t.Errorf("w=%d: %d boxes (at most %d, and twice the width per depth and thread), %d hidden", w, boxes, flame.MaxTimeOrderBoxes, d.Hidden)
		}
		t.Logf("w=%d: %d sample records → %d boxes, %d hidden, %d bytes", w, records, boxes, d.Hidden, len(r.body))
		if len(r.body) > 4<<20 {
			t.Errorf("w=%d: time.json is %d bytes", w, len(r.body))
		}
	}
}
