package flame

import (
	"reflect"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/testdata/bench/gen"
)

// timedProfile is handProfile with its samples taken at 0, 1, 2, 3 and 4 s
// by threads 1, 1, 2, 2 and 3.
func timedProfile() (*profile.Profile, []int64) {
	p := handProfile()
	for i, s := range p.Sample {
		s.NumLabel = map[string][]int64{sampling.TimeLabel: {int64(i) * 1e9}, "tid": {int64(i/2 + 1)}, "pid": {1}}
		s.NumUnit = map[string][]string{sampling.TimeLabel: {"nanoseconds"}}
	}
	return p, []int64{10, 20, 5, 3, 7}
}

func TestTimeRangeFilter(t *testing.T) {
	p, cpu := timedProfile()
	for _, c := range []struct {
		t    string
		want int64
	}{
		{"0-1", cpu[0]},
		{"1-3", cpu[1] + cpu[2]},
		{"0.5-10", cpu[1] + cpu[2] + cpu[3] + cpu[4]},
		{"3-3.5", cpu[3]},
		{"9-10", 0},
	} {
		r, err := ParseTimeRange(c.t)
		if err != nil {
			t.Fatal(err)
		}
		f := Filter{Time: r}
		if got := decode(t, Build(p, 1, Options{Filter: f})).Total; got != c.want {
			t.Errorf("t=%s: flame.json total %d, want %d", c.t, got, c.want)
		}
		if _, total := TopFiltered(p, 1, f); total != c.want {
			t.Errorf("t=%s: top total %d, want %d", c.t, total, c.want)
		}
		if got := r.String(); got != c.t {
			t.Errorf("ParseTimeRange(%q).String() = %q", c.t, got)
		}
	}
	for _, bad := range []string{"1", "2-1", "a-b", "-1-2", "1-"} {
		if _, err := ParseTimeRange(bad); err == nil {
			t.Errorf("ParseTimeRange(%q): no error", bad)
		}
	}
	a, _ := ParseTimeRange("0-1")
	b, _ := ParseTimeRange("0-2")
	if (Filter{Time: a}).Key() == (Filter{Time: b}).Key() || (Filter{Time: a}).Key() == "" {
		t.Error("time ranges share a cache key")
	}
}

func TestBuildTimeline(t *testing.T) {
	p, cpu := timedProfile()
	tl := BuildTimeline(p, 1)
	if tl.BucketNanos != 1e9 || len(tl.Total) != 5 || tl.SpanNanos != 5e9 {
		t.Fatalf("bucket %d ns, %d buckets, span %d: want 1 s, 5, 5 s", tl.BucketNanos, len(tl.Total), tl.SpanNanos)
	}
	for i, v := range cpu {
		if tl.Total[i] != v {
			t.Errorf("bucket %d: total %d, want %d", i, tl.Total[i], v)
		}
	}
	if len(tl.Rows) != 3 || tl.Rows[0].Name != "1/1" || tl.Rows[0].Value != cpu[0]+cpu[1] || tl.Rows[0].Counts[1] != cpu[1] {
		t.Errorf("rows %+v: want thread 1/1 first with %d", tl.Rows, cpu[0]+cpu[1])
	}
	if tl := BuildTimeline(handProfile(), 1); len(tl.Rows) != 0 || tl.BucketNanos != 0 {
		t.Errorf("a profile without times has a timeline: %+v", tl)
	}
}

// TestStacksInTimeIsTheFilteredProfile: a range cut from the time index
// (Stacks.InTime, what the server does for t=) gives the tree and the top
// table that filtering the profile's samples by time gives (Build), with
// and without another filter, for ranges inside, across and outside the
// recording.
func TestStacksInTimeIsTheFilteredProfile(t *testing.T) {
	p := gen.Generate(3000, 800, 400, 5, 7)
	p.DurationNanos = 10e9
	gen.AddTimes(p, 3, 1e9/4)
	hide, _ := ParseFilter("", "", "compress", "")
	for _, other := range []Filter{{}, hide} {
		base := NewStacks(p, 1, Options{Filter: other})
		for _, rs := range []string{"0-10", "2-3.5", "2.1-2.2", "9.75-20", "11-12"} {
			r, _ := ParseTimeRange(rs)
			f := other
			f.Time = r
			want := Build(p, 1, Options{MinFraction: DefaultMinFraction, Filter: f})
			got := base.InTime(*r).Tree(nil, Options{MinFraction: DefaultMinFraction})
			if !reflect.DeepEqual(paths(got), paths(want)) || got.Total() != want.Total() {
				t.Errorf("filter %q t=%s: the time index's tree (total %d) differs from the filtered profile's (total %d)", other.Key(), rs, got.Total(), want.Total())
			}
			if rs == "11-12" && got.Total() != 0 {
				t.Errorf("t=%s is after the recording: total %d", rs, got.Total())
			}
			wantRows, wantTotal := TopFiltered(p, 1, f)
			top := NewStacks(p, 1, Options{Filter: f}).Top(nil, Options{})
			if top.Total != wantTotal || !reflect.DeepEqual(top.Rows, wantRows) {
				t.Errorf("filter %q t=%s: top table total %d, want %d", other.Key(), rs, top.Total, wantTotal)
			}
		}
	}
	// A profile without times has no sample in any range.
	r, _ := ParseTimeRange("0-1000")
	if got := NewStacks(handProfile(), 1, Options{}).InTime(*r).Total(); got != 0 {
		t.Errorf("a profile without times: %d in t=0-1000", got)
	}
}

// BenchmarkTimeRange measures what a timeline selection costs the server
// on the benchmark profile with times (genprofile -times 8): the tree and
// the top table of a 5 s range of its 60 s.
func BenchmarkTimeRange(b *testing.B) {
	p := benchProfile(b)
	gen.AddTimes(p, 8, int64(sampling.TimeBucket(uint64(p.DurationNanos))))
	r, _ := ParseTimeRange("10-15")
	f := Filter{Time: r}
	b.Run("tree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Build(p, 1, Options{MinFraction: DefaultMinFraction, Filter: f}).JSON()
		}
	})
	b.Run("top", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			TopFiltered(p, 1, f)
		}
	})
	// What the server does for t=: the profile's Stacks (built once, with
	// its time index) cut to the range, then the tree and the top table.
	base := NewStacks(p, 1, Options{})
	b.Run("stacks-range", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st := base.InTime(*r)
			st.Tree(nil, Options{MinFraction: DefaultMinFraction}).JSON()
			st.Top(nil, Options{})
		}
	})
	b.Run("timeline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			BuildTimeline(p, 1).JSON()
		}
	})
}
