package perfdata

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"viewer/symbolize/sampling"
)

// synthStream is a pipe-mode perf.data of n cpu-clock samples of one
// program over 10 s (its SAMPLE_TIME header feature says so): 4 threads,
// each sample a 12-frame call chain whose leaf is one of leaves addresses.
func synthStream(n, leaves int) []byte {
	const st = sIP | sTID | sTime | sPeriod | sCallchain
	w := newPipeWriter()
	attr := make([]byte, 128)
	binary.LittleEndian.PutUint32(attr[0:], 1) // PERF_TYPE_SOFTWARE
	binary.LittleEndian.PutUint32(attr[4:], 128)
	binary.LittleEndian.PutUint64(attr[8:], 0) // cpu-clock
	binary.LittleEndian.PutUint64(attr[16:], 50000)
	binary.LittleEndian.PutUint64(attr[24:], st)
	w.rec(recHeaderAttr, 0, attr)
	const t0, span = 1_000_000_000, 10_000_000_000
	w.rec(recHeaderFeat, 0, u64s(featSampleTim, t0, t0+span))
	w.rec(recMmap, 2, append(u64s(pidTid(7, 7), 0x400000, 0x100000, 0), cstring("/usr/bin/app")...))
	w.rec(recComm, 0, append(u64s(pidTid(7, 7)), cstring("app")...))
	chain := []uint64{contextUser, 0}
	for k := range 11 {
		chain = append(chain, 0x401000+uint64(k)*0x100)
	}
	for i := range n {
		leaf := 0x480000 + uint64(i%leaves)*16
		chain[1] = leaf
		b := u64s(leaf, pidTid(7, 7+uint32(i%4)), t0+uint64(i)*(span/uint64(n)), 50000, uint64(len(chain)))
		w.rec(recSample, 2, append(b, u64s(chain...)...))
	}
	return w.b
}

// TestScanMemoryBounded converts synthesized recordings of 20,000 and
// 160,000 sample records of the same few stacks and checks what a user
// of a huge recording relies on: the Scan's estimate of the samples and
// frames the conversion keeps is the conversion's own count, the index
// it reports to Options.Reserve is what it holds, and the live heap
// while the records are aggregated (the mapped input aside) is that
// index plus what is kept, whatever the number of records: no record is
// kept decoded.
func TestScanMemoryBounded(t *testing.T) {
	var beyondIndex []int64
	for _, n := range []int{20_000, 160_000} {
		data := synthStream(n, 8)
		h := newHeapPeak()
		var reserved int64
		opt := Options{
			Reserve:  func(k int64) error { reserved += k; return nil },
			Progress: h.progress,
		}
		f, err := Scan(data, opt)
		if err != nil {
			t.Fatal(err)
		}
		if reserved != f.IndexMemory() || f.IndexMemory() < 16*int64(n) {
			t.Errorf("%d records: Reserve was told %d bytes, the index holds %d", n, reserved, f.IndexMemory())
		}
		ests := f.Estimates(0)
		p, err := Convert(f, ConvertOptions{})
		if err != nil {
			t.Fatal(err)
		}
		frames := 0
		for _, s := range p.Sample {
			frames += len(s.Location)
		}
		e := ests[0]
		if e.Samples != int64(len(p.Sample)) || e.Frames != int64(frames) || e.Locations != int64(len(p.Location)) {
			t.Errorf("%d records: estimated %d samples, %d frames, %d locations; the conversion kept %d, %d, %d",
				n, e.Samples, e.Frames, e.Locations, len(p.Sample), frames, len(p.Location))
		}
		peak := h.peak
		if peak == 0 || peak > f.IndexMemory()+e.Memory()+2<<20 {
			t.Errorf("%d records: live heap while aggregating peaked %d bytes over the start; the index is %d, the estimate of what is kept %d",
				n, peak, f.IndexMemory(), e.Memory())
		}
		beyondIndex = append(beyondIndex, peak-f.IndexMemory())
		t.Logf("%d records (%d bytes): %d samples kept; heap peak +%d KiB while aggregating, of which the index %d KiB; estimate of what is kept %d KiB",
			n, len(data), len(p.Sample), peak>>10, f.IndexMemory()>>10, e.Memory()>>10)
		runtime.KeepAlive(data)
	}
	if beyondIndex[1] > beyondIndex[0]+2<<20 {
		t.Errorf("beyond the index, 8 times the records took %d bytes of heap, against %d", beyondIndex[1], beyondIndex[0])
	}
}

// TestConvertStopsAtFrameLimit checks MaxFrames is counted as Convert
// keeps samples, stacks cut to MaxStackDepth, and stops it there.
func TestConvertStopsAtFrameLimit(t *testing.T) {
	data := synthStream(1000, 8) // 4 threads × 8 leaves × time buckets, 12 frames each
	f, err := Scan(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Convert(f, ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(p.Sample)
	for _, tc := range []struct {
		maxFrames, depth int
		fail             bool
	}{
		{12 * n, 0, false}, {12*n - 1, 0, true}, {5 * n, 5, false}, {5*n - 1, 5, true},
	} {
		f, _ := Scan(data, Options{})
		_, err := Convert(f, ConvertOptions{MaxFrames: tc.maxFrames, MaxStackDepth: tc.depth})
		var le *LimitError
		if got := err != nil; got != tc.fail || (err != nil && (!errors.As(err, &le) || le.What != "frames")) {
			t.Errorf("%d samples of 12 frames, MaxFrames %d, depth %d: %v", n, tc.maxFrames, tc.depth, err)
		}
	}
}

// heapPeak is the peak of the live heap over where it was when made,
// measured (after a GC) at every fourth "aggregating stacks" progress
// report and the last.
type heapPeak struct {
	base, peak int64
	calls      int
}

func newHeapPeak() *heapPeak {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &heapPeak{base: int64(ms.HeapAlloc)}
}

func (h *heapPeak) progress(phase string, done, total int64) {
	if phase != "aggregating stacks" {
		return
	}
	if h.calls++; h.calls%4 != 0 && done != total {
		return
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = max(h.peak, int64(ms.HeapAlloc)-h.base)
}

// TestEstimateCountsUnwoundStacks scans the --call-graph=dwarf recording
// keeping its user stacks, as a conversion that unwinds them does, and
// wants the estimate of what that conversion keeps to count the unwound
// user frames: the samples, frames and locations the conversion kept, or
// a few more (stale code addresses in the stack copies: a quarter more
// frames here), never fewer.
// Without the user stacks each stack is the kernel's part alone, and the
// estimate falls short of what unwinding keeps.
func TestEstimateCountsUnwoundStacks(t *testing.T) {
	_, finder := perfHome(t)
	data := readFile(t, "dwarf.data")
	f, err := Scan(data, Options{UserStacks: true})
	if err != nil {
		t.Fatal(err)
	}
	// Its header has no sample times (perf 6.1 with --buildid-mmap): the
	// estimate without a time label is that of one bucket for the whole.
	ests := f.Estimates(0)
	e := ests[len(ests)-1]
	p, err := Convert(f, ConvertOptions{Binaries: finder, TimeBucket: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	for _, s := range p.Sample {
		frames += len(s.Location)
	}
	kept := Estimate{Samples: int64(len(p.Sample)), Frames: int64(frames), Locations: int64(len(p.Location))}
	t.Logf("estimated %d samples, %d frames, %d locations, %d bytes; unwinding kept %d, %d, %d",
		e.Samples, e.Frames, e.Locations, e.Memory(), kept.Samples, kept.Frames, kept.Locations)
	within := func(est, got int64) bool { return est >= got && est <= got+got/3 }
	if !within(e.Samples, kept.Samples) || !within(e.Frames, kept.Frames) || !within(e.Locations, kept.Locations) {
		t.Errorf("estimated %d samples, %d frames, %d locations; unwinding kept %d, %d, %d: want as many, or up to a third more",
			e.Samples, e.Frames, e.Locations, kept.Samples, kept.Frames, kept.Locations)
	}
	bare, err := Scan(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := bare.Estimates(0)
	t.Logf("without the user stacks: %d samples, %d frames, %d locations", b[len(b)-1].Samples, b[len(b)-1].Frames, b[len(b)-1].Locations)
	if b[len(b)-1].Frames >= kept.Frames {
		t.Errorf("without the user stacks, %d frames estimated, as many as unwinding keeps (%d): the recording does not tell", b[len(b)-1].Frames, kept.Frames)
	}
}

// TestEstimateWithoutHeaderTimes scans the synthesized recording without
// its SAMPLE_TIME header feature, as perf record -z and --buildid-mmap
// write it: the widths are counted from the first sample's time, and
// each estimate is what Convert keeps at its width, Convert's own first,
// then up to three coarser and one bucket for the whole recording.
func TestEstimateWithoutHeaderTimes(t *testing.T) {
	var data []byte
	full := synthStream(20_000, 8)
	data = append(data, full[:pipeHeaderSize]...)
	for off := pipeHeaderSize; off < len(full); {
		size := int(binary.LittleEndian.Uint16(full[off+6:]))
		if binary.LittleEndian.Uint32(full[off:]) != recHeaderFeat {
			data = append(data, full[off:off+size]...)
		}
		off += size
	}
	f, err := Scan(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ests := f.Estimates(0)
	if len(ests) < 3 || ests[0].Bucket != sampling.TimeBucket(f.sampleLast-f.sampleFirst) || ests[len(ests)-2].Bucket <= f.sampleLast-f.sampleFirst || ests[len(ests)-1].Bucket != 0 {
		t.Fatalf("estimates at widths %v; want Convert's own (%d) first, one bucket, then none", ests, sampling.TimeBucket(f.sampleLast-f.sampleFirst))
	}
	for _, e := range ests[:len(ests)-1] {
		f, _ := Scan(data, Options{})
		p, err := Convert(f, ConvertOptions{TimeBucket: int64(e.Bucket)})
		if err != nil {
			t.Fatal(err)
		}
		if e.Samples != int64(len(p.Sample)) || e.Labels == 0 {
			t.Errorf("width %d: estimated %d samples, %d labels; Convert kept %d samples", e.Bucket, e.Samples, e.Labels, len(p.Sample))
		}
	}
}

// TestEstimateDamagedTimes scans recordings without the header's sample
// times whose samples span nearly all of 64 bits, as a damaged or hostile
// file's do: Estimates must end (the series of widths once wrapped past
// 2^64 and looped for ever) and Convert must still keep every sample.
func TestEstimateDamagedTimes(t *testing.T) {
	for _, last := range []uint64{math.MaxUint64, math.MaxUint64 / 2, 10_000_000_000_000_000_000, 1 << 62} {
		const st = sIP | sTID | sTime | sPeriod
		w := newPipeWriter()
		attr := make([]byte, 128)
		binary.LittleEndian.PutUint32(attr[0:], 1)
		binary.LittleEndian.PutUint32(attr[4:], 128)
		binary.LittleEndian.PutUint64(attr[16:], 50000)
		binary.LittleEndian.PutUint64(attr[24:], st)
		w.rec(recHeaderAttr, 0, attr)
		w.rec(recMmap, 2, append(u64s(pidTid(7, 7), 0x400000, 0x100000, 0), cstring("/usr/bin/app")...))
		for _, ts := range []uint64{1, last / 3, last} {
			w.rec(recSample, 2, u64s(0x401000, pidTid(7, 7), ts, 50000))
		}
		done := make(chan []Estimate, 1)
		go func() {
			f, err := Scan(w.b, Options{})
			if err != nil {
				t.Error(err)
				done <- nil
				return
			}
			done <- f.Estimates(0)
		}()
		select {
		case ests := <-done:
			if len(ests) == 0 {
				t.Errorf("samples up to time %d: no estimates", last)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("samples up to time %d: Estimates has not ended after 20 s", last)
		}
		f, err := Scan(w.b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Convert(f, ConvertOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := total(p); n != 3 { // Value[0] counts samples
			t.Errorf("samples up to time %d: Convert kept %d of 3 samples", last, n)
		}
	}
}
