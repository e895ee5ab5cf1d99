// Package heappeak measures, for tests, the most heap a piece of work
// held: the budget tests compare it with what the server estimated.
package heappeak

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Peak is what a watch saw, each above its value at the start.
type Peak struct {
	// Objects is the peak of live and unswept objects: what the process
	// held, garbage included, so it moves with the collector's pacing
	// (up to twice the live heap under GOGC=100).
	Objects uint64
	// Live is the peak of the heap marked live by a collection that ended
	// during the watch: what the work kept, whatever the pacing.
	Live uint64
}

// Watch samples the heap's live and unswept objects every millisecond
// until stopped, and returns the peak above what it was at the start
// (after a collection).
func Watch() (stop func() uint64) {
	s := WatchPeak()
	return func() uint64 { return s().Objects }
}

// WatchPeak is Watch reporting the live heap's peak as well.
func WatchPeak() (stop func() Peak) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	base := Peak{Objects: s[0].Value.Uint64(), Live: s[1].Value.Uint64()}
	var objects, live atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > objects.Load() {
				objects.Store(v)
			}
			if v := s[1].Value.Uint64(); v > live.Load() {
				live.Store(v)
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	})
	above := func(p, b uint64) uint64 {
		if p > b {
			return p - b
		}
		return 0
	}
	return func() Peak {
		close(done)
		wg.Wait()
		return Peak{Objects: above(objects.Load(), base.Objects), Live: above(live.Load(), base.Live)}
	}
}
