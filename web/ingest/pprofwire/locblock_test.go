package pprofwire

import (
	"runtime"
	"runtime/debug"
	"testing"

	"viewer/testdata/bench/gen"
)

// TestSampleLocationsOutliveTheList checks that a decoded profile's
// samples keep their locations alive through collections when nothing
// else refers to them: build stores the pointers as integers (locBlock),
// so only the block's keep pointer does. The profile's location list is
// dropped, memory is collected, returned to the system and written over,
// and every frame of every sample must still read as it did.
func TestSampleLocationsOutliveTheList(t *testing.T) {
	raw := rawProfile(t, gen.Generate(20000, 4000, 3000, 4, 9))
	got, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	type frame struct{ id, addr uint64 }
	// The samples whose frames fill the first block: the others' location
	// slices are dropped (the last block, of what is left, is an ordinary
	// array, and would keep the locations alive by itself).
	var want [][]frame
	frames := 0
	for _, s := range got.Sample {
		frames += len(s.Location)
		if frames > buildBlock {
			break
		}
		var w []frame
		for _, l := range s.Location {
			w = append(w, frame{l.ID, l.Address})
		}
		want = append(want, w)
	}
	if frames <= buildBlock || len(want) < 100 {
		t.Fatalf("%d frames, %d samples in the first block: the test needs more than a block", frames, len(want))
	}
	for _, s := range got.Sample[len(want):] {
		s.Location = nil
	}
	got.Location, got.Function, got.Mapping = nil, nil, nil
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	var churn [][]byte
	for range 4 {
		runtime.GC()
		debug.FreeOSMemory()
		for range 4000 {
			b := make([]byte, 1024)
			for j := range b {
				b[j] = 0xa5
			}
			churn = append(churn, b)
		}
	}
	runtime.KeepAlive(churn)
	for i, s := range got.Sample[:len(want)] {
		for j, l := range s.Location {
			if g := (frame{l.ID, l.Address}); g != want[i][j] {
				t.Fatalf("sample %d frame %d reads %+v after collections, was %+v", i, j, g, want[i][j])
			}
		}
	}
}
