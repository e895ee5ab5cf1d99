package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestGunzipMembers decompresses gzip streams of one and of many members
// (as stored copies are written) whose sizes fall on, before and past the
// chunk sizes gunzip reads in, and checks each byte comes back; a stream
// cut short is named truncated, and one over the limit too large.
func TestGunzipMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3<<20 + 12345} {
		want := make([]byte, size+8)
		for i := 0; i < size; i += 8 {
			binary.LittleEndian.PutUint64(want[i:], rng.Uint64()&0x0f0f0f0f0f0f0f0f) // compressible, not trivially
		}
		want = want[:size]
		for _, member := range []int{size + 1, 1 << 20, 300000} {
			var gz bytes.Buffer
			for off := 0; off == 0 || off < size; off += member {
				zw := gzip.NewWriter(&gz)
				zw.Write(want[off:min(off+member, size)])
				zw.Close()
			}
			got, err := gunzip(gz.Bytes(), 0)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%d bytes in members of %d: %d bytes back, equal %v, error %v", size, member, len(got), bytes.Equal(got, want), err)
			}
			if size < 1<<20 {
				continue
			}
			if _, err := gunzip(gz.Bytes()[:gz.Len()-gz.Len()/3], 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "truncated") {
				t.Errorf("%d bytes in members of %d, cut short: error %v, want ErrCorrupt naming it truncated", size, member, err)
			}
			if _, err := gunzip(gz.Bytes(), int64(size-1)); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%d bytes in members of %d, limit one less: error %v, want ErrTooLarge", size, member, err)
			}
		}
	}
}
