package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
)

// routeRequest is how TestEveryRouteEncodedOnce asks one route of the table.
type routeRequest struct {
	method, path string // path with the route's parameters filled in
	body         func() (io.Reader, string)
	contentType  string // of the decoded body, a substring of Content-Type
}

// decodeOnce undoes the response's Content-Encoding once and checks that
// what is left is a body of the declared type, not one compressed again.
func decodeOnce(t *testing.T, hdr http.Header, body []byte) []byte {
	t.Helper()
	switch ce := hdr.Get("Content-Encoding"); ce {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("Content-Encoding gzip but the body is not gzip: %v", err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("gzip body does not decode: %v", err)
		}
	default:
		t.Fatalf("unexpected Content-Encoding %q", ce)
	}
	ct := hdr.Get("Content-Type")
	if bytes.HasPrefix(body, []byte{0x1f, 0x8b}) && !strings.Contains(ct, "gzip") {
		t.Fatalf("body of type %q is still gzip after decoding Content-Encoding %q: compressed twice", ct, hdr.Get("Content-Encoding"))
	}
	switch {
	case strings.Contains(ct, "json"):
		if !json.Valid(body) {
			t.Fatalf("decoded body of type %q is not JSON: %.200q", ct, body)
		}
	case strings.Contains(ct, "text/html"):
		if !bytes.Contains(bytes.ToLower(body[:min(len(body), 512)]), []byte("<!doctype html")) {
			t.Fatalf("decoded body of type %q is not an HTML page: %.200q", ct, body)
		}
	case strings.Contains(ct, "svg"):
		if !bytes.Contains(body[:min(len(body), 512)], []byte("<svg")) {
			t.Fatalf("decoded body of type %q is not SVG: %.200q", ct, body)
		}
	case strings.Contains(ct, "gzip"):
		if zr, err := gzip.NewReader(bytes.NewReader(body)); err != nil {
			t.Fatalf("decoded body of type %q is not a gzip file: %v", ct, err)
		} else if _, err := io.ReadAll(zr); err != nil {
			t.Fatalf("decoded body of type %q is not a gzip file: %v", ct, err)
		}
	}
	return body
}

// wideProfile is testProfile with n more leaf functions under main, so that
// its JSON and pages compress to well over 1 KiB.
func wideProfile(n int) *profile.Profile {
	p := testProfile()
	for i := range n {
		f := &profile.Function{ID: uint64(100 + i), Name: fmt.Sprintf("pkg.leaf%d", i*7919)}
		l := &profile.Location{ID: uint64(100 + i), Mapping: p.Mapping[0], Address: 0x410000 + uint64(i), Line: []profile.Line{{Function: f}}}
		p.Function, p.Location = append(p.Function, f), append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l, p.Location[0]}, Value: []int64{100, 1e9}})
	}
	return p
}

// TestEveryRouteEncodedOnce asks every route of the route table, with and
// without Accept-Encoding: gzip, and checks each body decodes exactly once
// to its content type (run with -race). A route added to the table without
// a request here still gets one, with its parameters filled in.
func TestEveryRouteEncodedOnce(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	// A wide profile, so JSON and pages are over the 1 KiB gzip threshold.
	p := wideProfile(300)
	id := upload(t, ts.URL, encodeProfile(t, p, true))
	p.Comments = []string{"second"}
	id2 := upload(t, ts.URL, encodeProfile(t, p, false))
	profileBody := func() (io.Reader, string) {
		return bytes.NewReader(encodeProfile(t, testProfile(), true)), "application/octet-stream"
	}
	formBody := func() (io.Reader, string) {
		return multipartBody(t, "file", "cpu.pb.gz", encodeProfile(t, testProfile(), true))
	}

	known := map[string]routeRequest{
		"GET /":                           {path: "/", contentType: "text/html"},
		"GET /healthz":                    {path: "/healthz", contentType: "text/plain"},
		"GET /login":                      {path: "/login", contentType: "text/html"},
		"POST /login":                     {path: "/login", contentType: "text/html"},
		"POST /api/profiles":              {path: "/api/profiles", body: profileBody, contentType: "json"},
		"POST /upload":                    {path: "/upload", body: formBody},
		"GET /p/:id":                      {path: "/p/" + id, contentType: "text/html"},
		"GET /p/:id/top":                  {path: "/p/" + id + "/top", contentType: "text/html"},
		"GET /p/:id/flame.json":           {path: "/p/" + id + "/flame.json", contentType: "application/json"},
		"GET /p/:id/flame.svg":            {path: "/p/" + id + "/flame.svg", contentType: "image/svg+xml"},
		"GET /p/:id/profile.pb.gz":        {path: "/p/" + id + "/profile.pb.gz", contentType: "application/gzip"},
		"GET /p/:id/speedscope.json":      {path: "/p/" + id + "/speedscope.json", contentType: "application/json"},
		"GET /p/:id/speedscope":           {path: "/p/" + id + "/speedscope"},
		"GET /p/:id/firefox.json":         {path: "/p/" + id + "/firefox.json", contentType: "application/json"},
		"GET /p/:id/firefox":              {path: "/p/" + id + "/firefox"},
		"GET /p/:id/types":                {path: "/p/" + id + "/types", contentType: "text/html"},
		"GET /p/:id/types.json":           {path: "/p/" + id + "/types.json"},
		"GET /p/:id/types/flame":          {path: "/p/" + id + "/types/flame", contentType: "text/html"},
		"GET /p/:id/types/flame.json":     {path: "/p/" + id + "/types/flame.json"},
		"GET /p/:id/types/top.json":       {path: "/p/" + id + "/types/top.json"},
		"GET /p/:id/compare":              {path: "/p/" + id + "/compare?base=" + id2},
		"GET /p/:base/diff/:id":           {path: "/p/" + id2 + "/diff/" + id, contentType: "text/html"},
		"GET /p/:base/diff/:id/diff.json": {path: "/p/" + id2 + "/diff/" + id + "/diff.json", contentType: "application/json"},
		"GET /p/:id/sandwich":             {path: "/p/" + id + "/sandwich?fn=main.work", contentType: "text/html"},
		"GET /p/:id/sandwich.json":        {path: "/p/" + id + "/sandwich.json?fn=main.work", contentType: "application/json"},
		"GET /p/:id/source":               {path: "/p/" + id + "/source?fn=main.work", contentType: "text/html"},
		"GET /p/:id/time":                 {path: "/p/" + id + "/time", contentType: "text/html"},
		"GET /p/:id/time.json":            {path: "/p/" + id + "/time.json", contentType: "application/json"},
		"GET /p/:id/events":               {path: "/p/" + id + "/events"},
		"GET /p/:id/symbolization":        {path: "/p/" + id + "/symbolization"},
		"POST /p/:id/symbolize/skip":      {path: "/p/" + id + "/symbolize/skip?build_id=c0ffee"},
		"POST /p/:id/symbolize/disable":   {path: "/p/" + id + "/symbolize/disable"},
		"POST /p/:id/symbolize/retry":     {path: "/p/" + id + "/symbolize/retry"},
		"GET /static/*":                   {path: "/static/flame.js", contentType: "javascript"},
		"GET /favicon.ico":                {path: "/favicon.ico", contentType: "image/svg+xml"},
	}
	var reqs []routeRequest
	inTable := map[string]bool{}
	for _, r := range s.Echo().Routes() {
		if r.Method == "echo_route_not_found" || strings.HasPrefix(r.Path, "/*") {
			continue
		}
		key := r.Method + " " + r.Path
		inTable[key] = true
		rr, ok := known[key]
		if !ok {
			// A route this test does not know yet: fill in its parameters.
			path := strings.NewReplacer(":base", id2, ":id", id, "*", "x").Replace(r.Path)
			rr = routeRequest{path: path}
			t.Logf("%s: no request in this test, asking %s", key, path)
		}
		rr.method = r.Method
		reqs = append(reqs, rr)
	}
	// The route table is checked, not only this list: every known route exists.
	for key := range known {
		if !inTable[key] {
			t.Errorf("%s is in this test but not in the route table", key)
		}
	}
	client := &http.Client{
		Transport:     &http.Transport{DisableCompression: true}, // see the bytes as sent
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(client.CloseIdleConnections)
	for _, rr := range reqs {
		for _, enc := range []string{"gzip", ""} {
			t.Run(rr.method+strings.ReplaceAll(rr.path, "/", "_")+"/"+enc, func(t *testing.T) {
				t.Parallel()
				// A page may take a while under -race on a loaded machine;
				// an event stream never ends, so it is read for 2 s.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var body io.Reader
				var ct string
				if rr.body != nil {
					body, ct = rr.body()
				}
				req, _ := http.NewRequestWithContext(ctx, rr.method, ts.URL+rr.path, body)
				if ct != "" {
					req.Header.Set("Content-Type", ct)
				}
				if enc != "" {
					req.Header.Set("Accept-Encoding", enc)
				}
				req.Header.Set("Accept", "text/html,application/json;q=0.9,*/*;q=0.8")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if strings.Contains(resp.Header.Get("Content-Type"), "event-stream") {
					time.AfterFunc(2*time.Second, cancel)
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil && !strings.Contains(resp.Header.Get("Content-Type"), "event-stream") {
					t.Fatalf("reading the body: %v", err)
				}
				if resp.StatusCode >= 500 {
					t.Fatalf("%s: %.300s", resp.Status, b)
				}
				if enc == "" && resp.Header.Get("Content-Encoding") != "" {
					t.Errorf("Content-Encoding %q for a request that accepts none", resp.Header.Get("Content-Encoding"))
				}
				if rr.contentType != "" && resp.StatusCode < 300 && !strings.Contains(resp.Header.Get("Content-Type"), rr.contentType) {
					t.Errorf("%s: Content-Type %q, want %q", resp.Status, resp.Header.Get("Content-Type"), rr.contentType)
				}
				if enc == "gzip" && len(b) >= 4096 && resp.Header.Get("Content-Encoding") == "" &&
					!strings.Contains(resp.Header.Get("Content-Type"), "gzip") && !strings.Contains(resp.Header.Get("Content-Type"), "event-stream") {
					t.Errorf("a %d-byte %q body is not compressed for a client that accepts gzip", len(b), resp.Header.Get("Content-Type"))
				}
				if len(b) > 0 {
					decodeOnce(t, resp.Header, b)
				}
			})
		}
	}
}
