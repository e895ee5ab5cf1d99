package ingest

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web/ingest/otlptest"
)

// BenchmarkOTLPRequest is the parse of one request of
// BenchmarkOTLPIntake (web): a 10,000-sample eBPF-like profile as OTLP
// protobuf, decoded by pdata and converted to pprof with its call sites,
// without the HTTP server and the store around it.
//
//	go test -run '^$' -bench OTLPRequest -benchmem ./web/ingest/
func BenchmarkOTLPRequest(b *testing.B) {
	body, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.EBPFLike(10_000, 1), map[string]string{"service.name": "app"})).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		ps, err := UnmarshalOTLP(body)
		if err != nil {
			b.Fatal(err)
		}
		res, err := FromOTLP(ps, Limits{})
		if err != nil || len(res.Profiles) != 1 {
			b.Fatal(res, err)
		}
	}
}
