package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"viewer/web/profiles"
	"viewer/web/store"
)

// testProfile is a CPU profile: main → work → (compute | libc+0x2a2b),
// plus an escaped C++ name, with a non-default mapping layout.
func testProfile() *profile.Profile {
	app := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", BuildID: "abcdef0123", HasFunctions: true}
	libc := &profile.Mapping{ID: 2, Start: 0x7f0000000000, Limit: 0x7f0000100000, Offset: 0x1000, File: "/usr/lib/libc.so.6", BuildID: "c0ffee"}
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	fMain, fWork, fCompute, fVec := fn(1, "main.main"), fn(2, "main.work"), fn(3, "main.compute"), fn(4, "std::vector<int>::at")
	l1 := &profile.Location{ID: 1, Mapping: app, Address: 0x401000, Line: []profile.Line{{Function: fMain}}}
	l2 := &profile.Location{ID: 2, Mapping: app, Address: 0x402000, Line: []profile.Line{{Function: fWork}}}
	l3 := &profile.Location{ID: 3, Mapping: app, Address: 0x403000, Line: []profile.Line{{Function: fCompute}}}
	l4 := &profile.Location{ID: 4, Mapping: libc, Address: 0x7f0000001a2b}
	l5 := &profile.Location{ID: 5, Mapping: app, Address: 0x405000, Line: []profile.Line{{Function: fVec}}}
	s := func(n, ns int64, locs ...*profile.Location) *profile.Sample {
		return &profile.Sample{Location: locs, Value: []int64{n, ns}}
	}
	return &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10000000,
		DurationNanos: 2e9,
		Sample: []*profile.Sample{
			s(60, 600000000, l3, l2, l1),
			s(30, 300000000, l4, l2, l1),
			s(10, 100000000, l5, l1),
		},
		Mapping:  []*profile.Mapping{app, libc},
		Location: []*profile.Location{l1, l2, l3, l4, l5},
		Function: []*profile.Function{fMain, fWork, fCompute, fVec},
	}
}

func encodeProfile(t testing.TB, p *profile.Profile, gz bool) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	if gz {
		err = p.Write(&b)
	} else {
		err = p.WriteUncompressed(&b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// newTestServer starts a Server on a fresh (or the given) data directory,
// listening on 127.0.0.1 and closed when the test ends.
func newTestServer(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	if cfg.DataDir == "" && cfg.Store == nil {
		cfg.DataDir = t.TempDir()
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// noRedirect is an HTTP client that reports redirects instead of following.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func multipartBody(t testing.TB, field, filename string, data []byte) (io.Reader, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("note", "hello")
	fw, err := w.CreateFormFile(field, filename)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(data)
	w.Close()
	return &b, w.FormDataContentType()
}

// upload posts data to /api/profiles as multipart and returns the ID.
func upload(t *testing.T, base string, data []byte) string {
	t.Helper()
	body, ct := multipartBody(t, "file", "cpu.pb.gz", data)
	resp, err := http.Post(base+"/api/profiles", ct, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r uploadResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: status %d, %v", resp.StatusCode, err)
	}
	if r.URL != "/p/"+r.ID || !profiles.ValidID(r.ID) {
		t.Fatalf("upload answered %+v", r)
	}
	return r.ID
}

type fetched struct {
	status int
	header http.Header
	body   []byte
}

func get(t *testing.T, url string, hdr ...string) fetched {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fetched{resp.StatusCode, resp.Header, b}
}

// TestEveryURL fetches every page and file of an uploaded profile in
// parallel (run with -race), checking status, type and content.
func TestEveryURL(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	tests := []struct {
		path        string
		status      int
		contentType string
		want        []string // substrings of the body
		notWant     []string
	}{
		{"/", 200, "text/html", []string{`action="/upload"`, "512 MiB"}, nil},
		{"/healthz", 200, "text/plain", []string{"ok"}, nil},
		{"/p/" + id, 200, "text/html", []string{"/p/" + id + "/flame.json?si=cpu", "cpu.pb.gz"}, nil},
		{"/p/" + id + "?si=samples", 200, "text/html", []string{"/p/" + id + "/flame.json?si=samples"}, nil},
		{"/p/" + id + "?si=1", 200, "text/html", []string{"/p/" + id + "/flame.json?si=cpu"}, nil},
		{"/p/" + id + "?si=bogus", 400, "text/html", []string{"unknown sample type", "bogus"}, nil},
		{"/p/" + id + "/top", 200, "text/html", []string{"main.compute", "600 ms", "std::vector&lt;int&gt;::at", "libc.so.6+0x2a2b"}, []string{"vector<int>"}},
		{"/p/" + id + "/top?si=samples", 200, "text/html", []string{"main.compute", ">60<"}, nil},
		{"/p/" + id + "/top?n=x", 400, "text/html", []string{"positive number"}, nil},
		{"/p/" + id + "/flame.json", 200, "application/json", []string{`"sampleType":"cpu"`, `"total":1000000000`, `"main.compute"`, `"libc.so.6+0x2a2b"`}, nil},
		{"/p/" + id + "/flame.json?si=samples", 200, "application/json", []string{`"sampleType":"samples"`, `"total":100`}, nil},
		{"/p/" + id + "/flame.json?si=nope", 400, "application/json", []string{`"error":"unknown sample type`}, nil},
		{"/p/" + id + "/flame.svg", 200, "image/svg+xml", []string{"<svg", "<title>main.compute (600 ms, 60.00%", "std::vector&lt;int&gt;::at"}, []string{"vector<int>"}},
		{"/p/" + id + "/profile.pb.gz", 200, "application/gzip", []string{"\x1f\x8b"}, nil},
		{"/static/flame.js", 200, "javascript", nil, nil},
		{"/static/style.css", 200, "text/css", nil, nil},
		{"/static/nope.js", 404, "text/html", nil, nil},
		{"/favicon.ico", 200, "image/svg+xml", []string{"<svg"}, nil},
		{"/p/aaaaaaaaaaaaaaaaaaaa", 404, "text/html", []string{"No profile has the ID"}, nil},
		{"/p/aaaaaaaaaaaaaaaaaaaa/flame.json", 404, "application/json", []string{`"error":"No profile`}, nil},
		{"/p/aaaaaaaaaaaaaaaaaaaa/flame.svg", 404, "text/html", nil, nil},
		{"/p/aaaaaaaaaaaaaaaaaaaa/top", 404, "text/html", nil, nil},
		{"/p/aaaaaaaaaaaaaaaaaaaa/profile.pb.gz", 404, "text/html", nil, nil},
		{"/p/..%2f..%2fetc%2fpasswd", 404, "text/html", nil, []string{"root:"}},
		{"/p/" + strings.ToUpper(id), 404, "text/html", nil, nil},
		{"/nowhere", 404, "text/html", []string{"/nowhere"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.path, "/", "_"), func(t *testing.T) {
			t.Parallel()
			r := get(t, ts.URL+tt.path)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body:\n%s", r.status, tt.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); !strings.Contains(ct, tt.contentType) {
				t.Errorf("Content-Type %q, want %q", ct, tt.contentType)
			}
			for _, w := range tt.want {
				if !bytes.Contains(r.body, []byte(w)) {
					t.Errorf("body does not contain %q:\n%.2000s", w, r.body)
				}
			}
			for _, w := range tt.notWant {
				if bytes.Contains(r.body, []byte(w)) {
					t.Errorf("body contains %q", w)
				}
			}
		})
	}
}

// TestDownloadOpensInPprof checks profile.pb.gz is the profile.
func TestDownloadOpensInPprof(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	for _, gz := range []bool{true, false} {
		id := upload(t, ts.URL, encodeProfile(t, testProfile(), gz))
		r := get(t, ts.URL+"/p/"+id+"/profile.pb.gz")
		p, err := profile.ParseData(r.body)
		if err != nil || len(p.Sample) != 3 || p.Sample[0].Location[0].Line[0].Function.Name != "main.compute" {
			t.Fatalf("gz=%v: profile.pb.gz does not parse back: %v", gz, err)
		}
		if !bytes.HasPrefix(r.body, []byte{0x1f, 0x8b}) {
			t.Errorf("gz=%v: profile.pb.gz is not gzipped", gz)
		}
		if cd := r.header.Get("Content-Disposition"); !strings.Contains(cd, `filename="cpu.pb.gz"`) {
			t.Errorf("Content-Disposition %q", cd)
		}
	}
}

// TestFlameJSONCaching checks gzip, ETag revalidation and that the flame
// page doesn't wait for parsing.
func TestFlameJSONCaching(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	url := ts.URL + "/p/" + id + "/flame.json"
	plain := get(t, url, "Accept-Encoding", "identity")
	zipped := get(t, url, "Accept-Encoding", "gzip")
	if zipped.header.Get("Content-Encoding") != "gzip" || plain.header.Get("Content-Encoding") != "" {
		t.Fatalf("Content-Encoding: gzip request %q, identity request %q", zipped.header.Get("Content-Encoding"), plain.header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if !bytes.Equal(unzipped, plain.body) {
		t.Fatal("gzipped and plain flame.json differ")
	}
	etag := plain.header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if r := get(t, url, "Accept-Encoding", "identity", "If-None-Match", etag); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Fatalf("revalidation: status %d, %d bytes; want 304", r.status, len(r.body))
	}
	// Every response is compressed exactly once (get's transport doesn't
	// decompress when the request sets Accept-Encoding itself), also when
	// the compressed body is large.
	wide := testProfile()
	for i := 0; i < 300; i++ {
		f := &profile.Function{ID: uint64(100 + i), Name: fmt.Sprintf("pkg.leaf%d", i*7919)}
		l := &profile.Location{ID: uint64(100 + i), Mapping: wide.Mapping[0], Address: 0x410000 + uint64(i), Line: []profile.Line{{Function: f}}}
		wide.Function, wide.Location = append(wide.Function, f), append(wide.Location, l)
		wide.Sample = append(wide.Sample, &profile.Sample{Location: []*profile.Location{l, wide.Location[0]}, Value: []int64{100, 1e9}})
	}
	id = upload(t, ts.URL, encodeProfile(t, wide, true))
	for _, u := range []string{"/p/" + id, "/p/" + id + "/flame.svg", "/p/" + id + "/flame.json", "/p/" + id + "/top"} {
		r := get(t, ts.URL+u, "Accept-Encoding", "gzip")
		if r.status != 200 || r.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: status %d, Content-Encoding %q", u, r.status, r.header.Get("Content-Encoding"))
		}
		if b := mustGunzip(t, r.body); bytes.HasPrefix(b, []byte{0x1f, 0x8b}) || len(b) < 100 {
			t.Errorf("%s: gzipped twice or empty: %.40q", u, b)
		}
	}
}

// TestSymbolizedPreferred checks that a stored symbolized.pb.gz replaces the
// original everywhere once the server is told (Invalidate), and that the
// original stays downloadable by ID.
func TestSymbolizedPreferred(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	if r := get(t, ts.URL+"/p/"+id+"/flame.json"); !bytes.Contains(r.body, []byte("libc.so.6+0x2a2b")) {
		t.Fatalf("unsymbolized frame missing: %s", r.body)
	}
	p := testProfile()
	f := &profile.Function{ID: 9, Name: "__memcpy_avx2"}
	p.Function = append(p.Function, f)
	p.Location[3].Line = []profile.Line{{Function: f}}
	p.Mapping[1].HasFunctions = true
	if err := s.Store().Put(context.Background(), profiles.Key(id, profiles.KeySymbolized), bytes.NewReader(encodeProfile(t, p, true))); err != nil {
		t.Fatal(err)
	}
	s.Invalidate(id)
	for _, u := range []string{"/flame.json", "/flame.svg", "/top"} {
		r := get(t, ts.URL+"/p/"+id+u)
		if !bytes.Contains(r.body, []byte("__memcpy_avx2")) || bytes.Contains(r.body, []byte("libc.so.6+0x2a2b")) {
			t.Errorf("%s does not show the symbolized profile:\n%.1500s", u, r.body)
		}
	}
	r := get(t, ts.URL+"/p/"+id+"/profile.pb.gz")
	if !bytes.Contains(mustGunzip(t, r.body), []byte("__memcpy_avx2")) {
		t.Error("profile.pb.gz is not the symbolized profile")
	}
	// Uploading the original bytes again doesn't bring the unsymbolized
	// profile back.
	if again := upload(t, ts.URL, encodeProfile(t, testProfile(), true)); again != id {
		t.Fatalf("re-upload gave ID %q, want %q", again, id)
	}
	if r := get(t, ts.URL+"/p/"+id+"/flame.json?si=samples"); !bytes.Contains(r.body, []byte("__memcpy_avx2")) {
		t.Errorf("after re-upload, flame.json lost the symbolized names:\n%s", r.body)
	}
}

func mustGunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRestart: every acknowledged link works from a new server on the same
// directory, with the same content.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	_, ts := newTestServer(t, Config{DataDir: dir})
	data := encodeProfile(t, testProfile(), true)
	id := upload(t, ts.URL, data)
	paths := []string{"/p/" + id, "/p/" + id + "/flame.json", "/p/" + id + "/flame.svg", "/p/" + id + "/top", "/p/" + id + "/profile.pb.gz"}
	before := map[string][]byte{}
	for _, p := range paths {
		before[p] = get(t, ts.URL+p).body
	}
	ts.Close()

	_, ts2 := newTestServer(t, Config{DataDir: dir})
	for _, p := range paths {
		r := get(t, ts2.URL+p)
		if r.status != 200 || !bytes.Equal(r.body, before[p]) {
			t.Errorf("after restart %s: status %d, body changed: %v", p, r.status, !bytes.Equal(r.body, before[p]))
		}
	}
	// The original bytes are kept as uploaded.
	got, err := os.ReadFile(filepath.Join(dir, id, profiles.KeyOriginal))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("original bytes not kept: %v", err)
	}

	// A crash between writing the original and meta.json loses nothing:
	// the page still works and meta.json is rebuilt.
	os.Remove(filepath.Join(dir, id, profiles.KeyMeta))
	_, ts3 := newTestServer(t, Config{DataDir: dir})
	if r := get(t, ts3.URL+"/p/"+id); r.status != 200 {
		t.Fatalf("without meta.json: status %d", r.status)
	}
	if _, err := os.Stat(filepath.Join(dir, id, profiles.KeyMeta)); err != nil {
		t.Errorf("meta.json not rebuilt: %v", err)
	}
}

func TestID(t *testing.T) {
	a := profiles.NewID([]byte("profile one"))
	if len(a) != profiles.IDLen || !profiles.ValidID(a) {
		t.Fatalf("profiles.NewID = %q, not a valid %d-character ID", a, profiles.IDLen)
	}
	if profiles.NewID([]byte("profile one")) != a {
		t.Fatal("same bytes gave different IDs")
	}
	if profiles.NewID([]byte("profile two")) == a {
		t.Fatal("different bytes gave the same ID")
	}
	for _, bad := range []string{"", "short", a + "a", strings.ToUpper(a), a[:19] + "1", a[:19] + "/", "../../../../etc/passwd", a[:18] + ".."} {
		if profiles.ValidID(bad) {
			t.Errorf("profiles.ValidID(%q) = true", bad)
		}
	}
}

func TestIdempotentUpload(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	data := encodeProfile(t, testProfile(), true)
	id1 := upload(t, ts.URL, data)
	id2 := upload(t, ts.URL, data)
	if id1 != id2 || id1 != profiles.NewID(data) {
		t.Fatalf("IDs %q, %q; want both %q", id1, id2, profiles.NewID(data))
	}
	// The same profile uncompressed is different bytes: a different ID.
	if id3 := upload(t, ts.URL, encodeProfile(t, testProfile(), false)); id3 == id1 {
		t.Fatal("different bytes gave the same ID")
	}
}

// dirEntries lists what a store directory holds.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p != dir {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func TestUpload(t *testing.T) {
	good := encodeProfile(t, testProfile(), true)
	raw := encodeProfile(t, testProfile(), false)
	// big is a profile whose gzip is small but which decompresses to more
	// than the limit used below.
	bigP := testProfile()
	for i := 0; i < 3000; i++ {
		bigP.Sample = append(bigP.Sample, bigP.Sample[0])
	}
	big := encodeProfile(t, bigP, true)
	const limit = 20000
	if len(big) > limit || len(encodeProfile(t, bigP, false)) <= limit {
		t.Fatalf("test setup: big profile is %d bytes gzipped, %d raw; want under and over %d", len(big), len(encodeProfile(t, bigP, false)), limit)
	}
	tests := []struct {
		name      string
		multipart bool
		field     string
		path      string
		body      []byte
		status    int
		wantMsg   string
	}{
		{name: "multipart gzip", multipart: true, body: good, status: 201},
		{name: "multipart uncompressed", multipart: true, body: raw, status: 201},
		{name: "raw gzip", body: good, status: 201},
		{name: "raw uncompressed", body: raw, status: 201},
		{name: "form upload redirects", multipart: true, path: "/upload", body: good, status: 303},
		{name: "truncated gzip", multipart: true, body: good[:len(good)-10], status: 400, wantMsg: "truncated"},
		{name: "empty multipart", multipart: true, body: nil, status: 400, wantMsg: "empty"},
		{name: "empty raw", body: nil, status: 400, wantMsg: "empty"},
		{name: "empty gzip", body: gz(nil), status: 400, wantMsg: "nothing"},
		{name: "not a profile", multipart: true, body: []byte("just some text\n"), status: 400, wantMsg: "tried pprof"},
		{name: "gzipped text", body: gz([]byte("just some text\n")), status: 400, wantMsg: "not a recognised profile"},
		{name: "no file field", multipart: true, field: "other", body: good, status: 400, wantMsg: `no field named`},
		{name: "over limit", body: bytes.Repeat([]byte{1}, limit+1), status: 413, wantMsg: "over the"},
		{name: "multipart over limit", multipart: true, body: bytes.Repeat([]byte{1}, limit+1), status: 413, wantMsg: "max-upload"},
		{name: "over limit after decompression", multipart: true, body: big, status: 413, wantMsg: "decompresses"},
		{name: "form upload error is HTML", multipart: true, path: "/upload", body: []byte("nope"), status: 400, wantMsg: "<html"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			_, ts := newTestServer(t, Config{DataDir: dir, MaxUpload: limit})
			path := tt.path
			if path == "" {
				path = "/api/profiles"
			}
			var body io.Reader = bytes.NewReader(tt.body)
			ct := "application/octet-stream"
			if tt.multipart {
				field := tt.field
				if field == "" {
					field = "file"
				}
				body, ct = multipartBody(t, field, "x.pb.gz", tt.body)
			}
			resp, err := noRedirect.Post(ts.URL+path, ct, body)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			if resp.StatusCode >= 400 {
				if !bytes.Contains(b, []byte(tt.wantMsg)) {
					t.Errorf("error %s does not say %q", b, tt.wantMsg)
				}
				if path == "/api/profiles" {
					var e struct{ Error string }
					if json.Unmarshal(b, &e) != nil || e.Error == "" {
						t.Errorf("API error is not JSON {\"error\":…}: %s", b)
					}
				}
				if ents := dirEntries(t, dir); len(ents) != 0 {
					t.Errorf("failed upload stored %v", ents)
				}
				return
			}
			id := profiles.NewID(tt.body)
			if tt.status == 303 {
				if loc := resp.Header.Get("Location"); loc != "/p/"+id {
					t.Errorf("redirect to %q, want /p/%s", loc, id)
				}
			}
			// The original, its meta, and the converted profile (stored once
			// so that nothing parses the original again); beside them, the
			// recent uploads' index entry (empty, so a link to /EMPTY).
			var ents []string
			for _, e := range dirEntries(t, dir) {
				if e == "/EMPTY" || e == "/recent" || strings.HasPrefix(e, "/recent/") && !strings.HasSuffix(e, "-"+id) {
					continue
				}
				if strings.HasPrefix(e, "/recent/") {
					e = "/recent/DAY/N-" + id
				}
				ents = append(ents, e)
			}
			want := []string{"/" + id, "/" + id + "/meta.json", "/" + id + "/original", "/" + id + "/" + profiles.KeyConverted, "/recent/DAY/N-" + id}
			if fmt.Sprint(ents) != fmt.Sprint(want) {
				t.Errorf("stored %v, want %v", ents, want)
			}
			if r := get(t, ts.URL+"/p/"+id+"/flame.json"); r.status != 200 {
				t.Errorf("flame.json after upload: %d", r.status)
			}
		})
	}
}

// TestAfterUpload checks the hook later features (symbolization) use.
func TestAfterUpload(t *testing.T) {
	got := make(chan string, 2)
	_, ts := newTestServer(t, Config{AfterUpload: func(id string) { got <- id }})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	if g := <-got; g != id {
		t.Fatalf("AfterUpload(%q), want %q", g, id)
	}
}

// TestStoreInterface runs the server on a store other than Dir, as an
// object-storage backend would be.
func TestStoreInterface(t *testing.T) {
	d, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServer(t, Config{Store: struct{ store.Store }{d}})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	if r := get(t, ts.URL+"/p/"+id+"/flame.json"); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
}

// TestDamagedSymbolizedCopy: a symbolized copy that doesn't parse is
// skipped; the original still shows.
func TestDamagedSymbolizedCopy(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	if err := s.Store().Put(context.Background(), profiles.Key(id, profiles.KeySymbolized), strings.NewReader("\x1f\x8bjunk")); err != nil {
		t.Fatal(err)
	}
	s.Invalidate(id)
	if r := get(t, ts.URL+"/p/"+id+"/flame.json"); r.status != 200 || !bytes.Contains(r.body, []byte("main.compute")) {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

// TestStaticCaching: assets carry an ETag and are revalidated on every use
// (no-cache: their URLs carry no version, so a kept copy could be an older
// release's), revalidate to 304, and every response says nosniff.
func TestStaticCaching(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	r := get(t, ts.URL+"/static/style.css")
	etag := r.header.Get("ETag")
	if r.status != 200 || etag == "" || r.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("status %d, ETag %q, Cache-Control %q", r.status, etag, r.header.Get("Cache-Control"))
	}
	if r2 := get(t, ts.URL+"/static/style.css", "If-None-Match", etag); r2.status != http.StatusNotModified {
		t.Fatalf("revalidation: status %d, want 304", r2.status)
	}
	for _, u := range []string{"/", "/static/style.css", "/p/aaaaaaaaaaaaaaaaaaaa"} {
		if h := get(t, ts.URL+u).header.Get("X-Content-Type-Options"); h != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", u, h)
		}
	}
}
