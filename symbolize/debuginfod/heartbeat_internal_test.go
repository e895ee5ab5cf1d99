package debuginfod

import (
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestHeartbeat: a small body that stalls after its first bytes is still
// reported once a second with the bytes so far, and nothing is reported
// after stop returns. It runs on synctest's clock: the stalls take no
// time, and a 2.5 s stall gets exactly two reports.
func TestHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		var received atomic.Int64
		var mu sync.Mutex
		var reports []int64
		report := func(n int64) { mu.Lock(); reports = append(reports, n); mu.Unlock() }
		go func() {
			pw.Write(make([]byte, 100)) // far under progressEvery
			time.Sleep(2*heartbeatEvery + heartbeatEvery/2)
			pw.Close()
		}()
		stop := heartbeat(&received, report)
		n, err := copyWithProgress(io.Discard, pr, &received, report)
		stop()
		if err != nil || n != 100 {
			t.Fatalf("copy: %d, %v", n, err)
		}
		mu.Lock()
		got := append([]int64(nil), reports...)
		mu.Unlock()
		if len(got) != 2 {
			t.Fatalf("%d reports during a 2.5 s stall, want one a second: %v", len(got), got)
		}
		for _, r := range got {
			if r != 100 {
				t.Errorf("report %d, want the 100 bytes received: %v", r, got)
			}
		}
		time.Sleep(heartbeatEvery + heartbeatEvery/4)
		mu.Lock()
		defer mu.Unlock()
		if len(reports) != len(got) {
			t.Errorf("reports after stop: %v", reports[len(got):])
		}
	})
}
