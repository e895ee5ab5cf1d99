package ingest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// TestBudget checks a share larger than the whole budget is refused at
// once as too large, and one that does not fit beside the others waits
// for the wait, then fails as busy, and gets in once they give it back.
func TestBudget(t *testing.T) {
	b := NewBudget(100, 50*time.Millisecond)
	if _, err := b.take(context.Background(), 101, "profile"); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--ingest-memory") {
		t.Errorf("101 of 100: %v; want ErrTooLarge naming --ingest-memory", err)
	}
	release, err := b.take(context.Background(), 60, "profile")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := b.take(context.Background(), 60, "profile"); !errors.Is(err, ErrBusy) {
		t.Errorf("60 beside 60 of 100: %v; want ErrBusy", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("gave up after %v; want the 50ms wait", d)
	}
	release()
	release, err = b.take(context.Background(), 60, "profile")
	if err != nil {
		t.Errorf("after the release: %v", err)
	} else {
		release()
	}
}

// TestLimitFrames checks stacks deeper than the limit keep their leaf-most
// frames (inlined lines counted) under one "[truncated N frames]" frame per
// N, with a warning, and that the total frame limit counts what is kept.
func TestLimitFrames(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	inl := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}, {Function: fn}}} // two frames
	one := &profile.Location{ID: 2, Line: []profile.Line{{Function: fn}}}
	deep := make([]*profile.Location, 0, 20)
	deep = append(deep, inl) // the leaf
	for range 19 {
		deep = append(deep, one)
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample:     []*profile.Sample{{Location: deep, Value: []int64{1}}, {Location: deep[:3], Value: []int64{1}}},
		Location:   []*profile.Location{inl, one},
		Function:   []*profile.Function{fn},
	}
	if err := (Limits{MaxStackDepth: 6}).limitFrames(p); err != nil {
		t.Fatal(err)
	}
	s := p.Sample[0]
	// 21 frames: the leaf's 2 and 3 more fit under the marker (6 in all).
	if len(s.Location) != 5 || s.Location[0] != inl || s.Location[4].Line[0].Function.Name != "[truncated 16 frames]" {
		t.Errorf("cut stack: %d locations, root %q", len(s.Location), s.Location[len(s.Location)-1].Line[0].Function.Name)
	}
	if len(p.Sample[1].Location) != 3 {
		t.Errorf("a stack within the limit was cut to %d locations", len(p.Sample[1].Location))
	}
	if err := p.CheckValid(); err != nil {
		t.Errorf("cut profile is invalid: %v", err)
	}
	if len(p.Comments) != 1 || !strings.Contains(p.Comments[0], "1 stacks were deeper than the 6-frame limit (the deepest had 21 frames)") {
		t.Errorf("warnings: %q", p.Comments)
	}
	// --max-frames counts the locations kept: 5 and 3.
	if err := (Limits{MaxFrames: 7}).limitFrames(p); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-frames") {
		t.Errorf("8 frames against 7: %v; want ErrTooLarge naming --max-frames", err)
	}
	if err := (Limits{MaxFrames: 8, MaxStackDepth: 6}).limitFrames(p); err != nil {
		t.Errorf("8 frames against 8: %v", err)
	}
}

// TestLimitFramesInlined checks --max-frames counts a stack's locations,
// what the profile keeps, and bounds the frames of their inlined calls
// (a location's lines each, what the views expand) at
// InlinedFramesPerFrame times it: counted against --max-frames itself,
// the 2M-sample profiles with 4 inlined calls a location were refused.
func TestLimitFramesInlined(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}, Function: []*profile.Function{fn}}
	for i := range 10 {
		l := &profile.Location{ID: uint64(i + 1), Line: make([]profile.Line, 5)} // 4 inlined calls
		for k := range l.Line {
			l.Line[k].Function = fn
		}
		p.Location = append(p.Location, l)
	}
	for i := range 10 {
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{p.Location[i], p.Location[(i+1)%10]}, Value: []int64{1}})
	}
	// 20 locations in the stacks, 100 frames with their inlined calls.
	if err := (Limits{MaxFrames: 34, MaxStackDepth: 100}).limitFrames(p); err != nil {
		t.Errorf("20 locations, 100 frames with their inlined calls, against 34: %v", err)
	}
	if err := (Limits{MaxFrames: 33, MaxStackDepth: 100}).limitFrames(p); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 99 frames with their inlined calls") || !strings.Contains(err.Error(), "--max-frames") {
		t.Errorf("100 frames with their inlined calls against 33: %v; want ErrTooLarge naming them and --max-frames", err)
	}
	if err := (Limits{MaxFrames: 20, MaxStackDepth: 100}).limitFrames(p); !errors.Is(err, ErrTooLarge) {
		t.Errorf("100 frames with their inlined calls against 20: %v", err)
	}
	// A location of 20 lines no stack names: each stack's bound (40) is
	// over the depth, so each is walked and its lines counted.
	wide := &profile.Location{ID: 11, Line: make([]profile.Line, 20)}
	for k := range wide.Line {
		wide.Line[k].Function = fn
	}
	p.Location = append(p.Location, wide)
	if err := (Limits{MaxFrames: 34, MaxStackDepth: 30}).limitFrames(p); err != nil {
		t.Errorf("walked: 100 frames with their inlined calls against 34: %v", err)
	}
	if err := (Limits{MaxFrames: 33, MaxStackDepth: 30}).limitFrames(p); !errors.Is(err, ErrTooLarge) {
		t.Errorf("walked: 100 frames with their inlined calls against 33: %v", err)
	}
}

// TestBudgetTryTake checks TryTake takes a share only when it is free at
// once, without waiting.
func TestBudgetTryTake(t *testing.T) {
	b := NewBudget(100, time.Hour)
	give, ok := b.TryTake(60)
	if !ok {
		t.Fatal("60 of an idle 100 refused")
	}
	start := time.Now()
	if _, ok := b.TryTake(60); ok {
		t.Error("60 beside 60 of 100 taken")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refused after %v; want at once", d)
	}
	give()
	if give, ok := b.TryTake(100); !ok {
		t.Error("the whole budget refused after the release")
	} else {
		give()
	}
}
