package ingest

import (
	"github.com/google/pprof/profile"
)

// richProfile has what nativeProfile lacks: a mapping with names, lines,
// columns and inline frames, numeric labels with units, several values
// per label key, an empty label, a sample without labels or locations,
// and the pprof fields OTLP does not carry (kept frames, doc URL,
// default sample type, folded locations).
func richProfile() *profile.Profile {
	p := nativeProfile()
	ssl := &profile.Mapping{ID: 3, Start: 0x7ffff7a00000, Limit: 0x7ffff7b00000, Offset: 0x1000, File: "/usr/lib/x86_64-linux-gnu/libssl.so.3", BuildID: "5d1b0ab3a7f2c0e7f4f8a33c1c0b5c2d9e3b7a11",
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
	read := &profile.Function{ID: 2, Name: "SSL_read", SystemName: "SSL_read", Filename: "ssl/ssl_lib.c", StartLine: 1800}
	rec := &profile.Function{ID: 3, Name: "ssl3_read_bytes", SystemName: "ssl3_read_bytes", Filename: "ssl/record/rec_layer_s3.c"}
	inl := &profile.Location{ID: 5, Mapping: ssl, Address: 0x7ffff7a41234, IsFolded: true,
		Line: []profile.Line{{Function: rec, Line: 1301, Column: 17}, {Function: read, Line: 1822, Column: 9}}}
	p.Mapping = append(p.Mapping, ssl)
	p.Location = append(p.Location, inl)
	p.Function = append(p.Function, read, rec)
	p.Sample = append(p.Sample,
		&profile.Sample{Location: []*profile.Location{inl, p.Location[1], p.Location[0]}, Value: []int64{2, 20_000_000},
			Label:    map[string][]string{"thread.name": {"tls-1", "tls-2"}, "empty": {""}},
			NumLabel: map[string][]int64{"bytes.read": {4096, 0, 512}, "process.pid": {4242}},
			NumUnit:  map[string][]string{"bytes.read": {"bytes", "bytes", "bytes"}, "process.pid": {""}}},
		&profile.Sample{Value: []int64{1, 0}},
	)
	p.DropFrames, p.KeepFrames, p.DocURL = "runtime\\..*", "main", "https://example.com/profiles"
	p.DefaultSampleType = "cpu"
	p.Comments = []string{"rich fixture", "second comment"}
	return p
}

// The fixtures for the external tests (otlpencoding_test.go).
var (
	NativeProfile    = nativeProfile
	RichProfile      = richProfile
	CheckoutResource = checkoutResource
)
