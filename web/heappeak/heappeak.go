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

// Watch samples the heap's live and unswept objects every millisecond
// until stopped, and returns the peak above what it was at the start
// (after a collection).
func Watch() (stop func() uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		if p := peak.Load(); p > base {
			return p - base
		}
		return 0
	}
}
