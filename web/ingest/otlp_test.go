package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/symbolize"
	"viewer/web/ingest/otlptest"
)

// sampleKeys renders each sample as its stack (binary, build ID and
// address, or function and line, leaf first), labels and values, so two
// profiles compare by what a user sees in them, not by IDs.
func sampleKeys(p *profile.Profile) []string {
	var out []string
	for _, s := range p.Sample {
		var b strings.Builder
		for _, l := range s.Location {
			if len(l.Line) > 0 {
				fmt.Fprintf(&b, "%s:%d;", l.Line[0].Function.Name, l.Line[0].Line)
			} else {
				fmt.Fprintf(&b, "%s@%s+%#x;", l.Mapping.File, l.Mapping.BuildID, l.Address)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Label)) {
			fmt.Fprintf(&b, " %s=%v", k, s.Label[k])
		}
		for _, k := range slices.Sorted(maps.Keys(s.NumLabel)) {
			fmt.Fprintf(&b, " %s=%v", k, s.NumLabel[k])
		}
		fmt.Fprintf(&b, " %v", s.Value)
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}

// TestOTLPRoundTrip sends a native profile as an OTLP request, protobuf and
// JSON, gzipped and not, and checks the profile viewer reads is the one
// sent: the same stacks (addresses as call sites, as for any upload),
// build IDs, values, sample types, and labels with the resource's added.
func TestOTLPRoundTrip(t *testing.T) {
	sent := otlptest.Native()
	req := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(sent, otlptest.CheckoutResource))
	pb, err := req.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	js, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := sent.Copy()
	symbolize.CallSites(want)
	for _, s := range want.Sample {
		for k, v := range otlptest.CheckoutResource {
			s.Label[k] = []string{v}
		}
	}
	for name, data := range map[string][]byte{"protobuf": pb, "json": js, "protobuf.gz": gzipBytes(pb), "json.gz": gzipBytes(js)} {
		t.Run(name, func(t *testing.T) {
			got, format, err := Parse(data, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if format != otlpFormat.Name {
				t.Errorf("read as %q, want %q", format, otlpFormat.Name)
			}
			if g, w := typeNames(got), typeNames(want); g != w {
				t.Errorf("sample types %s, want %s", g, w)
			}
			if got.Period != want.Period || got.PeriodType.Type != "cpu" || got.TimeNanos != want.TimeNanos {
				t.Errorf("period %d %v time %d, want %d cpu %d", got.Period, got.PeriodType, got.TimeNanos, want.Period, want.TimeNanos)
			}
			if g, w := sampleKeys(got), sampleKeys(want); !slices.Equal(g, w) {
				t.Errorf("samples:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			if !slices.Contains(got.Comments, "service.name=checkout") {
				t.Errorf("comments %q lack the resource's service.name", got.Comments)
			}
		})
	}
}

// TestOTLPEachProfileApart: the endpoint's reader keeps each OTLP profile
// as its own, titled by its resource, and rejects a malformed one while
// keeping the others.
func TestOTLPEachProfileApart(t *testing.T) {
	ps := otlptest.FromPprof(otlptest.Native(), otlptest.CheckoutResource)
	// A second resource whose profile names a stack outside the table.
	bad := ps.ResourceProfiles().AppendEmpty()
	bad.Resource().Attributes().PutStr("service.name", "broken")
	pr := bad.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	pr.Samples().AppendEmpty().SetStackIndex(9999)
	res, err := FromOTLP(ps, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Profiles) != 2 || res.Rejected != 1 {
		t.Fatalf("%d profiles, %d rejected; want 2 (one per sample type) and 1", len(res.Profiles), res.Rejected)
	}
	if !strings.Contains(res.Message(), "stack index 9999 is outside the dictionary") {
		t.Errorf("rejection message %q does not say what was wrong", res.Message())
	}
	for _, op := range res.Profiles {
		if op.Title != "checkout on host-1 (checkout-svc)" || op.Service != "checkout" {
			t.Errorf("title %q service %q", op.Title, op.Service)
		}
		if len(op.Profile.SampleType) != 1 || len(op.Profile.Sample) != 3 {
			t.Errorf("profile %v with %d samples, want one type and 3 samples", op.Profile.SampleType, len(op.Profile.Sample))
		}
	}
}

// TestOTLPLimits: the request's samples, frames and locations count
// against the same limits as any upload, and a sample with timestamps but
// no values counts one per timestamp.
func TestOTLPLimits(t *testing.T) {
	ps := otlptest.FromPprof(otlptest.Native(), otlptest.CheckoutResource)
	if _, err := FromOTLP(ps, Limits{MaxSamples: 5}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-samples") {
		t.Errorf("6 samples over --max-samples 5: %v", err)
	}
	if _, err := FromOTLP(ps, Limits{MaxFrames: 5}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-frames") {
		t.Errorf("6 frames over --max-frames 5: %v", err)
	}
	if _, err := FromOTLP(ps, Limits{MaxLocations: 3}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-locations") {
		t.Errorf("4 locations over --max-locations 3: %v", err)
	}
	s := ps.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().At(0)
	s.Values().FromRaw(nil)
	s.TimestampsUnixNano().FromRaw([]uint64{1, 2, 3, 4})
	res, err := FromOTLP(ps, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if v := res.Profiles[0].Profile.Sample[0].Value[0]; v != 4 {
		t.Errorf("a sample with 4 timestamps and no values counts %d, want 4", v)
	}
}

// TestOTLPBadInput: damaged bytes are named as OTLP, and an empty request
// says it holds no profiles.
func TestOTLPBadInput(t *testing.T) {
	pb, _ := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.Native(), otlptest.CheckoutResource)).MarshalProto()
	_, _, err := Parse(pb[:len(pb)/2], Limits{})
	if err == nil || !strings.Contains(err.Error(), "OTLP") {
		t.Errorf("half an OTLP request: %v, want an error naming OTLP", err)
	}
	empty, _ := pprofileotlp.NewExportRequestFromProfiles(pprofile.NewProfiles()).MarshalJSON()
	if _, _, err := Parse(empty, Limits{}); err == nil || !strings.Contains(err.Error(), "OTLP") {
		t.Errorf("an empty OTLP JSON request: %v", err)
	}
	// A pprof profile is still read as pprof, not OTLP.
	var b bytes.Buffer
	otlptest.Native().Write(&b)
	if _, format, err := Parse(b.Bytes(), Limits{}); err != nil || format != pprofFormat.Name {
		t.Errorf("a pprof profile: format %q, %v", format, err)
	}
}

// TestOTLPRepeatedAttributes: an exporter may write an attribute once per
// sample in the table instead of once; equal entries (key, unit and
// value) give the samples one shared label map, and entries that only
// look alike (a string "1" and an int 1, an int with a unit and one
// without) stay apart.
func TestOTLPRepeatedAttributes(t *testing.T) {
	ps := pprofile.NewProfiles()
	d := ps.Dictionary()
	for _, s := range []string{"", "a", "bytes", "f"} {
		d.StringTable().Append(s)
	}
	d.MappingTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()
	d.FunctionTable().AppendEmpty().SetNameStrindex(3)
	d.LocationTable().AppendEmpty().Lines().AppendEmpty().SetFunctionIndex(1)
	d.StackTable().AppendEmpty().LocationIndices().Append(1)
	attr := func(unit int32, set func(v pcommon.Value)) {
		kv := d.AttributeTable().AppendEmpty()
		kv.SetKeyStrindex(1)
		kv.SetUnitStrindex(unit)
		set(kv.Value())
	}
	str1 := func(v pcommon.Value) { v.SetStr("1") }
	int1 := func(v pcommon.Value) { v.SetInt(1) }
	attr(0, str1) // 1
	attr(0, int1) // 2
	attr(0, str1) // 3: 1 again
	attr(2, int1) // 4: 2 with a unit
	pr := ps.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	for _, ai := range [][]int32{{1}, {2}, {3}, {4}, {1, 3}, {3, 1}} {
		s := pr.Samples().AppendEmpty()
		s.SetStackIndex(1)
		s.Values().Append(1)
		s.AttributeIndices().Append(ai...)
	}
	res, err := FromOTLP(ps, Limits{})
	if err != nil || len(res.Profiles) != 1 {
		t.Fatalf("%v, %+v", err, res)
	}
	smp := res.Profiles[0].Profile.Sample
	type labels struct {
		Str  map[string][]string
		Num  map[string][]int64
		Unit map[string][]string
	}
	want := []labels{
		{Str: map[string][]string{"a": {"1"}}},
		{Str: map[string][]string{}, Num: map[string][]int64{"a": {1}}, Unit: map[string][]string{"a": {""}}},
		{Str: map[string][]string{"a": {"1"}}},
		{Str: map[string][]string{}, Num: map[string][]int64{"a": {1}}, Unit: map[string][]string{"a": {"bytes"}}},
		{Str: map[string][]string{"a": {"1", "1"}}},
		{Str: map[string][]string{"a": {"1", "1"}}},
	}
	for i, s := range smp {
		if got := (labels{s.Label, s.NumLabel, s.NumUnit}); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("sample %d: labels %+v, want %+v", i, got, want[i])
		}
	}
	same := func(a, b map[string][]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	if !same(smp[0].Label, smp[2].Label) || !same(smp[4].Label, smp[5].Label) {
		t.Error("samples with equal attributes at different table indices do not share their labels")
	}
	if same(smp[0].Label, smp[4].Label) {
		t.Error("a sample with one attribute shares the labels of one with two")
	}
}

// TestParseOTLPKeepsNoBody: the profiles ParseOTLP returns share no
// memory with the request body, which ReadOTLP hands to the next request
// once they are parsed: overwriting the body leaves every name, build ID,
// label and comment of the rich fixture's profile as it was.
func TestParseOTLPKeepsNoBody(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		req := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.Rich(), otlptest.CheckoutResource))
		body, err := req.MarshalProto()
		if asJSON {
			body, err = req.MarshalJSON()
		}
		if err != nil {
			t.Fatal(err)
		}
		data, release, err := ReadOTLP(t.Context(), bytes.NewReader(body), int64(len(body)), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseOTLP(context.Background(), data, asJSON, Limits{})
		if err != nil || len(res.Profiles) == 0 {
			t.Fatal(res, err)
		}
		seen := func() string {
			var b strings.Builder
			for _, op := range res.Profiles {
				p := op.Profile
				fmt.Fprintln(&b, op.Title, op.Service, p.Comments, p.DocURL, sampleKeys(p))
				for _, m := range p.Mapping {
					fmt.Fprintln(&b, m.File, m.BuildID)
				}
				for _, f := range p.Function {
					fmt.Fprintln(&b, f.Name, f.SystemName, f.Filename)
				}
			}
			return b.String()
		}
		want := seen()
		for i := range data {
			data[i] = 'x'
		}
		release()
		if got := seen(); got != want {
			t.Errorf("json %v: after the body was overwritten the profiles read\n%s\nnot\n%s", asJSON, got, want)
		}
	}
}

// TestReadOTLPLength: a body shorter or longer than its Content-Length is
// refused as corrupt, and one of exactly that length is read whole, in
// every size class of ReadOTLP's buffers.
func TestReadOTLPLength(t *testing.T) {
	for _, n := range []int{1, 100, 64 << 10, 64<<10 + 1, 1 << 20, OTLPInMemory, OTLPInMemory + 1} {
		body := bytes.Repeat([]byte{7}, n)
		data, release, err := ReadOTLP(t.Context(), bytes.NewReader(body), int64(n), Limits{})
		if err != nil || !bytes.Equal(data, body) {
			t.Fatalf("%d bytes: read %d, %v", n, len(data), err)
		}
		release()
		if _, _, err := ReadOTLP(t.Context(), bytes.NewReader(body), int64(n+1), Limits{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d bytes sent as %d: %v, want ErrCorrupt", n, n+1, err)
		}
		if _, _, err := ReadOTLP(t.Context(), bytes.NewReader(body), int64(n-1), Limits{}); n > 1 && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d bytes sent as %d: %v, want ErrCorrupt", n, n-1, err)
		}
	}
}
