package stackprof

import (
	"encoding/json"
	"os"
	"testing"

	"viewer/symbolize/sampling"
)

// TestWallTimesKept reads speedscope's wall-mode stackprof sample: its
// samples weigh the whole of raw_timestamp_deltas, and keep their times,
// spread over the recording, for the timeline and t=.
func TestWallTimesKept(t *testing.T) {
	data, err := os.ReadFile("../../../testdata/peers/speedscope-formats/sample/profiles/stackprof/simple-stackprof.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Deltas []int64 `json:"raw_timestamp_deltas"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	var span int64
	for _, d := range raw.Deltas {
		span += d * 1000
	}
	p, err := Parse(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	var total int64
	times := map[int64]bool{}
	for _, s := range p.Sample {
		total += s.Value[0]
		at := s.NumLabel[sampling.TimeLabel]
		if len(at) != 1 || at[0] < 0 || at[0] > span {
			t.Fatalf("sample time %v, want one within the %d ns recorded", at, span)
		}
		times[at[0]] = true
	}
	if total != span {
		t.Errorf("wall total %d ns, raw_timestamp_deltas sum to %d", total, span)
	}
	if len(times) < 10 {
		t.Errorf("%d distinct sample times; want them spread over the recording", len(times))
	}
}
