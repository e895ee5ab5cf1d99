package web

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"github.com/labstack/echo/v4"
	"golang.org/x/net/html"

	"viewer/symbolize"
	"viewer/web/profiles"
	"viewer/web/store"
)

// xssName is a function name a hostile profile might carry.
const xssName = `<script>alert(1)</script>`

// hostileProfile names everything a page may show after markup: functions,
// files, the binary, sample types, comments and labels.
func hostileProfile() *profile.Profile {
	p := testProfile()
	p.Function[2].Name = xssName
	p.Function[2].SystemName = xssName
	p.Function[2].Filename = `"><img src=x onerror=alert(2)>.go`
	p.Function[0].Name = `main.main</title><script>alert(3)</script>`
	p.Mapping[1].File = `/lib/<svg onload=alert(4)>.so`
	p.SampleType[1].Type = `cpu"><script>alert(5)</script>`
	p.DefaultSampleType = p.SampleType[1].Type
	p.Comments = []string{`<script>alert(6)</script>`}
	p.Sample[0].Label = map[string][]string{"<b>k</b>": {`</script><script>alert(7)</script>`}}
	return p
}

// rawMarkup matches markup a hostile name would inject if it were not
// escaped.
var rawMarkup = regexp.MustCompile(`<script>alert|<img src=x|<svg onload|<b>k</b>`)

// TestNamesEscapedEverywhere uploads a profile whose names are markup and
// checks every page and file shows them as text.
func TestNamesEscapedEverywhere(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	body, ct := multipartBody(t, "file", `<script>alert(8)</script>.pb.gz`, encodeProfile(t, hostileProfile(), true))
	resp, err := http.Post(ts.URL+"/api/profiles", ct, body)
	if err != nil {
		t.Fatal(err)
	}
	var r uploadResponse
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	id := r.ID
	for _, path := range []string{"/p/" + id, "/p/" + id + "/top", "/p/" + id + "/types", "/p/" + id + "/types/flame",
		"/p/" + id + "/flame.svg", "/p/" + id + "/flame.json", "/p/" + id + "/types.json",
		"/p/" + id + "/top?si=samples", "/nowhere/" + "%3Cscript%3Ealert(9)%3C%2Fscript%3E",
		"/p/" + id + "/sandwich?fn=" + url.QueryEscape(xssName), "/p/" + id + "/sandwich.json?fn=" + url.QueryEscape(xssName),
		"/p/" + id + "/source?fn=" + url.QueryEscape(xssName), "/p/" + id + "/diff/" + id, "/p/" + id + "/diff/" + id + "/diff.json", "/p/" + id + "/compare",
		"/p/" + id + "/flame.json?f=" + url.QueryEscape(xssName), "/p/" + id + "?f=" + url.QueryEscape(xssName), "/p/" + id + "?si=%3Cscript%3Ealert(10)%3C%2Fscript%3E"} {
		f := get(t, ts.URL+path)
		if f.status >= 500 {
			t.Errorf("%s: status %d", path, f.status)
			continue
		}
		if m := rawMarkup.Find(f.body); m != nil {
			i := bytes.Index(f.body, m)
			t.Errorf("%s: unescaped %q in the response: …%s…", path, m, f.body[max(0, i-80):min(len(f.body), i+80)])
		}
		ctype := f.header.Get("Content-Type")
		switch {
		case strings.Contains(ctype, "text/html"):
			checkNoInlineCode(t, path, f.body)
		case strings.Contains(ctype, "svg"):
			checkSVG(t, path, f.body)
		}
	}
	// The escaped name does reach the pages (so the test above looked at
	// pages that show it).
	top := get(t, ts.URL+"/p/"+id+"/top?si=samples")
	if !bytes.Contains(top.body, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
		t.Errorf("top page does not show the function name as text:\n%.3000s", top.body)
	}
	svg := get(t, ts.URL+"/p/"+id+"/flame.svg?si=samples")
	if !bytes.Contains(svg.body, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
		t.Errorf("flame.svg does not show the function name as text")
	}
	js := get(t, ts.URL+"/p/"+id+"/flame.json?si=samples")
	var fj struct{ Names []string }
	if err := json.Unmarshal(mustGunzipMaybe(t, js), &fj); err != nil {
		t.Fatal(err)
	}
	if !contains(fj.Names, xssName) {
		t.Errorf("flame.json names %q, want %q among them verbatim", fj.Names, xssName)
	}
}

func mustGunzipMaybe(t *testing.T, f fetched) []byte {
	if f.header.Get("Content-Encoding") == "gzip" || bytes.HasPrefix(f.body, []byte{0x1f, 0x8b}) {
		return mustGunzip(t, f.body)
	}
	return f.body
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// checkNoInlineCode fails when an HTML page has code the CSP would block:
// inline scripts (other than JSON data), event handler attributes, style
// attributes or elements, javascript: URLs.
func checkNoInlineCode(t *testing.T, path string, page []byte) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(page))
	inScript := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[strings.ToLower(a.Key)] = a.Val
				k := strings.ToLower(a.Key)
				if strings.HasPrefix(k, "on") || k == "style" {
					t.Errorf("%s: <%s %s=%q> is blocked by the Content-Security-Policy", path, tok.Data, a.Key, a.Val)
				}
				if (k == "href" || k == "src" || k == "action") && strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
					t.Errorf("%s: <%s %s=%q>", path, tok.Data, a.Key, a.Val)
				}
			}
			switch tok.Data {
			case "style":
				t.Errorf("%s: a <style> element is blocked by the Content-Security-Policy", path)
			case "script":
				_, hasSrc := attrs["src"]
				if !hasSrc && attrs["type"] != "application/json" {
					t.Errorf("%s: inline <script %v>", path, tok.Attr)
				}
				inScript = !hasSrc
			}
		case html.TextToken:
			if inScript {
				// JSON handed to scripts must not be able to close its element.
				if bytes.Contains(bytes.ToLower(z.Text()), []byte("</script")) {
					t.Errorf("%s: JSON data contains </script", path)
				}
			}
		case html.EndTagToken:
			inScript = false
		}
	}
}

// checkSVG fails when an SVG has a script element or event handler.
func checkSVG(t *testing.T, path string, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Errorf("%s: not well-formed XML: %v", path, err)
			return
		}
		if se, ok := tok.(xml.StartElement); ok {
			if strings.EqualFold(se.Name.Local, "script") || strings.EqualFold(se.Name.Local, "foreignObject") {
				t.Errorf("%s: SVG has a <%s> element", path, se.Name.Local)
			}
			for _, a := range se.Attr {
				if strings.HasPrefix(strings.ToLower(a.Name.Local), "on") {
					t.Errorf("%s: SVG element %s has handler %s", path, se.Name.Local, a.Name.Local)
				}
			}
		}
	}
}

// TestSecurityHeaders checks every HTML page, file and error carries the
// CSP and the other protective headers, and that CORS stays closed.
func TestSecurityHeaders(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	for _, path := range []string{"/", "/login", "/p/" + id, "/p/" + id + "/top", "/p/" + id + "/types", "/p/" + id + "/types/flame",
		"/p/" + id + "/flame.json", "/p/" + id + "/flame.svg", "/p/" + id + "/profile.pb.gz", "/static/page.js", "/nowhere", "/p/aaaaaaaaaaaaaaaaaaaa"} {
		f := get(t, ts.URL+path, "Origin", "https://evil.example")
		h := f.header
		csp := h.Get("Content-Security-Policy")
		if csp == "" || strings.Contains(csp, "unsafe-inline") && !strings.HasSuffix(path, ".svg") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if strings.Contains(h.Get("Content-Type"), "text/html") {
			if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("%s: CSP %q lacks script-src 'self' or frame-ancestors 'none'", path, csp)
			}
			checkNoInlineCode(t, path, f.body)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin"} {
			if got := h.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", path, k, got, want)
			}
		}
		if h.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", path)
		}
		for k := range h {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s: CORS header %s: %s", path, k, h.Get(k))
			}
		}
	}
	// A cross-origin preflight gets no permission.
	req, _ := http.NewRequest(http.MethodOptions, ts.URL+"/api/profiles", nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for k := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("preflight answered %s: %s", k, resp.Header.Get(k))
		}
	}
}

// TestNoTraversal tries ../ and its encodings on every route that takes an
// ID or a file name, and a directory listing of /static/.
func TestNoTraversal(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	_ = s
	bad := []string{"..", "%2e%2e", "..%2f..%2f..%2fetc%2fpasswd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "..%5c..%5cetc", "%252e%252e%252f",
		"....//....//etc", "..;", id + "%2f..%2f" + id, id + "%00", "%c0%ae%c0%ae", "." + id[1:], strings.ToUpper(id), id + "x", ".", "~root"}
	suffixes := []string{"", "/top", "/flame.json", "/flame.svg", "/profile.pb.gz", "/speedscope.json", "/speedscope", "/firefox.json", "/firefox", "/types", "/types.json", "/types/flame", "/types/flame.json", "/events", "/symbolization",
		"/sandwich?fn=main.work", "/sandwich.json?fn=main.work", "/source?fn=main.work", "/compare", "/diff/" + id, "/diff/" + id + "/diff.json"}
	for _, b := range bad {
		for _, path := range []string{"/p/" + id + "/diff/" + b, "/p/" + id + "/diff/" + b + "/diff.json"} {
			if f := get(t, ts.URL+path); f.status != 404 && f.status != 400 {
				t.Errorf("%s: status %d, want 404", path, f.status)
			}
		}
		for _, suf := range suffixes {
			path := "/p/" + b + suf
			f := get(t, ts.URL+path)
			if f.status != 404 && f.status != 400 && f.status != 301 && f.status != 308 {
				t.Errorf("%s: status %d, want 404", path, f.status)
			}
			if bytes.Contains(f.body, []byte("root:")) || bytes.Contains(f.body, []byte(`"format"`)) {
				t.Errorf("%s: leaked a file", path)
			}
		}
		for _, post := range []string{"/symbolize/skip?build_id=" + b, "/symbolize/retry", "/symbolize/disable"} {
			resp, err := http.Post(ts.URL+"/p/"+b+post, "text/plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Errorf("POST /p/%s%s: status %d", b, post, resp.StatusCode)
			}
		}
	}
	for _, path := range []string{"/static/", "/static", "/static/..", "/static/../server.go", "/static/%2e%2e/server.go", "/static/..%2fstatic.go",
		"/static/%2e%2e%2f%2e%2e%2fgo.mod", "/static//etc/passwd", "/static/./", "/static/static.go", "/static/.%2e/go.mod"} {
		f := get(t, ts.URL+path)
		if f.status == 200 {
			t.Errorf("%s: status 200 (%d bytes), want 404", path, len(f.body))
		}
		if bytes.Contains(f.body, []byte("package ")) || bytes.Contains(f.body, []byte("module ")) || bytes.Contains(f.body, []byte(`href="page.js"`)) {
			t.Errorf("%s: leaked a source file or a listing", path)
		}
	}
}

// TestPanicIsA500ForThatRequestOnly checks a panicking handler gives its own
// request a 500 naming the request ID, logs the panic with that ID, and
// leaves the server serving.
func TestPanicIsA500ForThatRequestOnly(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	s, ts := newTestServer(t, Config{Log: slog.New(slog.NewTextHandler(&lockedBuffer{b: &logs, mu: &mu}, nil))})
	s.Echo().GET("/boom", func(c echo.Context) error { panic("kaboom in a handler") })
	s.Echo().POST("/api/boom", func(c echo.Context) error { var m map[string]int; m["x"]++; return nil })
	f := get(t, ts.URL+"/boom")
	rid := f.header.Get("X-Request-Id")
	if f.status != 500 || rid == "" || !bytes.Contains(f.body, []byte(rid)) {
		t.Fatalf("panic: status %d, request ID %q, body %.500s", f.status, rid, f.body)
	}
	mu.Lock()
	l := logs.String()
	mu.Unlock()
	if !strings.Contains(l, "request_id="+rid) || !strings.Contains(l, "kaboom in a handler") {
		t.Errorf("log does not name the request and the panic:\n%s", l)
	}
	resp, err := http.Post(ts.URL+"/api/boom", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(e.Error, resp.Header.Get("X-Request-Id")) {
		t.Errorf("API panic: %d %q", resp.StatusCode, e.Error)
	}
	if f := get(t, ts.URL+"/healthz"); f.status != 200 {
		t.Errorf("after panics, /healthz answers %d", f.status)
	}
	upload(t, ts.URL, encodeProfile(t, testProfile(), true))
}

type lockedBuffer struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestProfileCountLimits checks each count limit refuses an upload with 413
// naming the count and the flag, and stores nothing.
func TestProfileCountLimits(t *testing.T) {
	data := encodeProfile(t, testProfile(), true) // 3 samples, 5 locations, 4 functions, 2 mappings
	for _, tt := range []struct {
		lim  Limits
		want string
	}{
		// pprof's counts are checked on its wire format, stopping at the
		// first over the limit.
		{Limits{MaxSamples: 2}, "more than 2 samples (restart the server with a larger --max-samples"},
		{Limits{MaxLocations: 4}, "more than 4 locations"},
		{Limits{MaxFunctions: 3}, "--max-functions"},
		{Limits{MaxMappings: 1}, "more than 1 mappings"},
		{Limits{MaxFrames: 4}, "more than 4 frames (restart the server with a larger --max-frames"},
		{Limits{MaxStrings: 5}, "more than 5 strings (restart the server with a larger --max-strings"},
	} {
		s, ts := newTestServer(t, Config{Limits: tt.lim})
		body, ct := multipartBody(t, "file", "cpu.pb.gz", data)
		resp, err := http.Post(ts.URL+"/api/profiles", ct, body)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(e.Error, tt.want) {
			t.Errorf("%+v: %d %q, want 413 with %q", tt.lim, resp.StatusCode, e.Error, tt.want)
		}
		if ok, _ := store.Exists(context.Background(), s.Store(), profiles.Key(profiles.NewID(data), profiles.KeyOriginal)); ok {
			t.Errorf("%+v: the refused profile was stored", tt.lim)
		}
	}
	// Negative means no limit.
	_, ts := newTestServer(t, Config{Limits: Limits{MaxSamples: -1, MaxLocations: -1}})
	upload(t, ts.URL, data)
}

// TestConcurrentUploadLimit holds the only parse slot (an upload whose
// AfterUpload hook blocks) and checks the next upload gets 503 with
// Retry-After, then succeeds once the slot is free.
func TestConcurrentUploadLimit(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	_, ts := newTestServer(t, Config{
		Limits: Limits{MaxConcurrentUploads: 1, UploadWait: 200 * time.Millisecond},
		AfterUpload: func(string) {
			once.Do(func() { held <- struct{}{}; <-hold })
		},
	})
	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/api/profiles", "application/octet-stream", bytes.NewReader(encodeProfile(t, testProfile(), true)))
		if err != nil {
			first <- -1
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-held
	resp, err := http.Post(ts.URL+"/api/profiles", "application/octet-stream", bytes.NewReader(encodeProfile(t, hostileProfile(), true)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second upload while the slot is held: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(hold)
	if st := <-first; st != 201 {
		t.Fatalf("first upload: %d", st)
	}
	upload(t, ts.URL, encodeProfile(t, hostileProfile(), true))
}

// TestSlowUploadHoldsNoSlot checks an upload whose body is still arriving
// holds no parse slot: with one slot, other uploads are stored meanwhile,
// and the slow one still is once its body is complete.
func TestSlowUploadHoldsNoSlot(t *testing.T) {
	_, ts := newTestServer(t, Config{Limits: Limits{MaxConcurrentUploads: 1, UploadWait: 100 * time.Millisecond}})
	data := encodeProfile(t, testProfile(), true)
	pr, pw := io.Pipe()
	slow := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/profiles", pr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			slow <- -1
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	pw.Write(data[:10])
	time.Sleep(100 * time.Millisecond)
	for range 3 {
		upload(t, ts.URL, encodeProfile(t, hostileProfile(), true))
	}
	pw.Write(data[10:])
	pw.Close()
	if st := <-slow; st != 201 {
		t.Fatalf("slow upload: %d", st)
	}
}

// TestUploadToken checks a server with a token refuses uploads without it,
// takes them with the bearer token or after /login, and serves links to
// anyone.
func TestUploadToken(t *testing.T) {
	const tok = "s3cret-token"
	_, ts := newTestServer(t, Config{AuthToken: tok})
	data := encodeProfile(t, testProfile(), true)
	post := func(path string, hdr ...string) *http.Response {
		t.Helper()
		body, ct := multipartBody(t, "file", "cpu.pb.gz", data)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, body)
		req.Header.Set("Content-Type", ct)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Basic " + tok}, {"Authorization", "Bearer " + tok + "x"},
		{"Cookie", tokenCookie + "=" + tok}, {"Cookie", tokenCookie + "=" + tokenDigest("wrong")}} {
		for _, path := range []string{"/api/profiles", "/upload"} {
			if r := post(path, hdr...); r.StatusCode != 401 || r.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("POST %s with %q: %d, want 401 with WWW-Authenticate", path, hdr, r.StatusCode)
			}
		}
	}
	r := post("/api/profiles", "Authorization", "Bearer "+tok)
	var u uploadResponse
	json.NewDecoder(r.Body).Decode(&u)
	if r.StatusCode != 201 {
		t.Fatalf("upload with the token: %d", r.StatusCode)
	}
	for _, p := range []string{"/p/" + u.ID, "/p/" + u.ID + "/flame.json", "/p/" + u.ID + "/top", "/p/" + u.ID + "/profile.pb.gz"} {
		if f := get(t, ts.URL+p); f.status != 200 {
			t.Errorf("GET %s without a token: %d, want 200", p, f.status)
		}
	}
	// The browser signs in once; its cookie then lets the form upload.
	resp, err := noRedirect.PostForm(ts.URL+"/login", map[string][]string{"token": {"nope"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Errorf("login with a wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp, err = noRedirect.PostForm(ts.URL+"/login", map[string][]string{"token": {tok}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := resp.Cookies()
	if resp.StatusCode != 303 || len(cs) != 1 || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || strings.Contains(cs[0].Value, tok) {
		t.Fatalf("login: %d, cookies %+v; want 303 and one HttpOnly SameSite=Strict cookie without the token", resp.StatusCode, cs)
	}
	if r := post("/upload", "Cookie", cs[0].Name+"="+cs[0].Value); r.StatusCode != 303 || r.Header.Get("Location") != "/p/"+u.ID {
		t.Errorf("form upload after login: %d → %q", r.StatusCode, r.Header.Get("Location"))
	}
}

// fullStore is a store whose disk fills up after limit bytes of a Put.
type fullStore struct {
	store.Store
	limit int
}

func (f fullStore) Put(ctx context.Context, key string, r io.Reader) error {
	b, _ := io.ReadAll(r)
	if len(b) > f.limit {
		return fmt.Errorf("store: writing %s: %w", key, &pathError{syscall.ENOSPC})
	}
	return f.Store.Put(ctx, key, bytes.NewReader(b))
}

type pathError struct{ err error }

func (p *pathError) Error() string { return "write /data/x/.tmp-1: " + p.err.Error() }
func (p *pathError) Unwrap() error { return p.err }

// TestDiskFullIs507 checks an upload the store cannot write for lack of
// space is answered 507 and leaves no profile.
func TestDiskFullIs507(t *testing.T) {
	d, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServer(t, Config{Store: fullStore{Store: d, limit: 100}})
	data := encodeProfile(t, testProfile(), true)
	body, ct := multipartBody(t, "file", "cpu.pb.gz", data)
	resp, err := http.Post(ts.URL+"/api/profiles", ct, body)
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(e.Error, "disk is full") {
		t.Fatalf("upload to a full disk: %d %q; want 507", resp.StatusCode, e.Error)
	}
	id := profiles.NewID(data)
	if f := get(t, ts.URL+"/p/"+id); f.status != 404 {
		t.Errorf("profile page after a failed store: %d, want 404", f.status)
	}
	if _, err := d.Stat(context.Background(), profiles.Key(id, profiles.KeyOriginal)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("original stored after a full-disk failure: %v", err)
	}
}

// TestStalledUploadIsDropped checks an upload whose body stops arriving
// gives its slot back after UploadIdle, so the next upload gets in.
func TestStalledUploadIsDropped(t *testing.T) {
	_, ts := newTestServer(t, Config{Limits: Limits{MaxConcurrentUploads: 1, UploadWait: 10 * time.Second, UploadIdle: 300 * time.Millisecond}})
	data := encodeProfile(t, testProfile(), true)
	pr, pw := io.Pipe()
	defer pw.Close()
	stalled := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/profiles", pr)
		req.ContentLength = int64(len(data))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			stalled <- -1
			return
		}
		resp.Body.Close()
		stalled <- resp.StatusCode
	}()
	pw.Write(data[:10]) // and nothing more
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	upload(t, ts.URL, encodeProfile(t, hostileProfile(), true))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the next upload waited %v for the stalled one's slot", d)
	}
	select {
	case st := <-stalled:
		if st == http.StatusCreated {
			t.Errorf("the stalled upload was stored")
		}
	case <-time.After(5 * time.Second):
		t.Error("the stalled upload was never answered")
	}
}

// TestGzipBombRefusedEarly uploads 1 MiB that inflates to 1 GiB of zeros
// (1024 gzip members of 1 MiB each) to a server taking 8 MiB: it answers 413
// having inflated little more than the limit.
func TestGzipBombRefusedEarly(t *testing.T) {
	_, ts := newTestServer(t, Config{MaxUpload: 8 << 20})
	var member bytes.Buffer
	zw := gzip.NewWriter(&member)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	bomb := bytes.Repeat(member.Bytes(), 1024)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.Post(ts.URL+"/api/profiles", "application/octet-stream", bytes.NewReader(bomb))
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if resp.StatusCode != 413 || !strings.Contains(e.Error, "decompresses to more than") {
		t.Fatalf("gzip bomb of %d bytes: %d %q; want 413 saying it decompresses past the limit", len(bomb), resp.StatusCode, e.Error)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 128<<20 {
		t.Errorf("refusing the bomb allocated %d MiB; it should stop near the 8 MiB limit", alloc>>20)
	}
}

// TestSourceReadsLocalPathsOnlyForLocalRequests checks the source view reads
// a file a profile names only for a request made on this machine, not one
// through a reverse proxy or under a DNS-rebound host name.
func TestSourceReadsLocalPathsOnlyForLocalRequests(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.c")
	os.WriteFile(secret, []byte("int main() {\n  return 42; // SECRET-LINE\n}\n"), 0o600)
	p := testProfile()
	p.Function[2].Filename = secret
	for _, l := range p.Location {
		for i := range l.Line {
			if l.Line[i].Function == p.Function[2] {
				l.Line[i].Line = 2
			}
		}
	}
	// The debug info's say (localfiles_test.go checks it with a real
	// binary): the file is in a unit whose directory holds it.
	units := fixedUnits{Dir: filepath.Dir(secret), Files: []string{secret}}
	_, ts := newTestServer(t, Config{Source: &SourceConfig{LocalPaths: true, Units: units}})
	id := upload(t, ts.URL, encodeProfile(t, p, true))
	src := ts.URL + "/p/" + id + "/source?fn=" + url.QueryEscape(p.Function[2].Name)
	fetch := func(host string, hdr ...string) string {
		req, _ := http.NewRequest(http.MethodGet, src, nil)
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if b := fetch(""); !strings.Contains(b, "SECRET-LINE") {
		t.Fatalf("a local request does not see the local source file (the feature this guards):\n%.2000s", b)
	}
	for _, tc := range []struct {
		host string
		hdr  []string
	}{
		{"viewer.example.com", nil},
		{"attacker.example:" + strings.Split(ts.URL, ":")[2], nil},
		{"", []string{"X-Forwarded-For", "203.0.113.9"}},
		{"", []string{"Forwarded", "for=203.0.113.9"}},
		{"", []string{"X-Real-IP", "203.0.113.9"}},
		{"", []string{"Via", "1.1 nginx"}},
	} {
		if b := fetch(tc.host, tc.hdr...); strings.Contains(b, "SECRET-LINE") {
			t.Errorf("Host %q, headers %q: the source view read a local file for a request that did not come from this machine", tc.host, tc.hdr)
		}
	}
}

// fixedUnits answers every address with one compile unit.
type fixedUnits symbolize.CompileUnit

func (u fixedUnits) Unit(context.Context, *profile.Mapping, uint64) (symbolize.CompileUnit, bool, error) {
	return symbolize.CompileUnit(u), true, nil
}
