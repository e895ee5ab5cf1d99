package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"viewer/symbolize"
	"viewer/web/debuginfo"
	"viewer/web/store"
)

// TestJSONRoutesAnswerErrorsAsJSON asks every JSON route of the route table
// (a .json path, an /api/ route, or one in jsonPaths) for a profile
// that does not exist and with a bad parameter, with a browser's Accept
// header, and checks each answers {"error": ...} with the status of its
// cause, not an HTML page; then that a page answers its error as JSON to a
// request that asks for JSON, and as HTML to a browser. A JSON route added
// to the table without a row here fails the test.
func TestJSONRoutesAnswerErrorsAsJSON(t *testing.T) {
	// Symbolization and the debug file store on, so that their routes
	// reach their parameters.
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	engine := symbolize.New(symbolize.Config{SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none", IgnoreMappingPaths: true})
	s, ts := newTestServer(t, Config{Store: st,
		Debuginfo:     &DebuginfoConfig{Files: debuginfo.New(debuginfo.Config{Store: st, TempDir: t.TempDir()}), Serve: "open"},
		Symbolization: &SymbolizationConfig{Engine: engine, Workers: 1, Queue: 8},
	})
	t.Cleanup(s.CloseSymbolization)
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	const missing = "aaaaaaaaaaaaaaaaaaaa" // a valid ID no profile has

	type ask struct {
		method, path, body string
		status             int
		says               string // in the error message
	}
	get := func(path string, status int, says string) ask { return ask{http.MethodGet, path, "", status, says} }
	post := func(path, body string, status int, says string) ask {
		return ask{http.MethodPost, path, body, status, says}
	}
	rows := map[string][]ask{ // route → a bad ID, a bad parameter
		"GET /p/:id/flame.json": {
			get("/p/"+missing+"/flame.json", 404, "No profile"),
			get("/p/"+id+"/flame.json?si=nope", 400, "unknown sample type")},
		"GET /p/:id/time.json": {
			get("/p/"+missing+"/time.json", 404, "No profile"),
			get("/p/"+id+"/time.json?w=0", 400, "not a width")},
		"GET /p/:id/top.json": {
			get("/p/"+missing+"/top.json", 404, "No profile"),
			get("/p/"+id+"/top.json?n=x", 400, "positive number")},
		"GET /p/:id/timeline.json": {
			get("/p/"+missing+"/timeline.json", 404, "No profile"),
			get("/p/"+id+"/timeline.json?si=nope", 400, "unknown sample type")},
		"GET /p/:id/warnings.json": {
			get("/p/"+missing+"/warnings.json", 404, "No profile"),
			get("/p/not-an-id/warnings.json", 404, "No profile")}, // it takes no parameter: a malformed ID
		"GET /p/:id/speedscope.json": {
			get("/p/"+missing+"/speedscope.json", 404, "No profile"),
			get("/p/not-an-id/speedscope.json", 404, "No profile")}, // it takes no parameter: a malformed ID
		"GET /p/:id/firefox.json": {
			get("/p/"+missing+"/firefox.json", 404, "No profile"),
			get("/p/"+id+"/firefox.json?si=nope", 400, "unknown sample type")},
		"GET /p/:id/types.json": {
			get("/p/"+missing+"/types.json", 404, "No profile"),
			get("/p/"+id+"/types.json?si=nope", 400, "unknown sample type")},
		"GET /p/:id/types/flame.json": {
			get("/p/"+missing+"/types/flame.json", 404, "No profile"),
			get("/p/"+id+"/types/flame.json?si=nope", 400, "unknown sample type")},
		"GET /p/:id/types/top.json": {
			get("/p/"+missing+"/types/top.json", 404, "No profile"),
			get("/p/"+id+"/types/top.json?si=nope", 400, "unknown sample type")},
		"GET /p/:id/annotate.json": {
			get("/p/"+missing+"/annotate.json?fn=main.work", 404, "No profile"),
			get("/p/"+id+"/annotate.json", 400, "fn")},
		"GET /p/:base/diff/:id/diff.json": {
			get("/p/"+missing+"/diff/"+id+"/diff.json", 404, "No profile"),
			get("/p/"+id+"/diff/"+id+"/diff.json?si=nope", 400, "unknown sample type")},
		"GET /p/:id/sandwich.json": {
			get("/p/"+missing+"/sandwich.json?fn=main.work", 404, "No profile"),
			get("/p/"+id+"/sandwich.json", 400, "fn")},
		"GET /p/:id/symbolization": {
			get("/p/"+missing+"/symbolization", 404, "No profile"),
			get("/p/not-an-id/symbolization", 404, "No profile")},
		"POST /p/:id/symbolize/skip": {
			post("/p/"+missing+"/symbolize/skip?build_id=c0ffee", "", 404, "No profile"),
			post("/p/"+id+"/symbolize/skip", "", 400, "build_id")},
		"POST /p/:id/symbolize/disable": { // no parameter: a malformed ID
			post("/p/"+missing+"/symbolize/disable", "", 404, "No profile"),
			post("/p/not-an-id/symbolize/disable", "", 404, "No profile")},
		"POST /p/:id/symbolize/retry": {
			post("/p/"+missing+"/symbolize/retry", "", 404, "No profile"),
			post("/p/not-an-id/symbolize/retry", "", 404, "No profile")},
		"POST /api/profiles": {
			post("/api/profiles", "not a profile", 400, "not a recognised profile")},
		"GET /api/recent": {
			get("/api/recent?n=x", 400, "positive number")},
		"GET /api/uploads/:key/progress": {
			get("/api/uploads/x/progress", 400, "progress key")},
		"POST /api/symbolize": {
			post("/api/symbolize", "{", 400, "")},
		"POST /api/debuginfo": {
			post("/api/debuginfo", "not an ELF file", 400, "multipart/form-data")},
		"POST /symbolicate/v5": {
			post("/symbolicate/v5", "{", 400, "")},
	}
	for _, r := range s.Echo().Routes() {
		key := r.Method + " " + r.Path
		json := strings.HasSuffix(r.Path, ".json") || strings.HasPrefix(r.Path, "/api/")
		if _, ok := rows[key]; json && !ok {
			t.Errorf("%s answers JSON but has no row in this test: add its bad ID and bad parameter", key)
		}
	}
	inTable, paths := map[string]bool{}, map[string]bool{}
	for _, r := range s.Echo().Routes() {
		inTable[r.Method+" "+r.Path] = true
		paths[r.Path] = true
	}
	for p := range jsonPaths {
		if !paths[p] {
			t.Errorf("jsonPaths names %s, which is not in the route table", p)
		}
	}
	for key, asks := range rows {
		if !inTable[key] {
			t.Errorf("%s is in this test but not in the route table", key)
		}
		for _, a := range asks {
			t.Run(a.method+strings.ReplaceAll(a.path, "/", "_"), func(t *testing.T) {
				// A browser's Accept, as a link opened in a tab sends it:
				// the route alone says JSON.
				status, ct, body := askWith(t, a.method, ts.URL+a.path, a.body, "text/html,application/xhtml+xml,*/*;q=0.8")
				checkJSONError(t, status, ct, body, a.status, a.says)
			})
		}
	}

	// Pages answer HTML to a browser and JSON to a request for JSON.
	for _, a := range []ask{
		get("/p/"+missing, 404, "No profile"),
		get("/p/"+id+"/top?n=x", 400, "positive number"),
		get("/p/"+id+"/sandwich?fn=main&f=(", 400, "f="),
	} {
		t.Run("page"+strings.ReplaceAll(a.path, "/", "_"), func(t *testing.T) {
			status, ct, body := askWith(t, a.method, ts.URL+a.path, "", "application/json")
			checkJSONError(t, status, ct, body, a.status, a.says)
			status, ct, body = askWith(t, a.method, ts.URL+a.path, "", "text/html,application/json;q=0.9,*/*;q=0.8")
			if status != a.status || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, a.says) {
				t.Errorf("to a browser: %d %q, want %d and an HTML page saying %q:\n%.300s", status, ct, a.status, a.says, body)
			}
		})
	}
}

// askWith sends a request with the Accept header accept and returns the
// status, content type and body of the answer.
func askWith(t *testing.T, method, url, body, accept string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	if body != "" {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// checkJSONError checks an answer is the JSON error {"error": ...} with
// status and a message containing says.
func checkJSONError(t *testing.T, status int, ct, body string, wantStatus int, says string) {
	t.Helper()
	var e struct {
		Error  *string
		Status int
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || !strings.HasPrefix(ct, "application/json") || e.Error == nil {
		t.Fatalf("%d %q, want a JSON error: %.300s", status, ct, body)
	}
	if status != wantStatus || e.Status != status || !strings.Contains(*e.Error, says) || *e.Error == "" {
		t.Errorf("%d (body says %d) %q, want %d saying %q", status, e.Status, *e.Error, wantStatus, says)
	}
}

// TestJSONRoutesAnswerTokenErrorsAsJSON: on a server with a token, a JSON
// route whose path does not say so answers a request without the token
// with a JSON 401, as it answers its other errors; the Firefox Profiler
// reads /symbolicate/v5's answers as JSON. The 401 comes from the
// middleware, before the handler: it was an HTML page.
func TestJSONRoutesAnswerTokenErrorsAsJSON(t *testing.T) {
	_, ts := newTestServer(t, Config{AuthToken: "s3cret"})
	for _, path := range []string{"/symbolicate/v5", "/p/aaaaaaaaaaaaaaaaaaaa/symbolize/retry"} {
		status, ct, body := askWith(t, http.MethodPost, ts.URL+path, "{}", "text/html,application/xhtml+xml,*/*;q=0.8")
		checkJSONError(t, status, ct, body, http.StatusUnauthorized, "token")
	}
}

// TestEncodedETagsDiffer: flame.json's gzipped and plain bodies are two
// representations, so they carry two strong ETags (RFC 9110 8.8.3); each
// revalidates to 304 with its own, and a plain request naming the gzipped
// one's gets the plain body. They shared one, so a cache could answer a
// plain request with the gzipped bytes.
func TestEncodedETagsDiffer(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	id := upload(t, ts.URL, encodeProfile(t, testProfile(), true))
	ask := func(encoding, match string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/p/"+id+"/flame.json", nil)
		req.Header.Set("Accept-Encoding", encoding)
		if match != "" {
			req.Header.Set("If-None-Match", match)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("ETag")
	}
	_, gz := ask("gzip", "")
	_, plain := ask("identity", "")
	if gz == "" || plain == "" || gz == plain {
		t.Fatalf("ETags gzip %q, plain %q: want two", gz, plain)
	}
	if code, _ := ask("gzip", gz); code != http.StatusNotModified {
		t.Errorf("gzip revalidated with its ETag: %d, want 304", code)
	}
	if code, _ := ask("identity", plain); code != http.StatusNotModified {
		t.Errorf("plain revalidated with its ETag: %d, want 304", code)
	}
	if code, _ := ask("identity", gz); code != http.StatusOK {
		t.Errorf("plain with the gzipped body's ETag: %d, want 200", code)
	}
}
