package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"viewer/testdata/bench/gen"
	"viewer/testdata/peers"
	"viewer/web/ingest/pprofwire"
)

func rawProfile(t testing.TB, p *profile.Profile) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.WriteUncompressed(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// spoolFile writes b to a file as an upload is spooled, and opens it.
func spoolFile(t testing.TB, b []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "upload")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// withChunk sets the chunks the inflater hands over to n bytes.
func withChunk(t testing.TB, n int) {
	was := streamChunk
	streamChunk = n
	t.Cleanup(func() { streamChunk = was })
}

// parsedAs is what a parse gave, as a string to compare: the profile in
// pprof's text form and the format, or the error.
func parsedAs(p *profile.Profile, format string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return format + "\n" + p.String()
}

// streamPeers are the pprof inputs the streamed decode is checked on: the
// peer profiles written as profile.proto, and generated ones with labels,
// comments and repeated stacks.
func streamPeers(t *testing.T) map[string][]byte {
	out := peers.Pprofs(t)
	p := gen.Generate(3000, 300, 100, 4, 7)
	for i, s := range p.Sample {
		switch i % 3 {
		case 1:
			s.Label = map[string][]string{"thread": {"a"}, "x": {"1", "2"}}
		case 2:
			s.NumLabel = map[string][]int64{"bytes": {int64(i % 3)}}
			s.NumUnit = map[string][]string{"bytes": {"bytes"}}
		}
	}
	p.Comments = []string{"one", "two"}
	out["generated with labels"] = rawProfile(t, p)
	return out
}

// TestStreamedDecodeIsParse checks that a gzipped pprof upload decoded as
// it inflates (pprofwire.Stream) is the profile Parse reads from the same bytes
// in memory, on every peer input, with chunks that cut its fields at
// every kind of place, down to one byte; and that the stream, not the
// spooled file's parse, decoded it, without writing the spool file.
func TestStreamedDecodeIsParse(t *testing.T) {
	for name, raw := range streamPeers(t) {
		gz := gzipBytes(raw)
		want := parsedAs(Parse(gz, Limits{}))
		for _, chunk := range []int{1, 3, 64, 4099, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", name, chunk), func(t *testing.T) {
				withChunk(t, chunk)
				if chunk == 1 && len(raw) > 200000 {
					t.Skip("a byte at a time is for the small inputs")
				}
				in, err := inflateLayers(context.Background(), spoolFile(t, gz), Limits{SpoolDir: t.TempDir()}, true)
				if err != nil {
					t.Fatal(err)
				}
				defer in.remove()
				if in.p == nil {
					t.Fatalf("not decoded as it inflated")
				}
				if fi, err := in.src.Stat(); err != nil || fi.Size() != 0 {
					t.Errorf("the decoded stream was spooled too (%v)", err)
				}
				in.release()
				got := parsedAs(ParseFile(context.Background(), spoolFile(t, gz), Limits{SpoolDir: t.TempDir()}))
				if got != want {
					t.Fatalf("streamed:\n%.3000s\nParse:\n%.3000s", got, want)
				}
			})
		}
	}
}

// TestStreamedDecodeCutOrDamaged checks that an upload cut at any byte, or
// with any byte changed, gets from ParseFile what Parse gives for the same
// bytes (the same profile or the same error), whatever the chunks.
func TestStreamedDecodeCutOrDamaged(t *testing.T) {
	p := testProfile()
	p.Sample = append(p.Sample, p.Sample[0])
	raw := encode(t, p, false)
	check := func(t *testing.T, b []byte) {
		t.Helper()
		gz := gzipBytes(b)
		want := parsedAs(Parse(gz, Limits{}))
		got := parsedAs(ParseFile(context.Background(), spoolFile(t, gz), Limits{SpoolDir: t.TempDir()}))
		if got != want {
			t.Fatalf("%x: ParseFile gave\n%.2000s\nParse gave\n%.2000s", b, got, want)
		}
	}
	// Every cut and damaged byte in make test; -short (a laptop's quick
	// run) tries every 11th, offset so that each chunk size meets others.
	chunks, stride := []int{1, 5, 1 << 20}, 1
	if testing.Short() {
		chunks, stride = []int{1, 1 << 20}, 11
	}
	for n, chunk := range chunks {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			withChunk(t, chunk)
			for k := 1 + n%stride; k < len(raw); k += stride {
				check(t, raw[:k])
			}
			for i := n % stride; i < len(raw); i += stride {
				for _, x := range []byte{0x00, 0xff, raw[i] ^ 0x08} {
					b := bytes.Clone(raw)
					b[i] = x
					check(t, b)
				}
			}
		})
	}
	// A gzip stream cut short is named as such, whatever was decoded.
	gz := gzipBytes(raw)
	_, _, err := ParseFile(context.Background(), spoolFile(t, gz[:len(gz)-6]), Limits{SpoolDir: t.TempDir()})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a cut gzip stream: %v, want ErrCorrupt saying it is truncated", err)
	}
}

// TestStreamedDecodeLimits checks that the streamed decode refuses what
// the pre-scan refused, with its errors: counts over Limits, and a memory
// budget the profile does not fit.
func TestStreamedDecodeLimits(t *testing.T) {
	withChunk(t, 64)
	raw := rawProfile(t, gen.Generate(2000, 200, 100, 4, 3))
	gz := gzipBytes(raw)
	for _, lim := range []Limits{
		{MaxSamples: 100}, {MaxFrames: 1000}, {MaxLocations: 10}, {MaxFunctions: 10}, {MaxMappings: 0}, {MaxStrings: 20},
		{Memory: NewBudget(int64(len(raw)), 0)}, {Memory: NewBudget(int64(len(raw))/2, 0)},
	} {
		want := parsedAs(Parse(gz, lim))
		lim.SpoolDir = t.TempDir()
		got := parsedAs(ParseFile(context.Background(), spoolFile(t, gz), lim))
		if got != want {
			t.Errorf("%+v: ParseFile gave\n%.500s\nParse gave\n%.500s", lim, got, want)
		}
	}
	// A budget that is taken waits, then is busy.
	b := NewBudget(64<<20, 50*time.Millisecond)
	give, err := b.take(context.Background(), b.Size(), "other")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { give() }()
	_, _, err = ParseFile(context.Background(), spoolFile(t, gz), Limits{Memory: b, SpoolDir: t.TempDir()})
	if !errors.Is(err, ErrBusy) {
		t.Errorf("a taken budget: %v, want ErrBusy", err)
	}
	// And what the stream took is given back.
	give()
	give = func() {}
	if _, _, err := ParseFile(context.Background(), spoolFile(t, gz), Limits{Memory: b, SpoolDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if release, ok := b.TryTake(b.Size()); !ok {
		t.Errorf("the budget was not given back after a parse")
	} else {
		release()
	}
}

// TestStreamedDecodeCancelled checks that an upload whose client went
// away stops with the context's error.
func TestStreamedDecodeCancelled(t *testing.T) {
	withChunk(t, 64)
	gz := gzipBytes(rawProfile(t, gen.Generate(2000, 200, 100, 4, 3)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ParseFile(ctx, spoolFile(t, gz), Limits{SpoolDir: t.TempDir()}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// FuzzStreamedDecode checks, on arbitrary bytes gzipped, that ParseFile
// (the stream, cutting fields every 7 bytes) gives what Parse gives:
// go test -fuzz FuzzStreamedDecode ./web/ingest.
func FuzzStreamedDecode(f *testing.F) {
	f.Add(rawProfile(f, gen.Generate(100, 20, 15, 2, 1)))
	f.Add(rawProfile(f, testProfile()))
	f.Add([]byte("main;work 3\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		withChunk(t, 7)
		gz := gzipBytes(raw)
		want := parsedAs(Parse(gz, Limits{}))
		got := parsedAs(ParseFile(context.Background(), spoolFile(t, gz), Limits{SpoolDir: t.TempDir()}))
		if got != want {
			t.Fatalf("ParseFile gave\n%.2000s\nParse gave\n%.2000s", got, want)
		}
	})
}

// TestStreamedDecodeHandsOverBigTables checks that a profile whose string
// table passes pprofwire.StreamTableEntries is parsed from the spooled file instead
// (the stream stops holding references), with the profile Parse gives.
func TestStreamedDecodeHandsOverBigTables(t *testing.T) {
	raw := rawProfile(t, gen.Generate(2000, 200, 100, 4, 3))
	// Unreferenced empty strings after the table: valid, and cheap on the wire.
	raw = append(raw, bytes.Repeat([]byte{6<<3 | 2, 0}, pprofwire.StreamTableEntries+1)...)
	gz := gzipBytes(raw)
	in, err := inflateLayers(context.Background(), spoolFile(t, gz), Limits{SpoolDir: t.TempDir()}, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.p != nil {
		t.Errorf("a %d-entry string table was decoded as it inflated", pprofwire.StreamTableEntries+1)
	}
	in.remove()
	want := parsedAs(Parse(gz, Limits{}))
	if got := parsedAs(ParseFile(context.Background(), spoolFile(t, gz), Limits{SpoolDir: t.TempDir()})); got != want {
		t.Errorf("ParseFile gave\n%.500s\nParse gave\n%.500s", got, want)
	}
}

// TestStreamedDecodeHoldsManyLocations checks that a profile of more
// locations than pprofwire.StreamTableEntries, of a real profile's size on the wire
// (gen's "locs" shape: 8 locations a function), is decoded as it
// inflates, every record counted: it went to the spooled file's pre-scan
// and parse, 1.4× the server CPU of the 2M-sample one.
func TestStreamedDecodeHoldsManyLocations(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and decodes a profile of over pprofwire.StreamTableEntries locations: make test runs it")
	}
	sh, _ := gen.Variant("locs", 20000, 5000, pprofwire.StreamTableEntries/8+1000, 4, 1)
	var gz bytes.Buffer
	if err := sh.WriteStream(&gz); err != nil {
		t.Fatal(err)
	}
	in, err := inflateLayers(context.Background(), spoolFile(t, gz.Bytes()), Limits{SpoolDir: t.TempDir()}, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.p == nil {
		t.Fatalf("a profile of %d locations was not decoded as it inflated", sh.Locations)
	}
	defer in.remove()
	if len(in.p.Location) <= pprofwire.StreamTableEntries {
		t.Fatalf("%d locations; want more than %d", len(in.p.Location), pprofwire.StreamTableEntries)
	}
	records := int64(0)
	for _, s := range in.p.Sample {
		records += s.Value[0]
	}
	if records != int64(sh.Samples) {
		t.Errorf("the samples count %d records; want %d", records, sh.Samples)
	}
}

// TestStreamedLabelsEstimate checks that labels on every sample cost the
// streamed decode's estimate their bytes and their label sets' maps, not
// a label map per sample's label: a profile whose samples each carry five
// labels of a thousand label sets is estimated at most 4 MiB (4 kB a
// label set) over the same profile without labels and the bytes its
// labels add; 25,000 distinct samples' labels counted each were 20. Counted per
// label, the 2M-sample one was taken for 200 MB of maps it never made and
// went over the default budget to the spooled parse, at 1.6× the server
// CPU.
func TestStreamedLabelsEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 100k-sample profiles of each shape: make test runs it")
	}
	estimate := func(shape string) (est, size int64) {
		sh, _ := gen.Variant(shape, 100000, 25000, 10000, 20, 1)
		var gz bytes.Buffer
		if err := sh.WriteStream(&gz); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		b := NewBudget(1<<40, time.Second)
		p, _, err := ParseFile(context.Background(), spoolFile(t, gz.Bytes()), Limits{Memory: b, SpoolDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if shape == "labels" && (p.Sample[0].Label == nil || p.Sample[0].NumLabel == nil) {
			t.Fatalf("the labels profile's first sample has no labels: %v %v", p.Sample[0].Label, p.Sample[0].NumLabel)
		}
		return b.peak.Load(), int64(len(raw))
	}
	plain, plainSize := estimate("records")
	labeled, labeledSize := estimate("labels")
	over := labeled - plain - (labeledSize - plainSize)
	t.Logf("estimate without labels %.1f MiB (%.1f MiB inflated), with labels %.1f MiB (%.1f MiB): %.2f MiB more than their bytes",
		mibs(plain), mibs(plainSize), mibs(labeled), mibs(labeledSize), mibs(over))
	if over > 4<<20 {
		t.Errorf("labels made the estimate %.2f MiB more than the bytes they add; want at most 4 MiB", mibs(over))
	}
}

// TestStreamedDecodeHandsChunksBack checks that the streamed decode keeps
// copies of what it needs, not the inflated input: a profile of many
// deep records over a few stacks is decoded holding (and taking from the
// budget) less than a quarter of its inflated bytes, the chunks going
// round, and is the profile Parse reads. Kept whole, the 2M-sample deep shape's
// input was 361 MB of fresh memory until its profile was built.
func TestStreamedDecodeHandsChunksBack(t *testing.T) {
	withChunk(t, 64<<10)
	sh, _ := gen.Variant("deep", 200000, 100, 50, 4, 5)
	raw := rawProfile(t, sh.Generate())
	gz := gzipBytes(raw)
	b := NewBudget(1<<30, 0)
	in, err := inflateLayers(context.Background(), spoolFile(t, gz), Limits{SpoolDir: t.TempDir(), Memory: b}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer in.remove()
	if in.p == nil {
		t.Fatal("not decoded as it inflated")
	}
	if release, ok := b.TryTake(b.Size() - int64(len(raw))/4); !ok {
		lo, hi := int64(0), b.Size()
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if r, ok := b.TryTake(mid); ok {
				r()
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		t.Errorf("the stream holds %d bytes, a quarter or more of the %d inflated bytes", b.Size()-lo, len(raw))
	} else {
		release()
	}
	in.release()
	want := parsedAs(Parse(gz, Limits{}))
	if got := parsedAs(ParseFile(context.Background(), spoolFile(t, gz), Limits{SpoolDir: t.TempDir()})); got != want {
		t.Errorf("ParseFile gave\n%.500s\nParse gave\n%.500s", got, want)
	}
}
