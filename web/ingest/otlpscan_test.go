package ingest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web/ingest/otlptest"
)

// decodedCounts is what pdata decoded of a request, counted as the
// pre-scan counts it (frames: each sample's stack's locations, their
// lines each; indices out of their table count as the pre-scan does).
func decodedCounts(ps pprofile.Profiles) otlpCounts {
	d := ps.Dictionary()
	c := otlpCounts{
		strings: int64(d.StringTable().Len()), attributes: int64(d.AttributeTable().Len()), stacks: int64(d.StackTable().Len()),
		links: int64(d.LinkTable().Len()), locations: int64(d.LocationTable().Len()), functions: int64(d.FunctionTable().Len()),
		mappings: int64(d.MappingTable().Len()),
	}
	for _, l := range d.LocationTable().All() {
		c.lines += int64(l.Lines().Len())
	}
	stackFrames := make([]int64, d.StackTable().Len())
	for i, s := range d.StackTable().All() {
		c.stackLocations += int64(s.LocationIndices().Len())
		for _, li := range s.LocationIndices().All() {
			if li >= 0 && int(li) < d.LocationTable().Len() {
				stackFrames[i] += int64(max(1, d.LocationTable().At(int(li)).Lines().Len()))
			} else {
				stackFrames[i]++
			}
		}
	}
	for _, rp := range ps.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				c.profiles++
				for _, s := range p.Samples().All() {
					c.samples++
					if si := s.StackIndex(); si >= 0 && int(si) < len(stackFrames) {
						c.frames += stackFrames[si]
					}
				}
			}
		}
	}
	return c
}

// FuzzPrescanOTLP feeds the OTLP pre-scan arbitrary bytes, as protobuf
// and, when they start with '{', as OTLP JSON: go test -fuzz
// FuzzPrescanOTLP ./web/ingest. It never panics; whatever pdata decodes
// without error, the pre-scan counted exactly (its tables, lines, stack
// locations, profiles, samples and frames), so no table reaches the
// decoder uncounted; and over a limit it refuses, naming the flag.
func FuzzPrescanOTLP(f *testing.F) {
	for _, p := range []func() pprofile.Profiles{
		func() pprofile.Profiles { return otlptest.FromPprof(otlptest.Native(), otlptest.CheckoutResource) },
		func() pprofile.Profiles { return otlptest.FromPprof(otlptest.Rich(), otlptest.CheckoutResource) },
	} {
		req := pprofileotlp.NewExportRequestFromProfiles(p())
		pb, err := req.MarshalProto()
		if err != nil {
			f.Fatal(err)
		}
		js, err := req.MarshalJSON()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pb)
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		json := isJSON(data)
		c, err := prescanOTLP(data, json, Limits{})
		ps, derr := UnmarshalOTLP(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("pre-scan without limits: %v; want ErrCorrupt or nothing", err)
			}
			if derr == nil && !json {
				t.Fatalf("the pre-scan refused what pdata decodes: %v", err)
			}
			return
		}
		if derr != nil {
			return // pdata refuses it: nothing decoded
		}
		got := decodedCounts(ps)
		if c.frames < got.frames {
			t.Fatalf("pre-scan bound the frames at %d; pdata decoded %d", c.frames, got.frames)
		}
		c.frames = got.frames
		if got != c {
			t.Fatalf("pre-scan counted %+v; pdata decoded %+v", c, got)
		}
		// --max-frames bounds the frames the samples name and the
		// stack and line tables' entries (a table holds entries no
		// sample names): within it exactly the request is accepted, its
		// frames counted between the decoded ones and the limit (exactly
		// when the frames are the largest); one less is refused naming it.
		if limit := max(got.frames, got.stackLocations, got.lines); limit > 0 {
			exact, err := prescanOTLP(data, json, Limits{MaxFrames: int(limit)})
			if err != nil || exact.frames < got.frames || exact.frames > limit {
				t.Fatalf("%d frames (%d stack locations, %d lines) within --max-frames %d: %v, counted %d", got.frames, got.stackLocations, got.lines, limit, err, exact.frames)
			}
			// (A limit of 0 is none: one less than 1 is not a limit.)
			_, err = prescanOTLP(data, json, Limits{MaxFrames: int(limit) - 1})
			if limit > 1 && (!errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-frames")) {
				t.Fatalf("%d frames (%d stack locations, %d lines) over --max-frames %d: %v", got.frames, got.stackLocations, got.lines, limit-1, err)
			}
		}
		if c.locations > 1 {
			_, err := prescanOTLP(data, json, Limits{MaxLocations: int(c.locations) - 1})
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-locations") {
				t.Fatalf("%d locations over --max-locations %d: %v", c.locations, c.locations-1, err)
			}
		}
		// The stream count agrees with the pre-scan.
		if err := countOTLP(bytes.NewReader(data), json, Limits{}); err != nil {
			t.Fatalf("stream count: %v, pre-scan passed", err)
		}
	})
}

// TestPrescanOTLPEmptyFieldName: pdata's JSON decoder reads a field with
// an empty name as its object's end, and the value after it as the
// fields or elements of what is around it, so an empty name smuggled
// tables past the pre-scan (which skipped the value): each request here
// decodes to a table the walk did not count, and is refused.
func TestPrescanOTLPEmptyFieldName(t *testing.T) {
	for _, in := range []string{
		// The value read as the request's own fields: a dictionary.
		`{"dictionary":{"":{"dictionary":{"stackTable":[{},{},{}]}}}}`,
		// The value read as more elements of the array around it:
		// profiles past --max-otlp-profiles.
		`{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"":[{},{},{}]}]}]}]}`,
		// What FuzzPrescanOTLP found: the request ends at the empty name.
		`{"":[],"dictionary":{"stackTable":[{}]}}`,
	} {
		c, err := prescanOTLP([]byte(in), true, Limits{})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "empty name") {
			t.Errorf("%s: pre-scan counted %+v, %v; want it refused naming the empty name", in, c, err)
		}
		if ps, err := UnmarshalOTLP([]byte(in)); err == nil {
			t.Logf("%s: pdata decodes %+v", in, decodedCounts(ps))
		}
	}
}
