package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// sourceMapUpload posts a multipart upload of the fields given in order
// (field, file name, bytes) and returns the status and the answer.
func sourceMapUpload(t *testing.T, base string, parts ...any) (int, uploadResponse, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+2 < len(parts); i += 3 {
		fw, err := w.CreateFormFile(parts[i].(string), parts[i+1].(string))
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(parts[i+2].([]byte))
	}
	w.Close()
	resp, err := http.Post(base+"/api/profiles", w.FormDataContentType(), &b)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	var r uploadResponse
	json.Unmarshal(buf.Bytes(), &r)
	return resp.StatusCode, r, buf.String()
}

// bundleTotals sums each function's weight (once a sample) in p, the
// minified functions of the bundle renamed as rename says.
func bundleTotals(p *profile.Profile, rename map[string]string) map[string]int64 {
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

// TestUploadSourceMaps uploads a real node --cpu-prof recording of a
// terser bundle (web/ingest/sourcemap/testdata) with the bundle's .map in
// the multipart field "sourcemap", as the upload page sends it, before or
// after the profile: the minified functions n, t and e become
// fibonacciRecursive, sumOfSquares and mainLoop of app.js, with the
// weights they had. A map that is not one, too many maps, and a map that
// matches no script each get an answer that says so.
func TestUploadSourceMaps(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	const td = "ingest/sourcemap/testdata/"
	rec, err := os.ReadFile(td + "app.min.cpuprofile")
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(td + "app.min.js.map")
	if err != nil {
		t.Fatal(err)
	}
	load := func(id string) *profile.Profile {
		t.Helper()
		f := get(t, ts.URL+"/p/"+id+"/profile.pb.gz")
		p, err := profile.ParseData(f.body)
		if err != nil {
			t.Fatalf("profile.pb.gz: %v (%d: %.200s)", err, f.status, f.body)
		}
		return p
	}
	plain := load(upload(t, ts.URL, rec))
	want := bundleTotals(plain, map[string]string{"n": "fibonacciRecursive", "t": "sumOfSquares", "e": "mainLoop"})
	if want["fibonacciRecursive"] == 0 || want["sumOfSquares"] == 0 {
		t.Fatalf("the recording has no samples in the bundle's functions: %v", want)
	}
	for name, parts := range map[string][]any{
		"map after the profile":  {"file", "app.min.cpuprofile", rec, "sourcemap", "app.min.js.map", m},
		"map before the profile": {"sourcemap", "app.min.js.map", m, "file", "app.min.cpuprofile", rec},
	} {
		status, r, body := sourceMapUpload(t, ts.URL, parts...)
		if status != http.StatusCreated {
			t.Fatalf("%s: status %d: %s", name, status, body)
		}
		p := load(r.ID)
		got := bundleTotals(p, nil)
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
		if len(r.Warnings) != 0 {
			t.Errorf("%s: warnings %q", name, r.Warnings)
		}
	}

	status, _, body := sourceMapUpload(t, ts.URL, "file", "app.min.cpuprofile", rec, "sourcemap", "broken.js.map", []byte(`{"version":3,"mappings":"!!"`))
	if status != http.StatusBadRequest || !strings.Contains(body, "broken.js.map") || !strings.Contains(body, "source map") {
		t.Errorf("a broken map: status %d, %s; want 400 naming the map", status, body)
	}
	var many []any
	for i := range maxSourceMaps + 1 {
		many = append(many, "sourcemap", fmt.Sprintf("m%d.js.map", i), m)
	}
	status, _, body = sourceMapUpload(t, ts.URL, append(many, "file", "app.min.cpuprofile", rec)...)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "source maps") {
		t.Errorf("%d maps: status %d, %s; want 413", maxSourceMaps+1, status, body)
	}
	// The map names no file: it applies to the script its own name names.
	if bytes.Contains(m, []byte(`"file"`)) {
		t.Fatalf("the map names its file: %.100s", m)
	}
	status, r, body := sourceMapUpload(t, ts.URL, "file", "app.min.cpuprofile", rec, "sourcemap", "other.min.js.map", m)
	if status != http.StatusCreated || len(r.Warnings) == 0 || !strings.Contains(strings.Join(r.Warnings, "\n"), "other.min.js") {
		t.Errorf("a map of another script: status %d, %s; want the upload, with a warning naming the map", status, body)
	}
}
