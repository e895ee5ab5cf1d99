package storetest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"viewer/web/store"
)

// GCS is an in-memory fake of Google Cloud Storage's JSON API on loopback
// (a real GCS cannot run here): object metadata, media downloads with
// Range, multipart uploads with ifGenerationMatch=0 and an MD5 check,
// listing with prefix, delimiter and pages, delete and rewrite, and the
// service's error bodies. It speaks what web/store's gs:// driver sends;
// test code reaches it through STORAGE_EMULATOR_HOST, as the Cloud
// Storage client reaches an emulator.
type GCS struct {
	// URL is the --store URL of the bucket.
	URL string
	// Endpoint is the server's http://127.0.0.1:PORT.
	Endpoint string
	Bucket   string
	srv      *httptest.Server
	down     atomic.Bool
	failPuts atomic.Bool
	requests atomic.Int64

	mu      sync.Mutex
	objects map[string]*gcsFakeObject
	gen     int64
}

type gcsFakeObject struct {
	data                                   []byte
	contentType, cacheControl, disposition string
	encoding, language                     string
	metadata                               map[string]string
	created, updated                       time.Time
	generation                             int64
}

// NewGCS starts the fake on 127.0.0.1 holding bucket "profiles", closed
// when the test ends, and points STORAGE_EMULATOR_HOST at it (so tests
// using it cannot run in parallel).
func NewGCS(t testing.TB) *GCS {
	t.Helper()
	g := &GCS{Bucket: "profiles", objects: map[string]*gcsFakeObject{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	g.Endpoint = g.srv.URL
	g.URL = "gs://" + g.Bucket
	t.Setenv("STORAGE_EMULATOR_HOST", g.srv.URL)
	return g
}

// SetDown makes every request fail with 503 (true) or serves again.
func (g *GCS) SetDown(down bool) { g.down.Store(down) }

// SetFailPuts makes uploads fail with 503 while reads still work.
func (g *GCS) SetFailPuts(fail bool) { g.failPuts.Store(fail) }

// Requests counts the HTTP requests the server received.
func (g *GCS) Requests() int64 { return g.requests.Load() }

// Open opens the bucket through store.OpenURL, closed when the test ends.
func (g *GCS) Open(t testing.TB) *store.Blob { t.Helper(); return g.OpenURL(t, g.URL) }

// OpenURL opens u (this bucket's URL with parameters) through store.OpenURL.
func (g *GCS) OpenURL(t testing.TB, u string) *store.Blob {
	t.Helper()
	b, err := store.OpenURL(context.Background(), u)
	if err != nil {
		t.Fatalf("opening %s: %v", u, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// WithPrefix is the bucket's URL keeping keys under prefix.
func (g *GCS) WithPrefix(prefix string) string {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return g.URL + "?prefix=" + url.QueryEscape(prefix)
}

// Object returns the stored bytes of name, as a test's independent check.
func (g *GCS) Object(name string) ([]byte, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	o, ok := g.objects[name]
	if !ok {
		return nil, false
	}
	return slices.Clone(o.data), true
}

func gcsFail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

func (g *GCS) serve(w http.ResponseWriter, r *http.Request) {
	g.requests.Add(1)
	if g.down.Load() || (g.failPuts.Load() && r.Method == http.MethodPost) {
		gcsFail(w, http.StatusServiceUnavailable, "injected outage")
		return
	}
	// /storage/v1/b/B/o[/O[/rewriteTo/b/B2/o/O2]] or /upload/storage/v1/b/B/o
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			gcsFail(w, http.StatusBadRequest, "bad path")
			return
		}
		segs[i] = u
	}
	upload := len(segs) > 0 && segs[0] == "upload"
	if upload {
		segs = segs[1:]
	}
	if len(segs) < 5 || segs[0] != "storage" || segs[1] != "v1" || segs[2] != "b" || segs[4] != "o" {
		gcsFail(w, http.StatusNotFound, "Not Found")
		return
	}
	if segs[3] != g.Bucket {
		gcsFail(w, http.StatusNotFound, "The specified bucket does not exist.")
		return
	}
	switch {
	case upload && len(segs) == 5 && r.Method == http.MethodPost:
		g.upload(w, r)
	case len(segs) == 5 && r.Method == http.MethodGet:
		g.list(w, r)
	case len(segs) == 6 && r.Method == http.MethodGet:
		g.get(w, r, segs[5])
	case len(segs) == 6 && r.Method == http.MethodDelete:
		g.mu.Lock()
		_, ok := g.objects[segs[5]]
		delete(g.objects, segs[5])
		g.mu.Unlock()
		if !ok {
			gcsFail(w, http.StatusNotFound, "No such object: "+g.Bucket+"/"+segs[5])
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case len(segs) == 11 && segs[6] == "rewriteTo" && r.Method == http.MethodPost:
		if segs[8] != g.Bucket {
			gcsFail(w, http.StatusNotFound, "The specified bucket does not exist.")
			return
		}
		g.mu.Lock()
		src, ok := g.objects[segs[5]]
		var dst *gcsFakeObject
		if ok {
			c := *src
			g.gen++
			c.generation, c.created, c.updated = g.gen, time.Now(), time.Now()
			dst = &c
			g.objects[segs[10]] = dst
		}
		g.mu.Unlock()
		if !ok {
			gcsFail(w, http.StatusNotFound, "No such object: "+g.Bucket+"/"+segs[5])
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "storage#rewriteResponse", "done": true, "resource": g.resource(segs[10], dst)})
	default:
		gcsFail(w, http.StatusMethodNotAllowed, "method not supported by the fake")
	}
}

func (g *GCS) resource(name string, o *gcsFakeObject) map[string]any {
	sum := md5.Sum(o.data)
	m := map[string]any{
		"kind": "storage#object", "name": name, "bucket": g.Bucket,
		"size":        strconv.Itoa(len(o.data)),
		"contentType": o.contentType,
		"md5Hash":     base64.StdEncoding.EncodeToString(sum[:]),
		"generation":  strconv.FormatInt(o.generation, 10),
		"etag":        base64.StdEncoding.EncodeToString([]byte("g" + strconv.FormatInt(o.generation, 10))),
		"timeCreated": o.created.UTC().Format(time.RFC3339Nano),
		"updated":     o.updated.UTC().Format(time.RFC3339Nano),
	}
	for k, v := range map[string]string{"cacheControl": o.cacheControl, "contentDisposition": o.disposition, "contentEncoding": o.encoding, "contentLanguage": o.language} {
		if v != "" {
			m[k] = v
		}
	}
	if len(o.metadata) > 0 {
		m["metadata"] = o.metadata
	}
	return m
}

func (g *GCS) get(w http.ResponseWriter, r *http.Request, name string) {
	g.mu.Lock()
	o, ok := g.objects[name]
	g.mu.Unlock()
	if !ok {
		gcsFail(w, http.StatusNotFound, "No such object: "+g.Bucket+"/"+name)
		return
	}
	if r.URL.Query().Get("alt") != "media" {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		json.NewEncoder(w).Encode(g.resource(name, o))
		return
	}
	h := w.Header()
	h.Set("Content-Type", o.contentType)
	h.Set("Last-Modified", o.updated.UTC().Format(http.TimeFormat))
	h.Set("X-Goog-Generation", strconv.FormatInt(o.generation, 10))
	h.Set("X-Goog-Stored-Content-Length", strconv.Itoa(len(o.data)))
	rg := r.Header.Get("Range")
	if rg == "" {
		h.Set("Content-Length", strconv.Itoa(len(o.data)))
		w.Write(o.data)
		return
	}
	var start, end int64
	size := int64(len(o.data))
	spec, ok := strings.CutPrefix(rg, "bytes=")
	a, b, ok2 := strings.Cut(spec, "-")
	start, err := strconv.ParseInt(a, 10, 64)
	if !ok || !ok2 || err != nil {
		gcsFail(w, http.StatusBadRequest, "bad Range "+rg)
		return
	}
	end = size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil {
			gcsFail(w, http.StatusBadRequest, "bad Range "+rg)
			return
		}
		end = min(end, size-1)
	}
	if start >= size {
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		gcsFail(w, http.StatusRequestedRangeNotSatisfiable, "The requested range cannot be satisfied.")
		return
	}
	h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, size))
	h.Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(o.data[start : end+1])
}

func (g *GCS) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix, delim, token := q.Get("prefix"), q.Get("delimiter"), q.Get("pageToken")
	max, err := strconv.Atoi(q.Get("maxResults"))
	if err != nil || max <= 0 {
		max = 1000
	}
	type entry struct {
		name string
		dir  bool
	}
	seen := map[string]bool{}
	var all []entry
	g.mu.Lock()
	for name := range g.objects {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if i := strings.Index(rest, delim); delim != "" && i >= 0 {
			p := prefix + rest[:i+len(delim)]
			if !seen[p] {
				seen[p] = true
				all = append(all, entry{p, true})
			}
			continue
		}
		all = append(all, entry{name, false})
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var page []entry
	next := ""
	for _, e := range all {
		if token != "" && e.name <= token {
			continue
		}
		if len(page) == max {
			next = page[len(page)-1].name
			break
		}
		page = append(page, e)
	}
	var items []map[string]any
	var prefixes []string
	for _, e := range page {
		if e.dir {
			prefixes = append(prefixes, e.name)
		} else {
			items = append(items, g.resource(e.name, g.objects[e.name]))
		}
	}
	g.mu.Unlock()
	resp := map[string]any{"kind": "storage#objects"}
	if len(items) > 0 {
		resp["items"] = items
	}
	if len(prefixes) > 0 {
		resp["prefixes"] = prefixes
	}
	if next != "" {
		resp["nextPageToken"] = next
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(resp)
}

func (g *GCS) upload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("uploadType") != "multipart" {
		gcsFail(w, http.StatusBadRequest, "the fake takes uploadType=multipart only")
		return
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/related" {
		gcsFail(w, http.StatusBadRequest, "want a multipart/related body")
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	part, err := mr.NextPart()
	if err != nil {
		gcsFail(w, http.StatusBadRequest, "no metadata part: "+err.Error())
		return
	}
	var meta struct {
		Name, ContentType, CacheControl, ContentDisposition string
		ContentEncoding, ContentLanguage, MD5Hash           string
		Metadata                                            map[string]string
	}
	if err := json.NewDecoder(part).Decode(&meta); err != nil || meta.Name == "" {
		gcsFail(w, http.StatusBadRequest, "bad metadata part")
		return
	}
	part, err = mr.NextPart()
	if err != nil {
		gcsFail(w, http.StatusBadRequest, "no media part: "+err.Error())
		return
	}
	var data bytes.Buffer
	if _, err := io.Copy(&data, part); err != nil {
		// The client went away mid-body: nothing is created.
		gcsFail(w, http.StatusBadRequest, "incomplete body: "+err.Error())
		return
	}
	if _, err := mr.NextPart(); err != io.EOF {
		gcsFail(w, http.StatusBadRequest, "body does not end after the media part")
		return
	}
	if meta.MD5Hash != "" {
		sum := md5.Sum(data.Bytes())
		if base64.StdEncoding.EncodeToString(sum[:]) != meta.MD5Hash {
			gcsFail(w, http.StatusBadRequest, "Provided MD5 hash does not match the calculated MD5 hash of the data.")
			return
		}
	}
	if meta.ContentType == "" {
		meta.ContentType = part.Header.Get("Content-Type")
	}
	g.mu.Lock()
	if q.Get("ifGenerationMatch") == "0" && g.objects[meta.Name] != nil {
		g.mu.Unlock()
		gcsFail(w, http.StatusPreconditionFailed, "At least one of the pre-conditions you specified did not hold.")
		return
	}
	g.gen++
	now := time.Now()
	o := &gcsFakeObject{
		data: data.Bytes(), contentType: meta.ContentType, cacheControl: meta.CacheControl,
		disposition: meta.ContentDisposition, encoding: meta.ContentEncoding, language: meta.ContentLanguage,
		metadata: meta.Metadata, created: now, updated: now, generation: g.gen,
	}
	g.objects[meta.Name] = o
	res := g.resource(meta.Name, o)
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(res)
}
