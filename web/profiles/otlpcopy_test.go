package profiles

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/web/ingest"
	"viewer/web/ingest/otlptest"
)

// TestOTLPStoredCopyIsPprofs: every OTLP fixture (the native eBPF-like
// profile, a rich one with inline frames, columns and numeric labels with
// units, and each of pprof's own test profiles sent as an OTel exporter
// would) converted by FromOTLP and stored as the intake stores it
// (WriteGzipped, whose samples share the encoding of their
// shared label maps) is, once inflated, byte for byte what pprof's own
// encoder (WriteUncompressed) writes of the same profile; and the
// converted profile passes pprof's CheckValid, which FromOTLP leaves out.
func TestOTLPStoredCopyIsPprofs(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "peers", "pprof")
	files, err := filepath.Glob(filepath.Join(dir, "*.*"))
	if err != nil || len(files) < 10 {
		t.Fatalf("pprof's test profiles in %s: %v, %v", dir, files, err)
	}
	fixtures := map[string]*profile.Profile{"native": otlptest.Native(), "rich": otlptest.Rich()}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(raw)
		if err != nil {
			continue // the licence
		}
		fixtures[filepath.Base(f)] = p
	}
	for name, p := range fixtures {
		t.Run(name, func(t *testing.T) {
			res, err := ingest.FromOTLP(otlptest.FromPprof(p, otlptest.CheckoutResource), ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Profiles) != len(p.SampleType) {
				t.Fatalf("%d profiles converted (%s), want one per sample type: %d", len(res.Profiles), res.Message(), len(p.SampleType))
			}
			for _, op := range res.Profiles {
				if err := op.Profile.CheckValid(); err != nil {
					t.Errorf("the converted profile is not valid: %v", err)
				}
				var want bytes.Buffer
				if err := op.Profile.WriteUncompressed(&want); err != nil {
					t.Fatal(err)
				}
				var gz bytes.Buffer
				if err := WriteGzipped(&gz, op.Profile); err != nil {
					t.Fatal(err)
				}
				zr, err := gzip.NewReader(&gz)
				if err != nil {
					t.Fatalf("the stored copy is not gzip: %v", err)
				}
				got, err := io.ReadAll(zr)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want.Bytes()) {
					t.Errorf("the stored copy inflates to %d bytes, pprof's encoder writes %d, not the same", len(got), want.Len())
				}
			}
		})
	}
}
