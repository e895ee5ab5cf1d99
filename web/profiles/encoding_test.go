package profiles

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/pprof/profile"
	kgzip "github.com/klauspost/compress/gzip"

	"viewer/web/ingest"
)

// TestWriteUncompressedIsPprofs wants writeUncompressed's bytes to be
// profile.WriteUncompressed's for the recordings and pprof files in
// testdata, and for a profile that sets every field pprof encodes.
func TestWriteUncompressedIsPprofs(t *testing.T) {
	var files []string
	for _, pat := range []string{"../../testdata/perf/*.data", "../../testdata/pprof/*", "../../testdata/peers/pprof/*"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	profiles := map[string]*profile.Profile{"every field": everyField()}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := ingest.Parse(b, ingest.Limits{})
		if err != nil {
			continue // not a profile (a README, a licence)
		}
		profiles[filepath.Base(name)] = p
	}
	if len(profiles) < 10 {
		t.Fatalf("%d profiles parsed from %v; want the testdata recordings", len(profiles), files)
	}
	for name, p := range profiles {
		var got bytes.Buffer
		if err := writeUncompressed(&got, p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want bytes.Buffer
		if err := p.WriteUncompressed(&want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: writeUncompressed gave %d bytes, pprof's encoder %d, not the same", name, got.Len(), want.Len())
		}
		var gz bytes.Buffer
		if err := WriteGzipped(&gz, p); err != nil {
			t.Fatal(err)
		}
		back, err := profile.Parse(&gz)
		if err != nil {
			t.Fatalf("%s: the gzipped copy does not parse: %v", name, err)
		}
		if len(back.Sample) != len(p.Sample) || len(back.Location) != len(p.Location) {
			t.Errorf("%s: the gzipped copy parses to %d samples, %d locations; want %d, %d", name, len(back.Sample), len(back.Location), len(p.Sample), len(p.Location))
		}
	}
}

// everyField is a profile with every field pprof encodes set, and both
// the packed (more than two) and the unpacked form of repeated numbers.
func everyField() *profile.Profile {
	m := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000, Offset: 0x200, File: "/bin/x", BuildID: "abcd",
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
	f1 := &profile.Function{ID: 1, Name: "main", SystemName: "_main", Filename: "x.c", StartLine: 3}
	f2 := &profile.Function{ID: 2, Name: "leaf", Filename: "y.c"}
	l1 := &profile.Location{ID: 1, Mapping: m, Address: 0x1234, Line: []profile.Line{{Function: f2, Line: 9, Column: 4}, {Function: f1, Line: 5}}}
	l2 := &profile.Location{ID: 2, Address: 0x99, IsFolded: true}
	l3 := &profile.Location{ID: 300, Mapping: m, Line: []profile.Line{{Function: f1}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}, {Type: "x", Unit: "bytes"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l1, l2, l3}, Value: []int64{1, 1000, -5},
				Label:    map[string][]string{"b": {"2", "1"}, "a": {"z"}},
				NumLabel: map[string][]int64{"time": {7, 8}, "pid": {1 << 40}}, NumUnit: map[string][]string{"time": {"nanoseconds", "seconds"}}},
			{Location: []*profile.Location{l2}, Value: []int64{2, 0, 3}},
			{Location: []*profile.Location{l1, l3}, Value: []int64{3, 4, 5}, NumLabel: map[string][]int64{"n": {0}}},
		},
		Mapping:           []*profile.Mapping{m},
		Location:          []*profile.Location{l1, l2, l3},
		Function:          []*profile.Function{f1, f2},
		Comments:          []string{"one", "two", "three"},
		DocURL:            "https://example.com/doc",
		DropFrames:        "drop.*",
		KeepFrames:        "keep",
		TimeNanos:         1e18,
		DurationNanos:     5e9,
		PeriodType:        &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:            10000000,
		DefaultSampleType: "cpu",
	}
}

// TestWriteUncompressedLocationArray wants the IDs of locations that lie
// in one array (found by their offset in it, as web/ingest's decoder lays
// them out) encoded as pprof does, for IDs of one to five varint bytes,
// beside a location outside the array and one that follows it without
// being in p.Location.
func TestWriteUncompressedLocationArray(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	arr := make([]profile.Location, 6)
	ids := []uint64{1, 127, 128, 1<<21 - 1, 1 << 21, 1 << 35}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}, Function: []*profile.Function{fn}}
	for i := range arr[:5] {
		arr[i] = profile.Location{ID: ids[i], Line: []profile.Line{{Function: fn}}}
		p.Location = append(p.Location, &arr[i])
	}
	outside := &profile.Location{ID: ids[5], Line: []profile.Line{{Function: fn}}}
	p.Location = append(p.Location, outside)
	arr[5] = profile.Location{ID: 99} // after the array's last location of p
	if got := newLocationIDs(p.Location); got.span != 5*locationSize {
		t.Fatalf("the array spans %d bytes; want its 5 locations' %d", got.span, 5*locationSize)
	}
	all := append(slices.Clone(p.Location), &arr[5])
	for i := range all {
		p.Sample = append(p.Sample,
			&profile.Sample{Location: all[i:], Value: []int64{int64(i + 1)}},
			&profile.Sample{Location: all[i : i+1], Value: []int64{1}},
			&profile.Sample{Location: []*profile.Location{all[i], all[len(all)-1-i]}, Value: []int64{2}})
	}
	var got, want bytes.Buffer
	if err := writeUncompressed(&got, p); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteUncompressed(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("writeUncompressed gave %d bytes, pprof's encoder %d, not the same", got.Len(), want.Len())
	}
}

// dwarfProfile is testdata/perf/dwarf.data converted: a profile whose
// encoding spans several gzip members once gzipMember is made small.
func dwarfProfile(t *testing.T) *profile.Profile {
	t.Helper()
	b, err := os.ReadFile("../../testdata/perf/dwarf.data")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := ingest.Parse(b, ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWriteGzippedMembers wants an encoding longer than a gzip member
// written as several members, compressed in parallel, that Go's gzip
// reader and pprof's parser read back as pprof's encoding, byte for byte;
// and one shorter than a member written as the single gzip stream it
// was before members.
func TestWriteGzippedMembers(t *testing.T) {
	p := dwarfProfile(t)
	var want bytes.Buffer
	if err := p.WriteUncompressed(&want); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { gzipMember = n }(gzipMember)
	for _, size := range []int{4 << 10, want.Len() / 3, want.Len(), 2 * want.Len()} {
		gzipMember = size
		var gz bytes.Buffer
		if err := WriteGzipped(&gz, p); err != nil {
			t.Fatal(err)
		}
		members, got := readMembers(t, gz.Bytes())
		if wantN := max(1, (want.Len()+size-1)/size); members != wantN {
			t.Errorf("members of %d bytes: %d members for %d bytes; want %d", size, members, want.Len(), wantN)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("members of %d bytes: the copy inflates to %d bytes, not pprof's encoding of %d", size, len(got), want.Len())
		}
		back, err := profile.Parse(bytes.NewReader(gz.Bytes()))
		if err != nil {
			t.Fatalf("members of %d bytes: pprof does not parse the copy: %v", size, err)
		}
		if len(back.Sample) != len(p.Sample) || len(back.Location) != len(p.Location) {
			t.Errorf("members of %d bytes: pprof reads %d samples, %d locations; want %d, %d", size, len(back.Sample), len(back.Location), len(p.Sample), len(p.Location))
		}
		if size >= want.Len() {
			var one bytes.Buffer
			zw, _ := kgzip.NewWriterLevel(&one, kgzip.BestSpeed)
			zw.Write(want.Bytes())
			zw.Close()
			if !bytes.Equal(gz.Bytes(), one.Bytes()) {
				t.Errorf("members of %d bytes: a %d-byte encoding is not klauspost's one gzip stream of it", size, want.Len())
			}
		}
	}
}

// readMembers inflates gz member by member with the standard library's
// reader, and returns how many members it has and their bytes.
func readMembers(t *testing.T, gz []byte) (int, []byte) {
	t.Helper()
	br := bytes.NewReader(gz)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n := 0
	for {
		zr.Multistream(false)
		if _, err := io.Copy(&out, zr); err != nil {
			t.Fatalf("member %d: %v", n, err)
		}
		n++
		if err := zr.Reset(br); err == io.EOF {
			return n, out.Bytes()
		} else if err != nil {
			t.Fatalf("member %d: %v", n, err)
		}
	}
}

// TestWriteGzippedWriteError wants a failing writer's error from
// WriteGzipped, however many members are compressing when it fails.
func TestWriteGzippedWriteError(t *testing.T) {
	p := dwarfProfile(t)
	defer func(n int) { gzipMember = n }(gzipMember)
	gzipMember = 4 << 10
	for _, after := range []int{0, 1, 3} {
		w := &failingWriter{after: after}
		err := WriteGzipped(w, p)
		if !errors.Is(err, errDiskFull) {
			t.Errorf("failing after %d writes: %v; want %v", after, err, errDiskFull)
		}
	}
}

var errDiskFull = errors.New("disk full")

type failingWriter struct{ after int }

func (w *failingWriter) Write(b []byte) (int, error) {
	if w.after == 0 {
		return 0, errDiskFull
	}
	w.after--
	return len(b), nil
}

// TestWriteGzippedStoresIncompressible wants members whose bytes barely
// compress stored, at their own size: random bytes under 128 here, 7/8
// of their size at the fastest level, as the location IDs of a profile of
// many locations are about. Members that do compress are compressed, and
// gzip readers read the copy back byte for byte.
func TestWriteGzippedStoresIncompressible(t *testing.T) {
	defer func(n int) { gzipMember = n }(gzipMember)
	gzipMember = 1 << 20
	random := make([]byte, 4<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32() & 0x7f)
	}
	var text []byte
	for i := 0; len(text) < 4<<20; i++ {
		text = fmt.Appendf(text, "github.com/example/pkg.(*Server).handle%d\n", i%5000)
	}
	text = text[:4<<20]
	for _, c := range []struct {
		name     string
		in       []byte
		min, max int // the copy's size
	}{
		{"random", random, len(random), len(random) + 4<<10},
		{"text", text, 0, len(text) / 4},
		{"random then text", append(slices.Clone(random), text...), len(random), len(random) + 4<<10 + len(text)/4},
	} {
		var gz bytes.Buffer
		mw := newMemberWriter(&gz)
		for b := c.in; len(b) > 0; {
			n := min(len(b), 100<<10) // as the encoder's buffer writes
			mw.Write(b[:n])
			b = b[n:]
		}
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		members, got := readMembers(t, gz.Bytes())
		if !bytes.Equal(got, c.in) {
			t.Errorf("%s: the copy inflates to %d bytes, not the %d written", c.name, len(got), len(c.in))
		}
		if want := len(c.in) / gzipMember; members != want {
			t.Errorf("%s: %d members; want %d", c.name, members, want)
		}
		if gz.Len() < c.min || gz.Len() > c.max {
			t.Errorf("%s: %d bytes in a copy of %d; want %d to %d (stored when they do not compress, compressed when they do)", c.name, gz.Len(), len(c.in), c.min, c.max)
		}
	}
}
