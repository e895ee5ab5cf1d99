package ingest

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web/ingest/otlptest"
)

// BenchmarkOTLPRequest is the parse of one request of
// BenchmarkOTLPIntake (web): a 10,000-sample eBPF-like profile as OTLP
// protobuf, its tables counted (prescanOTLP), decoded by pdata and
// converted to pprof with its call sites, without the HTTP server and the
// store around it; and the pre-scan alone, its share.
//
//	go test -run '^$' -bench OTLPRequest -benchmem ./web/ingest/
func BenchmarkOTLPRequest(b *testing.B) {
	body, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.EBPFLike(10_000, 1), map[string]string{"service.name": "app"})).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			res, err := ParseOTLP(context.Background(), body, false, Limits{})
			if err != nil || len(res.Profiles) != 1 {
				b.Fatal(res, err)
			}
			res.Release()
		}
	})
	b.Run("prescan", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := prescanOTLP(body, false, Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
