package otlptest

import "github.com/google/pprof/profile"

// The profiles the OTLP tests send (FromPprof) and compare what the reader
// made of them against.

// Native is what an eBPF profiler records: raw addresses in two
// mappings with GNU build IDs, a Go frame it named itself, thread labels
// and a numeric pid label, in two sample types.
func Native() *profile.Profile {
	app := &profile.Mapping{ID: 1, Start: 0x555555554000, Limit: 0x555555556000, Offset: 0, File: "/usr/bin/checkout", BuildID: "8e44c8b0040d3a4162b62bffc2fb28e2c2b8fecc"}
	libc := &profile.Mapping{ID: 2, Start: 0x7ffff7d80000, Limit: 0x7ffff7f00000, Offset: 0x26000, File: "/usr/lib/x86_64-linux-gnu/libc.so.6", BuildID: "1fb24b73998e656025af695f4b950cb2315278df"}
	fn := &profile.Function{ID: 1, Name: "runtime.main", SystemName: "runtime.main", Filename: "runtime/proc.go", StartLine: 145}
	l := func(id uint64, m *profile.Mapping, addr uint64) *profile.Location {
		return &profile.Location{ID: id, Mapping: m, Address: addr}
	}
	main, work, memcpy := l(1, app, 0x555555555149), l(2, app, 0x5555555551a3), l(3, libc, 0x7ffff7e1b2c4)
	gomain := &profile.Location{ID: 4, Address: 0x43a1b0, Line: []profile.Line{{Function: fn, Line: 283}}}
	s := func(v int64, thread string, pid int64, locs ...*profile.Location) *profile.Sample {
		return &profile.Sample{Location: locs, Value: []int64{v, v * 10_000_000},
			Label: map[string][]string{"thread.name": {thread}}, NumLabel: map[string][]int64{"process.pid": {pid}}, NumUnit: map[string][]string{"process.pid": {""}}}
	}
	return &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		TimeNanos:     1_764_590_400_000_000_000,
		DurationNanos: 10_000_000_000,
		Sample: []*profile.Sample{
			s(6, "worker-1", 4242, memcpy, work, main),
			s(3, "worker-2", 4242, work, main),
			s(1, "gc", 4242, gomain),
		},
		Mapping:  []*profile.Mapping{app, libc},
		Location: []*profile.Location{main, work, memcpy, gomain},
		Function: []*profile.Function{fn},
	}
}

// CheckoutResource is the resource the fixtures are sent from.
var CheckoutResource = map[string]string{"service.name": "checkout", "host.name": "host-1", "process.executable.name": "checkout-svc"}

// Rich has what Native lacks: a mapping with names, lines,
// columns and inline frames, numeric labels with units, several values
// per label key, an empty label, a sample without labels or locations,
// and the pprof fields OTLP does not carry (kept frames, doc URL,
// default sample type, folded locations).
func Rich() *profile.Profile {
	p := Native()
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
