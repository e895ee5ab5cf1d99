package profiles_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/unwind"
	"viewer/web/ingest"
	"viewer/web/profiles"
	"viewer/web/store"
)

// countingBinaries counts the unwinder's requests for a binary's call frame
// information: each DWARF-mode parse of a perf.data makes them.
type countingBinaries struct{ n atomic.Int64 }

func (c *countingBinaries) Object(path, buildID string, inode uint64) (*unwind.Object, error) {
	c.n.Add(1)
	return nil, errors.New("not on this machine")
}

func newService(t *testing.T, st store.Store, bins *countingBinaries) *profiles.Service {
	t.Helper()
	s, err := profiles.New(profiles.Config{Store: st, Limits: ingest.Limits{Binaries: bins}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// summary is what a reader of the profile sees of it: its samples' total
// and the frames of its stacks.
func summary(p *profile.Profile) (total int64, frames int) {
	for _, s := range p.Sample {
		total += s.Value[0]
		frames += len(s.Location)
	}
	return total, frames
}

// TestUploadParsedOnce: a DWARF-mode perf.data is parsed and unwound once,
// at upload. After a restart, with the original bytes destroyed, the
// profile still loads whole, its meta, the job's copy and the download
// are served, and nothing is parsed or unwound again.
func TestUploadParsedOnce(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "perf", "dwarf.data"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bins := new(countingBinaries)
	up := newService(t, st, bins)
	id, err := up.Ingest(ctx, data, "dwarf.data")
	if err != nil {
		t.Fatal(err)
	}
	if id != profiles.NewID(data) {
		t.Fatalf("ID %s, want %s", id, profiles.NewID(data))
	}
	if n := up.Conversions(); n != 1 {
		t.Fatalf("upload parsed %d times, want 1", n)
	}
	unwound := bins.n.Load()
	if unwound == 0 {
		t.Fatal("the upload of a DWARF-mode perf.data asked for no binary to unwind with: the test does not see unwinding")
	}
	first, err := up.Profile(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantTotal, wantFrames := summary(first.Profile)
	// A second upload of the same bytes parses them (they are not known to
	// be the same before), but stores nothing new.
	if _, err := up.Ingest(ctx, data, "dwarf.data"); err != nil {
		t.Fatal(err)
	}

	// The original is destroyed; a restarted server (a new Service on the
	// same store, as a replica or a restart is) never reads it.
	if err := st.Put(ctx, profiles.Key(id, profiles.KeyOriginal), bytes.NewReader([]byte("not a profile"))); err != nil {
		t.Fatal(err)
	}
	unwound = bins.n.Load()
	cold := newService(t, st, bins)
	l, err := cold.Profile(ctx, id)
	if err != nil {
		t.Fatalf("cold load with the original destroyed: %v", err)
	}
	if total, frames := summary(l.Profile); total != wantTotal || frames != wantFrames {
		t.Errorf("cold load: %d samples' worth in %d frames, want %d in %d (as at upload)", total, frames, wantTotal, wantFrames)
	}
	if l.Version != first.Version {
		t.Errorf("cold load version %s, at upload %s: ETags would change across a restart", l.Version, first.Version)
	}
	m, err := cold.Meta(ctx, id)
	if err != nil || m.Format != "perf.data" || m.Name != "dwarf.data" {
		t.Errorf("meta after restart: %+v, %v", m, err)
	}
	job, err := cold.Converted(ctx, id)
	if err != nil {
		t.Fatalf("the job's copy: %v", err)
	}
	if job == l.Profile {
		t.Error("the job's copy is the one requests read")
	}
	if total, _ := summary(job); total != wantTotal {
		t.Errorf("the job's copy holds %d, want %d", total, wantTotal)
	}
	rc, err := cold.Download(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := profile.Parse(rc)
	rc.Close()
	if err != nil {
		t.Fatalf("download is not pprof: %v", err)
	}
	if total, _ := summary(got); total != wantTotal {
		t.Errorf("download holds %d, want %d", total, wantTotal)
	}
	if n := cold.Conversions(); n != 0 {
		t.Errorf("after the restart the original was parsed %d times, want 0", n)
	}
	if n := bins.n.Load() - unwound; n != 0 {
		t.Errorf("after the restart %d binaries were asked for to unwind again, want 0", n)
	}
}

// TestLegacyDataDir: a profile stored before converted copies existed (its
// original and meta.json only) is parsed once, on its first load, and the
// copy written then serves every later load.
func TestLegacyDataDir(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "perf", "fp.script"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := profiles.NewID(data)
	if err := st.Put(ctx, profiles.Key(id, profiles.KeyOriginal), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	bins := new(countingBinaries)
	old := newService(t, st, bins)
	l, err := old.Profile(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := old.Conversions(); n != 1 {
		t.Errorf("first load of a legacy profile parsed %d times, want 1", n)
	}
	m, err := old.Meta(ctx, id)
	if err != nil || m.Format != "perf script" {
		t.Errorf("meta derived from the original: %+v, %v (want format perf script)", m, err)
	}
	if ok, err := store.Exists(ctx, st, profiles.Key(id, profiles.KeyConverted)); err != nil || !ok {
		t.Fatalf("no converted copy written on the first load (%v)", err)
	}
	again := newService(t, st, bins)
	l2, err := again.Profile(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := again.Conversions(); n != 0 {
		t.Errorf("a later load parsed the original %d times, want 0", n)
	}
	if a, b := fmt.Sprint(summary(l.Profile)), fmt.Sprint(summary(l2.Profile)); a != b {
		t.Errorf("later load %s, first %s", b, a)
	}
	if _, err := again.Profile(ctx, "aaaaaaaaaaaaaaaaaaaa"); !errors.Is(err, profiles.ErrNotFound) {
		t.Errorf("unknown ID: %v, want ErrNotFound", err)
	}
	var nf *profiles.NotFoundError
	if _, err := again.Meta(ctx, "bad"); !errors.As(err, &nf) || nf.ID != "bad" {
		t.Errorf("invalid ID: %v, want a NotFoundError naming it", err)
	}
}

// TestConvertedCopyOfCached: the job's copy of a just-uploaded profile
// (cloned from the one the upload keeps) is the profile a fresh read of
// the stored converted copy gives (whose decoder merges samples of one
// stack and labels: canonical), and shares no mapping, function, location or sample with the profile
// requests read.
func TestConvertedCopyOfCached(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"fp.data", "system.data", "multi.data", "dwarf.data"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "perf", name))
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		up := newService(t, st, new(countingBinaries))
		id, err := up.Ingest(ctx, data, name)
		if err != nil {
			t.Fatal(err)
		}
		cached, ok := up.Cached(id)
		if !ok {
			t.Fatal("the upload's profile is not kept for its first view")
		}
		job, err := up.Converted(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := newService(t, st, new(countingBinaries)).Converted(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonical(job), canonical(fresh); got != want {
			t.Errorf("%s: the job's copy is not what a fresh read of the converted copy gives:\n%.2000s\nwant\n%.2000s", name, got, want)
		}
		p := cached.Profile
		shared := map[any]bool{}
		for _, m := range p.Mapping {
			shared[m] = true
		}
		for _, f := range p.Function {
			shared[f] = true
		}
		for _, l := range p.Location {
			shared[l] = true
		}
		for _, s := range p.Sample {
			shared[s] = true
		}
		for _, m := range job.Mapping {
			if shared[m] {
				t.Fatalf("%s: the job's copy shares mapping %s", name, m.File)
			}
		}
		for _, f := range job.Function {
			if shared[f] {
				t.Fatalf("%s: the job's copy shares function %s", name, f.Name)
			}
		}
		for _, s := range job.Sample {
			if shared[s] {
				t.Fatalf("%s: the job's copy shares a sample", name)
			}
			for _, l := range s.Location {
				if shared[l] {
					t.Fatalf("%s: a sample of the job's copy is at a location of the cached profile", name)
				}
				if l.Mapping != nil && shared[l.Mapping] {
					t.Fatalf("%s: a location of the job's copy is in a mapping of the cached profile", name)
				}
			}
		}
	}
}

// canonical is p as text: its sample types, mappings, and each stack
// (locations by ID, address, mapping and lines) with its labels and summed
// values, sorted.
func canonical(p *profile.Profile) string {
	var b strings.Builder
	for _, st := range p.SampleType {
		fmt.Fprintf(&b, "type %s/%s\n", st.Type, st.Unit)
	}
	for _, m := range p.Mapping {
		fmt.Fprintf(&b, "mapping %d %x-%x %x %s %s %v\n", m.ID, m.Start, m.Limit, m.Offset, m.File, m.BuildID, m.HasFunctions)
	}
	sums := map[string][]int64{}
	for _, s := range p.Sample {
		var k strings.Builder
		for _, l := range s.Location {
			fmt.Fprintf(&k, "%d@%x", l.ID, l.Address)
			if l.Mapping != nil {
				fmt.Fprintf(&k, "/m%d", l.Mapping.ID)
			}
			for _, ln := range l.Line {
				fmt.Fprintf(&k, ":%s:%d", ln.Function.Name, ln.Line)
			}
			k.WriteByte(' ')
		}
		fmt.Fprintf(&k, "%v %v %v", s.Label, s.NumLabel, s.NumUnit)
		v := sums[k.String()]
		if v == nil {
			v = make([]int64, len(s.Value))
		}
		for i, x := range s.Value {
			v[i] += x
		}
		sums[k.String()] = v
	}
	var lines []string
	for k, v := range sums {
		lines = append(lines, fmt.Sprintf("%s = %v", k, v))
	}
	slices.Sort(lines)
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}

// TestReplaceHandsOverTheSymbolizedCopy: once symbolization stored its copy
// and handed it over (Replace), the next page load on this server serves
// that very profile, decoding nothing; a restart, or another replica on the
// same store, parses the stored copy and sees the same names.
func TestReplaceHandsOverTheSymbolizedCopy(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "perf", "fp.data"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := newService(t, st, new(countingBinaries))
	id, err := s.Ingest(ctx, data, "fp.data")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Profile(ctx, id); err != nil { // the page was open
		t.Fatal(err)
	}
	// What a symbolization job does: name every function, store, hand over.
	p, err := s.Converted(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range p.Function {
		f.Name = fmt.Sprintf("symbolized_%d", i)
	}
	var buf bytes.Buffer
	if err := profiles.WriteGzipped(&buf, p); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, profiles.Key(id, profiles.KeySymbolized), bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	s.Replace(ctx, id, p, buf.Bytes())

	l, err := s.Profile(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if l.Profile != p || !l.Symbolized {
		t.Fatalf("the next load here got a profile decoded again (same object: %v, symbolized: %v), want the one handed over", l.Profile == p, l.Symbolized)
	}
	if l.Meta == nil || l.Meta.Samples == 0 {
		t.Fatalf("the handed-over profile has no meta: %+v", l.Meta)
	}
	// A new Service on the same store is a restart, or another replica.
	for name, other := range map[string]*profiles.Service{"a restart or another replica": newService(t, st, new(countingBinaries))} {
		ol, err := other.Profile(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !ol.Symbolized || ol.Version != l.Version {
			t.Errorf("%s loaded symbolized %v, version %s; want the stored copy, version %s", name, ol.Symbolized, ol.Version, l.Version)
		}
		if got, want := funcNames(ol.Profile), funcNames(p); !slices.Equal(got, want) {
			t.Errorf("%s sees functions %v, want %v", name, got, want)
		}
	}
}

func funcNames(p *profile.Profile) []string {
	var n []string
	for _, f := range p.Function {
		n = append(n, f.Name)
	}
	slices.Sort(n)
	return n
}
