package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestSourceMaps converts and uploads a real node --cpu-prof recording of
// a terser bundle (web/ingest/sourcemap/testdata) with its map: given as
// --source-map FILE, inline in the script (data: URL) or beside it
// (sourceMappingURL=app.min.js.map), found by --local-source-maps from the
// profile's file:// URL. The minified functions n, t, e become
// fibonacciRecursive, sumOfSquares and mainLoop of app.js, with the same
// weights.
func TestSourceMaps(t *testing.T) {
	const td = "../../web/ingest/sourcemap/testdata/"
	tmp := t.TempDir()
	for _, f := range []string{"app.min.js", "app.min.js.map", "app.inline.min.js"} {
		data, err := os.ReadFile(td + f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(tmp, f), data, 0o644)
	}
	rec, err := os.ReadFile(td + "app.min.cpuprofile")
	if err != nil {
		t.Fatal(err)
	}
	// The recording names the bundle as file:///app/app.min.js; here it
	// names the copies, as a recording made on this machine would.
	withURL := func(script string) string {
		name := filepath.Join(tmp, strings.TrimSuffix(script, ".js")+".cpuprofile")
		os.WriteFile(name, bytes.ReplaceAll(rec, []byte("file:///app/app.min.js"), []byte("file://"+filepath.Join(tmp, script))), 0o644)
		return name
	}
	convert := func(args ...string) *profile.Profile {
		t.Helper()
		out := filepath.Join(tmp, "out.pb.gz")
		var errOut bytes.Buffer
		if err := runConvert(context.Background(), append(args, "-o", out), stdio{out: io.Discard, err: &errOut}); err != nil {
			t.Fatalf("convert %q: %v\n%s", args, err, errOut.String())
		}
		f, _ := os.Open(out)
		defer f.Close()
		p, err := profile.Parse(f)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := convert(withURL("app.min.js"))
	want := functionTotals(plain, map[string]string{"n": "fibonacciRecursive", "t": "sumOfSquares", "e": "mainLoop"})
	if want["fibonacciRecursive"] == 0 || want["sumOfSquares"] == 0 {
		t.Fatalf("the recording has no samples in the bundle's functions: %v", want)
	}
	for name, args := range map[string][]string{
		"--source-map FILE.map":            {withURL("app.min.js"), "--source-map", filepath.Join(tmp, "app.min.js.map")},
		"--source-map SCRIPT (inline map)": {withURL("app.inline.min.js"), "--source-map", filepath.Join(tmp, "app.inline.min.js")},
		"--local-source-maps, inline map":  {withURL("app.inline.min.js"), "--local-source-maps"},
		"--local-source-maps, map beside":  {withURL("app.min.js"), "--local-source-maps"},
	} {
		p := convert(args...)
		got := functionTotals(p, nil)
		for _, fn := range []string{"fibonacciRecursive", "sumOfSquares", "mainLoop"} {
			if v := want[fn]; got[fn] != v {
				t.Errorf("%s: %s weighs %d, want %d (the minified function's)", name, fn, got[fn], v)
			}
		}
		for _, f := range p.Function {
			if f.Name == "fibonacciRecursive" && f.Filename != "app.js" {
				t.Errorf("%s: fibonacciRecursive's file %q, want app.js", name, f.Filename)
			}
		}
	}

	// viewer upload maps the frames here and sends the mapped profile.
	base, _, _ := startServe(t, "--data", filepath.Join(tmp, "data"))
	var link bytes.Buffer
	if err := runUpload(context.Background(), []string{withURL("app.min.js"), "--server", base, "--local-source-maps"}, stdio{out: &link, err: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if code, body := fetch(t, strings.TrimSpace(link.String())+"/top"); code != 200 || !strings.Contains(body, "fibonacciRecursive") {
		t.Errorf("uploaded with --local-source-maps: %d, top has no fibonacciRecursive", code)
	}
	if err := runConvert(context.Background(), []string{withURL("app.min.js"), "-o", filepath.Join(tmp, "x.pb.gz"), "--source-map", filepath.Join(tmp, "missing.map")}, stdio{out: io.Discard, err: io.Discard}); err == nil || !strings.Contains(err.Error(), "missing.map") {
		t.Errorf("a missing --source-map: %v", err)
	}
}

// functionTotals sums the samples' first value per function (leaf or not,
// once per sample), renamed by rename when given.
func functionTotals(p *profile.Profile, rename map[string]string) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		seen := map[string]bool{}
		for _, l := range s.Location {
			for _, ln := range l.Line {
				n := ln.Function.Name
				if r, ok := rename[n]; ok && strings.HasSuffix(ln.Function.Filename, "app.min.js") {
					n = r
				}
				if !seen[n] {
					seen[n] = true
					out[n] += s.Value[len(s.Value)-1]
				}
			}
		}
	}
	return out
}
