package pprofwire

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/testdata/bench/gen"
	"viewer/testdata/peers"
)

// testBudget is a Budget of size bytes that counts what is taken.
type testBudget struct {
	size, held int64
}

func (b *testBudget) TryTake(n int64) (func(), bool) {
	if b.held+n > b.size {
		return nil, false
	}
	b.held += n
	return func() { b.held -= n }, true
}

func (b *testBudget) Size() int64 { return b.size }

// streamed runs raw through a Stream of cfg, read in pieces of odd sizes
// as an inflater gives them: it returns the profile, or nil and the bytes
// the stream spooled when it stopped, and the stream.
func streamed(t *testing.T, raw []byte, cfg StreamConfig) (*profile.Profile, []byte, *Stream) {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	restart := func() (io.Reader, error) { return bytes.NewReader(raw), nil }
	s := NewStream(cfg, out, restart)
	n, err := s.Inflate(io.MultiReader(bytes.NewReader(raw[:len(raw)/3]), bytes.NewReader(raw[len(raw)/3:])))
	if err != nil || n != int64(len(raw)) {
		t.Fatalf("Inflate: %d bytes, %v; want %d", n, err, len(raw))
	}
	p, err := s.Finish(true)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if p != s.Profile() {
		t.Fatalf("Profile is not what Finish returned")
	}
	spooled, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	if p != nil && len(spooled) != 0 {
		t.Errorf("decoded, and %d bytes spooled too", len(spooled))
	}
	return p, spooled, s
}

// TestStreamIsDecode checks that a Stream, whatever its chunks, decodes
// each peer profile and a generated one with labels into the profile
// Decode makes of the same bytes; that one it is told is not pprof, or
// that its budget cannot hold, is spooled whole, what it was handed
// inflated again; and that it gives back what it took.
func TestStreamIsDecode(t *testing.T) {
	inputs := peers.Pprofs(t)
	p := gen.Generate(3000, 300, 100, 4, 7)
	for i, s := range p.Sample {
		if i%3 == 1 {
			s.Label = map[string][]string{"thread": {"a"}}
			s.NumLabel = map[string][]int64{"bytes": {int64(i % 5)}}
		}
	}
	inputs["generated with labels"] = rawProfile(t, p)
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		raw := inputs[name]
		want, err := Decode(raw)
		if err != nil {
			t.Fatalf("%s: Decode: %v", name, err)
		}
		for _, chunk := range []int{1, 7, 4099, 0} {
			t.Run(fmt.Sprintf("%s/%d", name, chunk), func(t *testing.T) {
				if chunk == 1 && len(raw) > 200000 {
					t.Skip("a byte at a time is for the small inputs")
				}
				b := &testBudget{size: 1 << 40}
				got, spooled, s := streamed(t, raw, StreamConfig{Limits: Limits{Memory: b}, SniffLen: 4096, Chunk: chunk})
				if got == nil {
					t.Fatalf("not decoded: %d bytes spooled", len(spooled))
				}
				if g, w := got.String(), want.String(); g != w {
					t.Fatalf("streamed:\n%.2000s\nDecode:\n%.2000s", g, w)
				}
				if b.held == 0 {
					t.Errorf("took nothing from the budget")
				}
				if s.Release(); b.held != 0 {
					t.Errorf("%d bytes of the budget not given back", b.held)
				}
			})
		}
		t.Run(name+"/not pprof", func(t *testing.T) {
			got, spooled, _ := streamed(t, raw, StreamConfig{Sniff: func([]byte) bool { return false }, SniffLen: 4096, Chunk: 64})
			if got != nil || !bytes.Equal(spooled, raw) {
				t.Fatalf("decoded %v, spooled %d of %d bytes; want all spooled", got != nil, len(spooled), len(raw))
			}
		})
		t.Run(name+"/over budget", func(t *testing.T) {
			b := &testBudget{size: 8 * 64}
			got, spooled, _ := streamed(t, raw, StreamConfig{Limits: Limits{Memory: b}, SniffLen: 4096, Chunk: 64})
			if got != nil || !bytes.Equal(spooled, raw) {
				t.Fatalf("decoded %v, spooled %d of %d bytes; want all spooled", got != nil, len(spooled), len(raw))
			}
			if b.held != 0 {
				t.Errorf("%d bytes of the budget not given back", b.held)
			}
		})
	}
}
