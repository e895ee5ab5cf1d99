package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
	"viewer/web/ingest/otlptest"
	"viewer/web/webtest"
)

// ondemandResource is the resource an OTLP exporter names the ondemand
// program's process with.
var ondemandResource = map[string]string{"service.name": "ondemand", "host.name": "build-7", "process.executable.name": "ondemand"}

// TestOTLPIntake is an OTel exporter sending the ondemand program's raw
// addresses and build ID over OTLP/HTTP, as protobuf and as JSON, gzipped
// and not. Each OTLP profile is stored as a viewer profile whose samples,
// stacks and labels are the ones sent, titled by its resource; and its
// frames get their names from the real debuginfod server through the
// same on-demand path as any upload.
func TestOTLPIntake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Debian's debuginfod")
	}
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(webtest.OndemandDir(), "debuginfo"))
	_, base := webtest.SymbolizingServerWith(t, []string{dsrv.URL}, 2, web.Config{OTLP: true})
	sent, err := profile.ParseData(webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 7))
	if err != nil {
		t.Fatal(err)
	}
	req := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(sent, ondemandResource))
	pb, err := req.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	js, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, ctype string
		body        []byte
		gz          bool
	}{
		{"protobuf", "application/x-protobuf", pb, false},
		{"json+gzip", "application/json", js, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if tc.gz {
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				zw.Write(body)
				zw.Close()
				body = b.Bytes()
			}
			hreq, _ := http.NewRequest(http.MethodPost, base+web.OTLPPath, bytes.NewReader(body))
			hreq.Header.Set("Content-Type", tc.ctype)
			if tc.gz {
				hreq.Header.Set("Content-Encoding", "gzip")
			}
			resp, err := http.DefaultClient.Do(hreq)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.ctype {
				t.Fatalf("%s %s: %s", resp.Status, resp.Header.Get("Content-Type"), body)
			}
			er := pprofileotlp.NewExportResponse()
			if tc.ctype == "application/json" {
				err = er.UnmarshalJSON(body)
			} else {
				err = er.UnmarshalProto(body)
			}
			if err != nil || er.PartialSuccess().RejectedProfiles() != 0 {
				t.Fatalf("response %q: %v, %d rejected", body, err, er.PartialSuccess().RejectedProfiles())
			}
			ids := strings.Split(resp.Header.Get("X-Viewer-Profiles"), ",")
			if len(ids) != len(sent.SampleType) {
				t.Fatalf("stored %q, want one profile per sample type sent (%d)", ids, len(sent.SampleType))
			}
			for i, id := range ids {
				s, _ := finalEvent(t, base, id)
				if s.Resolved != 1 {
					t.Errorf("profile %s: %d binaries resolved (%+v), want the program named through debuginfod", id, s.Resolved, s.Binaries)
				}
				got := webtest.ServedProfile(t, base, id)
				if len(got.SampleType) != 1 || got.SampleType[0].Type != sent.SampleType[i].Type {
					t.Errorf("profile %s has types %v, want %s", id, got.SampleType, sent.SampleType[i].Type)
				}
				// The samples are the ones sent: their counts per stack,
				// now named, and the resource as labels.
				stacks := map[string]int64{}
				for _, smp := range got.Sample {
					var fns []string
					for _, l := range smp.Location {
						for _, ln := range l.Line {
							fns = append(fns, ln.Function.Name)
						}
					}
					slices.Reverse(fns)
					stacks[strings.Join(fns, ";")] += smp.Value[0]
					if smp.Label["service.name"][0] != "ondemand" || smp.Label["host.name"][0] != "build-7" {
						t.Errorf("sample labels %v lack the resource's", smp.Label)
					}
				}
				n := int64(1)
				if i == 1 {
					n = 10_000_000
				}
				want := map[string]int64{
					"main;ondemand_run_workload;ondemand_hash_block":   6 * n,
					"main;ondemand_run_workload;ondemand_render_frame": 3 * n,
					"main;ondemand_parse_input":                        1 * n,
				}
				if !mapsEqual(stacks, want) {
					t.Errorf("profile %s stacks %v, want %v", id, stacks, want)
				}
				if m := pageTitle(t, base, id); !strings.Contains(m, "ondemand on build-7") {
					t.Errorf("the flame page's title %q does not name the resource", m)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// pageTitle is the <title> of the profile's flame page.
func pageTitle(t testing.TB, base, id string) string {
	t.Helper()
	resp, err := http.Get(base + "/p/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s := string(b)
	i, j := strings.Index(s, "<title>"), strings.Index(s, "</title>")
	if i < 0 || j < i {
		return ""
	}
	return s[i+7 : j]
}
