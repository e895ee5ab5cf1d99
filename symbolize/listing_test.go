package symbolize

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
)

// TestListingSharesStore: the annotate view's listing reads the binary's
// symbol and line tables from the one store symbolization fills, keyed by
// build ID: a listing loads the code facet and the symbols once, a
// symbolization after it loads nothing, nor does a second listing; a
// listing after symbolization loads only the code.
func TestListingSharesStore(t *testing.T) {
	exe, err := filepath.Abs("../testdata/datatype/datatype-dw5-pie")
	if err != nil {
		t.Fatal(err)
	}
	bid := buildID(t, exe)
	const base = 0x555555554000
	fn := funcAddr(t, exe, "sum_list")
	newP := func() *profile.Profile {
		m := mapBinary(t, exe, bid, base)
		p := newProfile(m)
		l := &profile.Location{ID: 1, Mapping: m, Address: base + fn}
		p.Location = []*profile.Location{l}
		p.Sample = []*profile.Sample{{Location: []*profile.Location{l}, Value: []int64{3}}}
		return p
	}
	ctx := context.Background()
	list := func(s *Symbolizer, p *profile.Profile) {
		t.Helper()
		lst, err := s.Listing(ctx, p, ListingRequest{Fn: "sum_list", Options: DataTypeOptions{NoDebuginfod: true}})
		if err != nil {
			t.Fatal(err)
		}
		l := lst.Listing
		if l.Func.Name != "sum_list" || l.Total != 3 || lst.Total != 3 || len(l.Rows) == 0 || l.Rows[0].PC != fn || l.Rows[0].Self != 3 {
			t.Fatalf("listing of sum_list: %s total %d of %d, %d rows", l.Func.Name, l.Total, lst.Total, len(l.Rows))
		}
		if len(l.Rows[0].Frames) == 0 || l.Rows[0].Frames[0].Line == 0 {
			t.Errorf("sum_list's first instruction has no source line: %+v", l.Rows[0].Frames)
		}
	}
	symbolizeP := func(s *Symbolizer, p *profile.Profile) {
		t.Helper()
		rep, err := s.Symbolize(ctx, p, Options{NoDebuginfod: true})
		if err != nil {
			t.Fatal(err)
		}
		if r := rep.Mappings[0]; r.State != StateSymbolized {
			t.Fatalf("symbolization: %s %s", r.State, r.Reason)
		}
	}

	s := New(hermetic())
	list(s, newP())
	if got := s.Loads(); got != 2 {
		t.Errorf("a listing loaded %d facets, want 2 (the code and the symbols)", got)
	}
	symbolizeP(s, newP())
	list(s, newP())
	if got := s.Loads(); got != 2 {
		t.Errorf("after symbolizing and listing again, %d loads, want 2: the symbols were loaded twice", got)
	}

	s = New(hermetic())
	symbolizeP(s, newP())
	list(s, newP())
	if got := s.Loads(); got != 2 {
		t.Errorf("symbolized then listed: %d loads, want 2 (the symbols shared)", got)
	}
	if n, _ := s.CacheStats(); n != 1 {
		t.Errorf("the store holds %d entries for one binary", n)
	}
}
