package profiles

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// The writer runs ahead of a reader that has not started, up to the
// bound, and the reader then gets every byte in order.
func TestAheadBufferHoldsUntilRead(t *testing.T) {
	b := newAheadBuffer(1 << 10)
	want := make([]byte, 5000)
	for i := range want {
		want[i] = byte(rand.IntN(256))
	}
	wrote := make(chan int, 1)
	go func() {
		n := 0
		for off := 0; off < len(want); off += 300 {
			k, err := b.Write(want[off:min(off+300, len(want))])
			if err != nil {
				t.Error(err)
				break
			}
			n += k
			if n >= 900 && n < 1200 {
				wrote <- n // written without a reader: ahead of it
			}
		}
		b.CloseWithError(nil)
	}()
	if n := <-wrote; n < 900 {
		t.Fatalf("wrote %d bytes ahead, want at least 900", n)
	}
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
}

// A reader that stops fails the writer, which would otherwise wait; a
// writer's error reaches the reader after what was written.
func TestAheadBufferErrors(t *testing.T) {
	b := newAheadBuffer(10)
	if _, err := b.Write(make([]byte, 20)); err != nil { // one write over the bound is held
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Write([]byte("more"))
		done <- err
	}()
	b.CloseRead(errors.New("stopped"))
	if err := <-done; err == nil {
		t.Fatal("a write after the reader stopped succeeded")
	}

	b = newAheadBuffer(100)
	b.Write([]byte("abc"))
	bad := errors.New("encoding failed")
	b.CloseWithError(bad)
	got, err := io.ReadAll(b)
	if string(got) != "abc" || !errors.Is(err, bad) {
		t.Fatalf("read %q, %v; want abc, %v", got, err, bad)
	}
}
