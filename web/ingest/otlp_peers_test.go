package ingest_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
	"viewer/web/ingest"
	"viewer/web/ingest/otlptest"
)

// TestOTLPMatchesGoToolPprof writes pprof's own test profiles (a C++ CPU
// profile of raw addresses, a Java one with names, a Go heap profile) as
// OTLP requests, reads them back, and checks go tool pprof -top prints the
// same rows for the profile viewer read as for the original on every
// sample type. OTLP addresses are taken as pprof's are: caller addresses
// are return addresses and become call sites, so the original is compared
// with that done to it.
func TestOTLPMatchesGoToolPprof(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool pprof a dozen times")
	}
	for _, name := range []string{"cppbench.cpu", "java.cpu", "gobench.heap"} {
		file := filepath.Join(peersDir, "pprof", name)
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := profile.ParseData(raw)
			if err != nil {
				t.Fatal(err)
			}
			// pprof's legacy readers made callers call sites already;
			// sent over OTLP, they are return addresses again.
			orig.Comments = slices.DeleteFunc(orig.Comments, func(c string) bool { return c == sampling.CallSiteMark })
			want := orig.Copy()
			symbolize.CallSites(want)
			pb, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(orig, map[string]string{"service.name": "peer"})).MarshalProto()
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := ingest.Parse(pb, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			write := func(name string, p *profile.Profile) string {
				path := filepath.Join(dir, name)
				f, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := p.Write(f); err != nil {
					t.Fatal(err)
				}
				return path
			}
			wantFile, gotFile := write("orig.pb.gz", want), write("otlp.pb.gz", got)
			named := false
			for _, f := range orig.Function {
				named = named || f.Name != ""
			}
			for si, st := range orig.SampleType {
				want := pprofTop(t, wantFile, si, st.Unit, !named)
				have := pprofTop(t, gotFile, si, st.Unit, !named)
				if !maps.Equal(want, have) {
					t.Errorf("%s: go tool pprof -top differs after OTLP (%d rows, want %d)", st.Type, len(have), len(want))
					for k, w := range want {
						if have[k] != w {
							t.Errorf("  %s: %+v, want %+v", k, have[k], w)
							break
						}
					}
				}
			}
		})
	}
}
