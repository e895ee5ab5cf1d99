package store

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadAllSized checks that readAll gives all of what it reads whatever
// size it was told: the true one, none, or one that became wrong between
// the stat and the read (the object grew or shrank).
func TestReadAllSized(t *testing.T) {
	want := strings.Repeat("0123456789abcdef", 10000) + "end"
	for _, size := range []int64{-1, 0, 1, int64(len(want)) - 1, int64(len(want)), int64(len(want)) + 5, 1 << 20} {
		got, err := readAll(strings.NewReader(want), size)
		if err != nil || !bytes.Equal(got, []byte(want)) {
			t.Errorf("told %d bytes: %d back, equal %v, error %v", size, len(got), string(got) == want, err)
		}
	}
}
