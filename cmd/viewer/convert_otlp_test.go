package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/web/ingest/otlptest"
)

// TestConvertOTLP: viewer convert reads an OTLP profiles file, protobuf
// and OTLP JSON, and writes pprof whose go tool pprof -top is the
// original's, row for row (pprof's own Java CPU test profile, sent as an
// OTel exporter would).
func TestConvertOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool pprof")
	}
	orig := "../../testdata/peers/pprof/java.cpu"
	raw, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		t.Fatal(err)
	}
	req := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(p, map[string]string{"service.name": "java"}))
	pb, err := req.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	js, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := pprofTopRows(t, orig)
	if len(want) < 10 {
		t.Fatalf("go tool pprof -top of %s: %d rows", orig, len(want))
	}
	dir := t.TempDir()
	for name, body := range map[string][]byte{"profiles.pb": pb, "profiles.json": js} {
		in, out := filepath.Join(dir, name), filepath.Join(dir, name+".pb.gz")
		if err := os.WriteFile(in, body, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if err := runWith(context.Background(), []string{"convert", in, "-o", out}, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr}); err != nil {
			t.Fatalf("%s: %v (%s)", name, err, stderr.String())
		}
		got := pprofTopRows(t, out)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: go tool pprof -top after viewer convert differs:\n%s\nwant\n%s", name, strings.Join(got[:min(5, len(got))], "\n"), strings.Join(want[:5], "\n"))
		}
	}
}

// pprofTopRows is go tool pprof -top's table of file, every row.
func pprofTopRows(t *testing.T, file string) []string {
	t.Helper()
	cmd := exec.Command("go", "tool", "pprof", "-top", "-symbolize=none", "-nodecount=1000000", "-nodefraction=0", file)
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH=/nonexistent", "PPROF_TOOLS=/nonexistent")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool pprof -top %s: %v", file, err)
	}
	var rows []string
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[0] == "flat" {
			in = true
			continue
		}
		if in && strings.TrimSpace(line) != "" {
			rows = append(rows, line)
		}
	}
	return rows
}
