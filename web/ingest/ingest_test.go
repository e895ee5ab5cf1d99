package ingest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
)

// testProfile is a small CPU profile: main.main → main.work (3 samples).
func testProfile() *profile.Profile {
	fMain := &profile.Function{ID: 1, Name: "main.main"}
	fWork := &profile.Function{ID: 2, Name: "main.work"}
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", HasFunctions: true}
	lMain := &profile.Location{ID: 1, Mapping: m, Address: 0x401000, Line: []profile.Line{{Function: fMain}}}
	lWork := &profile.Location{ID: 2, Mapping: m, Address: 0x402000, Line: []profile.Line{{Function: fWork}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{lWork, lMain}, Value: []int64{3, 30}}},
		Mapping:    []*profile.Mapping{m},
		Location:   []*profile.Location{lMain, lWork},
		Function:   []*profile.Function{fMain, fWork},
	}
}

func encode(t *testing.T, p *profile.Profile, gz bool) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	if gz {
		err = p.Write(&b)
	} else {
		err = p.WriteUncompressed(&b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzipBytes(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func TestParse(t *testing.T) {
	gz := encode(t, testProfile(), true)
	raw := encode(t, testProfile(), false)
	big := testProfile()
	for i := 0; i < 200; i++ {
		big.Sample = append(big.Sample, big.Sample[0])
	}
	bigGz, bigRaw := encode(t, big, true), encode(t, big, false)
	tests := []struct {
		name    string
		data    []byte
		lim     Limits
		wantErr error
		wantMsg string
	}{
		{name: "gzip", data: gz},
		{name: "uncompressed", data: raw},
		{name: "double gzip", data: gzipBytes(gz)},
		{name: "empty", data: nil, wantErr: ErrEmpty, wantMsg: "no bytes"},
		{name: "empty gzip", data: gzipBytes(nil), wantErr: ErrEmpty, wantMsg: "decompresses to nothing"},
		{name: "truncated gzip", data: gz[:len(gz)/2], wantErr: ErrCorrupt, wantMsg: "truncated"},
		{name: "text", data: []byte("hello, this is not a profile\n"), wantErr: ErrUnknownFormat, wantMsg: "tried pprof"},
		{name: "json", data: []byte(`{"a":1}`), wantErr: ErrUnknownFormat},
		{name: "perf.data magic", data: []byte("PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00"), wantErr: ErrUnknownFormat},
		{name: "protobuf-looking garbage", data: []byte{0x0a, 0x02, 0xff, 0xff}, wantErr: ErrUnknownFormat, wantMsg: "invalid pprof"},
		{name: "over limit compressed", data: gz, lim: Limits{MaxBytes: int64(len(gz)) - 1}, wantErr: ErrTooLarge},
		{name: "over limit after decompression", data: bigGz, lim: Limits{MaxBytes: int64(len(bigRaw)) - 1}, wantErr: ErrTooLarge, wantMsg: "decompresses"},
		{name: "exactly at limit", data: raw, lim: Limits{MaxBytes: int64(len(raw))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, format, err := Parse(tt.data, tt.lim)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("err = %q, want it to mention %q", err, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if format != "pprof" {
				t.Errorf("format = %q, want pprof", format)
			}
			if len(p.Sample) != 1 || p.Sample[0].Value[1] != 30 || p.Sample[0].Location[0].Line[0].Function.Name != "main.work" {
				t.Errorf("parsed profile is wrong:\n%v", p)
			}
		})
	}
}

func TestParseNoSampleTypes(t *testing.T) {
	p := testProfile()
	p.SampleType = nil
	for _, s := range p.Sample {
		s.Value = nil
	}
	_, _, err := Parse(encode(t, p, true), Limits{})
	if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "no sample types") {
		t.Fatalf("err = %v, want a rejection naming the missing sample types", err)
	}
}

func TestParseMaxSamples(t *testing.T) {
	p := testProfile()
	p.Sample = append(p.Sample, p.Sample[0], p.Sample[0])
	_, _, err := Parse(encode(t, p, true), Limits{MaxSamples: 2})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// TestSniffPprof checks the sniff takes every prefix of a profile that
// sets each top-level field of profile.proto (doc_url, a string-table
// index, was taken only as a string: such a profile was not recognised),
// that Parse keeps them, and that text formats are not taken for pprof.
func TestSniffPprof(t *testing.T) {
	p := testProfile()
	p.DropFrames, p.KeepFrames = "runtime\\..*", "main"
	p.TimeNanos, p.DurationNanos = 1e18, 2e9
	p.PeriodType, p.Period = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, 1e7
	p.Comments = []string{"a comment"}
	p.DefaultSampleType = "cpu"
	p.DocURL = "https://example.com/doc"
	raw := encode(t, p, false)
	for n := 1; n <= len(raw); n++ {
		if !sniffPprof(raw[:n]) {
			t.Fatalf("sniffPprof rejects the first %d bytes of a real profile", n)
		}
	}
	got, _, err := Parse(raw, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DocURL != p.DocURL || got.DefaultSampleType != "cpu" || got.DropFrames != p.DropFrames || got.KeepFrames != "main" {
		t.Errorf("parsed doc %q, default type %q, drop %q, keep %q", got.DocURL, got.DefaultSampleType, got.DropFrames, got.KeepFrames)
	}
	for _, s := range []string{"", "main;foo;bar 12\n", "swapper 0 [000] 1.0: cycles:\n", "{}", "PERFILE2", "--- heap"} {
		if sniffPprof([]byte(s)) {
			t.Errorf("sniffPprof(%q) = true", s)
		}
	}
}
