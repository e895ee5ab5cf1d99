package web

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/views"
	"viewer/web/debuginfo"
	"viewer/web/ingest"
)

// DebuginfoConfig makes the server a debuginfod server for the files
// uploaded to it (web/debuginfo), and accepts those uploads.
type DebuginfoConfig struct {
	Files *debuginfo.Store
	// Serve is who may read: "open" (anyone, as debuginfod servers are)
	// or "token" (the upload token, e.g. from DEBUGINFOD_HEADERS_FILE).
	Serve string
	// RefuseUploads, when set, is why this server takes no debug files
	// (403): it listens beyond loopback with no --auth-token, and
	// --debuginfod-serve=open was not given explicitly.
	RefuseUploads string

	metrics debuginfodMetrics
}

// readMethods are the methods the debuginfod routes answer: HEAD as GET
// without the body (the elfutils server answers HEAD with 400).
var readMethods = []string{http.MethodGet, http.MethodHead}

// isDebuginfoUpload reports whether the request stores a debug file; the
// upload guard then asks for the token as for profiles (security.go).
func isDebuginfoUpload(c echo.Context) bool {
	r := c.Request()
	return r.Method == http.MethodPut && strings.HasPrefix(c.Path(), "/buildid/") ||
		r.Method == http.MethodPost && c.Path() == "/api/debuginfo"
}

// debuginfodMetrics counts the debuginfod requests by route type and
// status, for /metrics.
type debuginfodMetrics struct {
	mu sync.Mutex
	n  map[[2]string]int64
}

func (m *debuginfodMetrics) add(typ string, status int) {
	m.mu.Lock()
	if m.n == nil {
		m.n = map[[2]string]int64{}
	}
	m.n[[2]string{typ, strconv.Itoa(status)}]++
	m.mu.Unlock()
}

// dMetrics are the server's counters (a throwaway set when it serves no
// debug info).
func (s *Server) dMetrics() *debuginfodMetrics {
	if s.cfg.Debuginfo == nil {
		return &debuginfodMetrics{}
	}
	return &s.cfg.Debuginfo.metrics
}

// dText answers a debuginfod request with a plain-text message, which is
// what curl, gdb and debuginfod-find show; an upload to /api/debuginfo
// gets it as JSON {"error"}, as the other APIs (render.go).
func (s *Server) dText(c echo.Context, typ string, status int, format string, args ...any) error {
	s.dMetrics().add(typ, status)
	msg := fmt.Sprintf(format, args...)
	switch {
	case c.Request().Method == http.MethodHead:
		return c.NoContent(status)
	case strings.HasPrefix(c.Request().URL.Path, "/api/"):
		return c.JSON(status, jsonError{Error: msg, Status: status})
	}
	return c.String(status, msg+"\n")
}

// debuginfoOn returns the configured files, or answers 404.
func (s *Server) debuginfoOn(c echo.Context, typ string) (*debuginfo.Store, error) {
	d := s.cfg.Debuginfo
	if d == nil || d.Files == nil {
		return nil, s.dText(c, typ, http.StatusNotFound, "this viewer does not serve debug info: start it with --debuginfod-serve=open or =token")
	}
	if isDebuginfoUpload(c) && d.RefuseUploads != "" {
		return nil, s.dText(c, typ, http.StatusForbidden, "upload refused: %s", d.RefuseUploads)
	}
	if isDebuginfoUpload(c) || d.Serve != "token" || s.authorized(c) {
		return d.Files, nil
	}
	c.Response().Header().Set("WWW-Authenticate", `Bearer realm="viewer debuginfod"`)
	return nil, s.dText(c, typ, http.StatusUnauthorized,
		"this debuginfod needs the server's token: put \"Authorization: Bearer TOKEN\" in the file DEBUGINFOD_HEADERS_FILE names")
}

// buildIDCaching is the Cache-Control of a served build ID file. A build
// ID's file never changes but for a better one: a day, where anyone may
// read it and no upload replaces it. Read with the token, it is private
// (a shared cache would give it to requests without the token); where the
// token's uploads may replace it, an hour.
func (s *Server) buildIDCaching() string {
	scope, age := "public", "86400"
	if s.cfg.Debuginfo.Serve == "token" {
		scope = "private"
	}
	if s.mayReplace() {
		age = "3600"
	}
	return scope + ", max-age=" + age
}

// federate: a request from viewer's own debuginfod client (another viewer
// using this one as upstream, or this one listed in its own
// DEBUGINFOD_URLS) is answered from what is here only, so two viewers
// never forward a build ID to each other in a loop.
func federate(c echo.Context) bool {
	return !strings.HasPrefix(c.Request().UserAgent(), "viewer/")
}

// handleBuildID serves /buildid/ID/debuginfo and /executable.
func (s *Server) handleBuildID(c echo.Context) error {
	kind := c.Param("kind")
	if kind != "debuginfo" && kind != "executable" {
		return s.dText(c, "other", http.StatusNotFound, "unknown debuginfod request type %q: use debuginfo, executable, source/PATH or section/NAME", kind)
	}
	return s.serveBuildID(c, kind, symbolize.FetchKind(kind), "")
}

// handleBuildIDSource serves /buildid/ID/source/PATH: an uploaded source
// file, else one fetched from upstream. PATH is decoded once and cleaned
// ("." and ".." resolved, as elfutils canonicalizes it), so nothing but
// /buildid/ID/source/CLEAN/PATH is ever asked upstream: a normalizing proxy
// in front of the upstream would turn /buildid/ID/source/../../../admin/keys
// into /admin/keys. What cannot be cleaned unambiguously (a backslash, an
// escape left after decoding, NUL) is refused.
func (s *Server) handleBuildIDSource(c echo.Context) error {
	p, err := url.PathUnescape(c.Param("*"))
	if err != nil || p == "" || strings.IndexByte(p, 0) >= 0 {
		return s.dText(c, "source", http.StatusBadRequest, "bad source path: not a %%-encoded path, or empty, or with NUL")
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return s.dText(c, "source", http.StatusBadRequest, "bad source path %q: it has a backslash, which a server or proxy may read as \"/\"; ask for the path with \"/\"", p)
	}
	if escapeLeft.MatchString(p) {
		return s.dText(c, "source", http.StatusBadRequest, "bad source path %q: it is still %%-encoded after decoding (encoded twice); encode the path once", p)
	}
	return s.serveBuildID(c, "source", symbolize.SourceKind(path.Clean("/"+p)), "")
}

// escapeLeft matches a %-escape in a path already decoded once.
var escapeLeft = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

// handleBuildIDSection serves /buildid/ID/section/NAME from the stored
// debuginfo, else the executable.
func (s *Server) handleBuildIDSection(c echo.Context) error {
	name, err := url.PathUnescape(c.Param("name"))
	if err != nil || name == "" {
		return s.dText(c, "section", http.StatusBadRequest, "bad section name")
	}
	return s.serveBuildID(c, "section", "", name)
}

func (s *Server) serveBuildID(c echo.Context, typ string, kind symbolize.FetchKind, section string) error {
	files, err := s.debuginfoOn(c, typ)
	if files == nil {
		return err
	}
	bid := c.Param("id")
	if err := debuginfo.ValidBuildID(bid); err != nil {
		return s.dText(c, typ, http.StatusBadRequest, "%v", err)
	}
	ctx := c.Request().Context()
	var f *debuginfo.File
	if section != "" {
		f, err = files.Section(ctx, bid, section, federate(c))
	} else {
		f, err = files.Open(ctx, bid, kind, federate(c))
	}
	var ue *debuginfo.UpstreamError
	switch {
	case errors.Is(err, debuginfo.ErrNotFound):
		return s.dText(c, typ, http.StatusNotFound, "build ID %s: no %s here or upstream", bid, strings.TrimSuffix(typ+" "+section, " "))
	case errors.As(err, &ue):
		c.Response().Header().Set("Retry-After", "60")
		return s.dText(c, typ, http.StatusBadGateway, "%v", err)
	case err != nil:
		s.log.Error("debuginfod request failed", "request_id", reqID(c), "path", c.Request().URL.Path, "err", err)
		return s.dText(c, typ, http.StatusInternalServerError, "reading the stored file failed (logged as request %s)", reqID(c))
	}
	defer f.Close()
	h := c.Response().Header()
	// Content-Type before ServeContent so it does not sniff; not
	// compressed by compressOnce (its filter skips octet-stream).
	h.Set(echo.HeaderContentType, "application/octet-stream")
	h.Set("X-Debuginfod-Size", strconv.FormatInt(f.Size, 10))
	if f.Name != "" {
		h.Set("X-Debuginfod-File", f.Name)
	}
	if f.Archive != "" {
		h.Set("X-Debuginfod-Archive", f.Archive)
	}
	h.Set("Cache-Control", s.buildIDCaching())
	s.dMetrics().add(typ, http.StatusOK)
	http.ServeContent(sendfileWriter{c.Response()}, c.Request(), "", f.ModTime, f.ReadSeeker)
	return nil
}

// sendfileWriter lets http.ServeContent copy a stored file with the
// connection's own ReadFrom (sendfile for a file of a local store), past
// the middleware's wrappers: Write(nil) first commits the headers through
// them (compressOnce then sends the body as is: its filter skips
// octet-stream), so what follows goes straight to the connection.
type sendfileWriter struct{ http.ResponseWriter }

func (w sendfileWriter) ReadFrom(r io.Reader) (int64, error) {
	if _, err := w.ResponseWriter.Write(nil); err != nil {
		return 0, err
	}
	raw := w.ResponseWriter
	for {
		u, ok := raw.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		raw = u.Unwrap()
	}
	if rf, ok := raw.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
}

// handleBuildIDPut stores a file sent with PUT /buildid/ID/debuginfo or
// /executable, or a source tarball with PUT /buildid/ID/sources.
func (s *Server) handleBuildIDPut(c echo.Context) error {
	files, err := s.debuginfoOn(c, "upload")
	if files == nil {
		return err
	}
	bid, kind := c.Param("id"), c.Param("kind")
	req := c.Request()
	if req.ContentLength > files.MaxFile() {
		// The body is not read: the connection closes after the answer,
		// which then goes at once (the server would otherwise read up to
		// 256 KiB of it first, at the client's pace).
		c.Response().Header().Set("Connection", "close")
		return s.dText(c, "upload", http.StatusRequestEntityTooLarge,
			"upload refused: the file is %d bytes, over this server's --max-debug-file (%d bytes); ask its operator to raise it", req.ContentLength, files.MaxFile())
	}
	name := req.URL.Query().Get("name")
	ctx := req.Context()
	switch kind {
	case "debuginfo", "executable":
		es, err := files.Put(ctx, req.Body, name, bid, symbolize.FetchKind(kind), s.mayReplace())
		if err != nil {
			return s.uploadRefused(c, err)
		}
		s.dMetrics().add("upload", http.StatusCreated)
		s.debugArrived(es)
		return c.JSON(http.StatusCreated, uploadReply(es))
	case "sources":
		n, err := files.PutSources(ctx, bid, req.Body, name, s.limits.Memory, s.mayReplace())
		if err != nil {
			return s.uploadRefused(c, err)
		}
		s.dMetrics().add("upload", http.StatusCreated)
		return c.JSON(http.StatusCreated, map[string]any{"build_id": bid, "sources": n})
	}
	return s.dText(c, "upload", http.StatusNotFound, "PUT /buildid/BUILDID/debuginfo, /executable or /sources, not %q", kind)
}

// mayReplace: an upload may replace a build ID's uploaded file only on a
// server with a token, which every upload then carried (guardUploads).
func (s *Server) mayReplace() bool { return s.cfg.AuthToken != "" }

// uploadStatus is the status and message of a debug upload that failed:
// no server path or internal detail in it, but for a refusal's reason.
func uploadStatus(err error) (int, string) {
	var ce *debuginfo.ConflictError
	switch re, ok := debuginfo.IsRefused(err); {
	case ok && re.TooLarge:
		return http.StatusRequestEntityTooLarge, "upload refused: " + re.Reason
	case ok:
		return http.StatusUnprocessableEntity, "upload refused: " + re.Reason
	case errors.As(err, &ce):
		return http.StatusConflict, "upload refused: " + ce.Error()
	case errors.Is(err, ingest.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "upload refused: " + err.Error() // --ingest-memory, named
	case errors.Is(err, ingest.ErrBusy):
		return http.StatusServiceUnavailable, err.Error()
	case diskFull(err):
		return http.StatusInsufficientStorage, "the server's disk is full, so the file was not stored; try again after its operator frees space"
	case errors.Is(err, os.ErrDeadlineExceeded):
		// rateReader's words: too slow, stalled, or past the deadline.
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, "reading the upload: "); ok {
			msg = after
		}
		msg, _, _ = strings.Cut(msg, ": read tcp") // the connection's addresses
		return http.StatusRequestTimeout, msg
	case errors.Is(err, http.ErrBodyReadAfterClose) || errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadRequest, "the upload ended early; send it again"
	}
	return 0, ""
}

// retryUpload tells the client of an upload refused for want of memory
// to send it again after --upload-wait.
func (s *Server) retryUpload(c echo.Context) {
	secs := max(1, int(s.limits.Memory.Wait().Round(time.Second)/time.Second))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
}

func (s *Server) uploadRefused(c echo.Context, err error) error {
	if code, msg := uploadStatus(err); code != 0 {
		switch code {
		case http.StatusRequestTimeout:
			c.Response().Header().Set("Connection", "close") // the rest of the body is not awaited
		case http.StatusServiceUnavailable:
			s.retryUpload(c)
		}
		return s.dText(c, "upload", code, "%s", msg)
	}
	s.log.Error("debug file upload failed", "request_id", reqID(c), "err", err)
	return s.dText(c, "upload", http.StatusInternalServerError, "storing the file failed (logged as request %s)", reqID(c))
}

// uploadedFile is what an upload answers for each stored kind.
type uploadedFile struct {
	BuildID  string   `json:"build_id"`
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Size     int64    `json:"size"`
	Holds    []string `json:"holds"`
	URL      string   `json:"url"`
	Replaced bool     `json:"replaced,omitempty"`
}

func uploadReply(es []debuginfo.Entry) []uploadedFile {
	out := make([]uploadedFile, 0, len(es))
	for _, e := range es {
		out = append(out, uploadedFile{e.BuildID, e.Kind, e.Name, e.Size, e.Holds,
			"/buildid/" + e.BuildID + "/" + e.Kind, e.Replaced != ""})
	}
	return out
}

// handleDebuginfoUpload stores the files of a multipart POST /api/debuginfo:
// each "file" part an ELF file (its kind from its contents), and
// "sources" parts tarballs for the build ID of the form's "build_id" or, when
// absent, of the one ELF file before them. One bad file does not stop the
// others: each gets its own result.
func (s *Server) handleDebuginfoUpload(c echo.Context) error {
	files, err := s.debuginfoOn(c, "upload")
	if files == nil {
		return err
	}
	req := c.Request()
	mt, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if mt != "multipart/form-data" {
		return s.dText(c, "upload", http.StatusBadRequest,
			"POST /api/debuginfo takes multipart/form-data (curl -F file=@app.debug); a raw body goes to PUT /buildid/BUILDID/debuginfo")
	}
	mr, err := req.MultipartReader()
	if err != nil {
		return s.dText(c, "upload", http.StatusBadRequest, "bad multipart upload: %v", err)
	}
	type result struct {
		File    string         `json:"file"`
		Stored  []uploadedFile `json:"stored,omitempty"`
		Sources int            `json:"sources,omitempty"`
		Error   string         `json:"error,omitempty"`
	}
	var results []result
	bid := ""
	failed := false
	worst := 0 // the highest status of a failed part
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s.dText(c, "upload", http.StatusBadRequest, "bad multipart upload: %v", err)
		}
		switch part.FormName() {
		case "build_id":
			b, _ := io.ReadAll(io.LimitReader(part, 256))
			bid = strings.TrimSpace(string(b))
		case "file":
			r := result{File: part.FileName()}
			es, err := files.Put(req.Context(), part, part.FileName(), "", "", s.mayReplace())
			if err != nil {
				code, msg := uploadStatus(err)
				if code == 0 || code >= 500 {
					s.log.Error("debug file upload failed", "request_id", reqID(c), "err", err)
				}
				if code == 0 {
					code, msg = http.StatusInternalServerError, "storing the file failed (logged as request "+reqID(c)+")"
				}
				r.Error, failed = msg, true
				worst = max(worst, code)
			} else {
				r.Stored, bid = uploadReply(es), es[0].BuildID
				s.debugArrived(es)
			}
			results = append(results, r)
		case "sources":
			r := result{File: part.FileName()}
			if bid == "" {
				r.Error, failed = "sources need a build_id field or an ELF file before them", true
				worst = max(worst, http.StatusUnprocessableEntity)
			} else if n, err := files.PutSources(req.Context(), bid, part, part.FileName(), s.limits.Memory, s.mayReplace()); err != nil {
				code, msg := uploadStatus(err)
				if code == http.StatusServiceUnavailable {
					s.retryUpload(c)
				}
				if code == 0 {
					s.log.Error("source upload failed", "request_id", reqID(c), "err", err)
					code, msg = http.StatusInternalServerError, "storing the sources failed (logged as request "+reqID(c)+")"
				}
				r.Error, failed = msg, true
				worst = max(worst, code)
			} else {
				r.Sources = n
			}
			results = append(results, r)
		}
		part.Close()
	}
	if len(results) == 0 {
		return s.dText(c, "upload", http.StatusBadRequest, "no file part: send the ELF files as -F file=@PATH")
	}
	status := http.StatusCreated
	if failed {
		status = http.StatusUnprocessableEntity
		if worst >= 500 || worst == http.StatusConflict {
			status = worst // a full disk is 507 whatever else the parts got
		}
		if len(results) > 1 && worst < 500 {
			status = http.StatusMultiStatus
		}
	}
	s.dMetrics().add("upload", status)
	return c.JSON(status, map[string]any{"results": results})
}

// handleDebuginfoIndex lists the stored files, newest first, with a search
// box, and links each build ID to the profiles whose symbolization used it.
func (s *Server) handleDebuginfoIndex(c echo.Context) error {
	files, err := s.debuginfoOn(c, "index")
	if files == nil {
		return err
	}
	q := c.QueryParam("q")
	es, err := files.Entries(c.Request().Context(), q, 1000)
	if err != nil {
		return err
	}
	profiles := map[string][]string{}
	for _, e := range es {
		if _, ok := profiles[e.BuildID]; !ok {
			profiles[e.BuildID] = files.Profiles(c.Request().Context(), e.BuildID, 20)
		}
	}
	page := views.DebuginfoPage{Page: views.Page{Title: "Debug files"}, Base: c.Scheme() + "://" + c.Request().Host, Q: q}
	for _, e := range es {
		f := views.DebugFile{BuildID: e.BuildID, Href: "/buildid/" + e.BuildID + "/" + e.Kind, Name: e.Name, Kind: e.Kind,
			Size: humanBytes(e.Size), Uploaded: e.Uploaded.UTC().Format("2006-01-02 15:04 UTC")}
		for _, p := range profiles[e.BuildID] {
			f.Profiles = append(f.Profiles, views.NavLink{Label: p, Href: "/p/" + p})
		}
		page.Files = append(page.Files, f)
	}
	return Render(c, http.StatusOK, views.Debuginfo(page))
}

// handleMetrics answers /metrics in the Prometheus text format: the
// debuginfod requests by type and status, as the elfutils server counts
// its http_responses_total.
func (s *Server) handleMetrics(c echo.Context) error {
	m := s.dMetrics()
	m.mu.Lock()
	keys := make([][2]string, 0, len(m.n))
	for k := range m.n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	var b strings.Builder
	b.WriteString("# HELP viewer_debuginfod_http_responses_total Debuginfod requests answered, by type and status.\n")
	b.WriteString("# TYPE viewer_debuginfod_http_responses_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "viewer_debuginfod_http_responses_total{type=%q,code=%q} %d\n", k[0], k[1], m.n[k])
	}
	m.mu.Unlock()
	return c.Blob(http.StatusOK, "text/plain; version=0.0.4; charset=utf-8", []byte(b.String()))
}
