package debuginfod

import (
	"bytes"
	"io"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// The download loop reports about once per 64 KiB however small the reads,
// and writes in large chunks.
func TestCopyWithProgressThrottlesReports(t *testing.T) {
	src := bytes.Repeat([]byte("x"), 1<<20+100)
	var dst countingWriter
	var received atomic.Int64
	var reports []int64
	n, err := copyWithProgress(&dst, iotest.OneByteReader(bytes.NewReader(src[:300<<10])), &received, func(b int64) { reports = append(reports, b) })
	if err != nil || n != 300<<10 {
		t.Fatalf("copy: %d, %v", n, err)
	}
	if len(reports) != 4 { // at 64, 128, 192, 256 KiB
		t.Errorf("%d reports for 300 KiB read a byte at a time, want 4: %v", len(reports), reports)
	}
	dst, reports = countingWriter{}, nil
	n, err = copyWithProgress(&dst, io.LimitReader(bytes.NewReader(src), int64(len(src))), &received, func(b int64) { reports = append(reports, b) })
	if err != nil || n != int64(len(src)) || dst.n != n || received.Load() != n {
		t.Fatalf("copy: %d of %d, wrote %d, received %d, %v", n, len(src), dst.n, received.Load(), err)
	}
	if dst.calls > 3 {
		t.Errorf("%d writes for 1 MiB, want at most 3", dst.calls)
	}
}

type countingWriter struct{ n, calls int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.calls++
	return len(p), nil
}
