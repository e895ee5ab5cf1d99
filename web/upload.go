package web

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/labstack/echo/v4"

	"viewer/web/flame"
	"viewer/web/ingest"
	"viewer/web/profiles"
	"viewer/web/store"
)

// multipartSlack is what a multipart body may carry beyond the file itself
// (boundaries, headers, small fields).
const multipartSlack = 1 << 20

// An upload's JavaScript source maps (multipart fields "sourcemap", .map
// files) are read into memory and applied to the parsed profile's frames
// (sourcemap.Apply, as `viewer upload --source-map` does): at most
// maxSourceMaps files of at most maxSourceMapBytes together, so that they
// stay a small part of the ingest memory a profile is parsed in. The body
// may be larger than a profile alone by that much.
const (
	maxSourceMaps     = 16
	maxSourceMapBytes = 64 << 20
)

// sourceMapFile is a source map sent with an upload.
type sourceMapFile struct {
	name string
	data []byte
}

// uploadResponse is the JSON answer to POST /api/profiles.
type uploadResponse struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Warnings are the profile's warnings (warnings.json), for the CLI to
	// print; WarningsOmitted counts those past the list.
	Warnings        []string `json:"warnings,omitempty"`
	WarningsOmitted int      `json:"warningsOmitted,omitempty"`
}

// handleAPIUpload stores a profile sent as multipart field "file" or as the
// raw body, answering 201 {"id","url","warnings"}.
func (s *Server) handleAPIUpload(c echo.Context) error {
	id, err := s.receive(c)
	if err != nil {
		return err
	}
	w, err := s.Warnings(c.Request().Context(), id)
	if err != nil { // stored all the same: its pages say what they can
		s.log.Error("reading an upload's warnings", "request_id", reqID(c), "id", id, "err", err)
	}
	return c.JSON(http.StatusCreated, uploadResponse{ID: id, URL: "/p/" + id, Warnings: w.List, WarningsOmitted: w.Omitted})
}

// handleFormUpload is the browser form's target: it stores the file and
// redirects to its flamegraph.
func (s *Server) handleFormUpload(c echo.Context) error {
	id, err := s.receive(c)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/p/"+id)
}

// receive spools an upload to disk within MaxUpload, then takes a parse
// slot and ingests it from the file.
func (s *Server) receive(c echo.Context) (string, error) {
	sp, name, maps, err := s.spoolUpload(c)
	if err != nil {
		return "", err
	}
	defer sp.remove()
	var set ingest.SourceMaps
	for _, m := range maps {
		if err := set.Add(m.name, m.data); err != nil {
			return "", httpError(http.StatusBadRequest, "%s: %v (send the bundle's own .map file, as the bundler wrote it, in the sourcemap field)", m.name, err)
		}
	}
	maps = nil
	release, err := holdSlot(c) // limits.go
	if err != nil {
		return "", err
	}
	defer release()
	var id string
	if set.Len() > 0 {
		id, err = s.afterUpload(s.prof.IngestFileMapped(c.Request().Context(), sp.f, name, func(p *profile.Profile) error {
			set.Apply(p)
			return nil
		}))
	} else {
		id, err = s.ingestUpload(c.Request().Context(), sp.f, sp.size, sp.sum, name)
	}
	if err != nil {
		return "", err
	}
	return id, s.queueUpload(c, id) // symbolization.go
}

// ingestUpload is Ingest for an upload spooled to f, of size bytes whose
// SHA-256 is sum. It also builds the upload's first view, the
// default sample type's stacks and whole flame.json, on a second goroutine
// while the converted copy is encoded and stored, and caching it: the
// first flame.json after an upload is then served, not built, and the
// build overlaps the store's work instead of following it.
func (s *Server) ingestUpload(ctx context.Context, f *os.File, size int64, sum [sha256.Size]byte, name string) (string, error) {
	var first *firstView
	along := func(p *profile.Profile, format string) { first = s.buildFirstView(ctx, p, format) }
	if _, ok := s.prof.Cached(profiles.IDOfSum(sum)); ok {
		along = nil // the same bytes again: their views are built already, or will be from the kept copy
	}
	id, err := s.prof.IngestFileAlong(ctx, f, size, sum, name, along)
	if err == nil && first != nil {
		s.cacheFirstView(id, first)
	}
	return s.afterUpload(id, err)
}

// firstView is what the first look at a profile asks for, built from the
// parsed upload: the stacks of its default sample type (zoom.go) and the
// whole flame.json cut from them, plain and gzipped.
type firstView struct {
	p        *profile.Profile
	si       int
	st       *flame.Stacks
	json, gz []byte
}

// buildFirstView builds p's first view within the rendering limits, or
// returns nil: the view is then built on request, as for a cold profile,
// and reports its own error there. Its memory (firstViewMemory) is taken
// from the ingest budget while it is built, if free then, without
// waiting: when it is not, the view is built on request instead, once the
// upload's memory is given back. Only pprof and perf.data input is built
// ahead: a perf.data is mapped, and its pages and ingest budget are given
// back once converted, before the view is built beside the copy's encode;
// the text formats are left to build on request.
func (s *Server) buildFirstView(ctx context.Context, p *profile.Profile, format string) *firstView {
	if format != "pprof" && format != "perf.data" {
		return nil
	}
	give, ok := s.limits.Memory.TryTake(firstViewMemory(p))
	if !ok {
		return nil
	}
	defer give()
	si, err := flame.SampleIndex(p, "")
	if err != nil {
		return nil
	}
	v := &firstView{p: p, si: si}
	if err := s.render(ctx, func(opt flame.Options) { v.st = newStacks(p, si, opt) }); err != nil {
		return nil
	}
	if err := s.render(ctx, func(opt flame.Options) { v.json = wholeTreeJSON(v.st, opt) }); err != nil {
		return nil
	}
	v.gz = gzipBytes(v.json)
	return v
}

// firstViewMemory is what the manual's peak-memory formula (static/docs/operations.md) counts for a
// view of p while it is built (its R): 150 bytes a location and 60 a
// frame of its stacks (p's samples are its distinct stacks once the
// decoder has merged their records).
func firstViewMemory(p *profile.Profile) int64 {
	var frames int64
	for _, s := range p.Sample {
		frames += int64(len(s.Location))
	}
	return 150*int64(len(p.Location)) + 60*frames
}

// cacheFirstView caches v under profile id's keys, when the profile the
// service keeps for id is the one v was built from (bytes stored before
// keep their own, possibly symbolized, copy).
func (s *Server) cacheFirstView(id string, v *firstView) {
	l, ok := s.prof.Cached(id)
	if !ok || l.Profile != v.p {
		return
	}
	if i, err := resolveSI(l.Meta, ""); err != nil || i != v.si {
		return
	}
	key := treeKey{id: id, variant: l.Variant(), si: v.si, kind: "stacks"}
	s.stacks.Add(key, v.st)
	key.kind = "json"
	s.trees.Add(key, &encoded{plain: v.json, gz: v.gz, etag: treeETag(key, flame.Filter{})})
	// The flame page asks for the top table beside flame.json: compute it
	// now, after the upload's answer, so that it is ready when asked for.
	go s.topTable(context.Background(), l, v.si, flame.Filter{}, nil)
}

// spooled is an upload body written to a temporary file.
type spooled struct {
	f    *os.File
	size int64
	sum  [sha256.Size]byte
}

func (sp *spooled) remove() {
	sp.f.Close()
	os.Remove(sp.f.Name())
}

// spoolUpload writes the uploaded file to a temporary file in the spool
// directory, with its SHA-256, never more than MaxUpload+1 bytes of it
// (413 beyond MaxUpload), and reads the source maps sent beside it
// (multipart fields "sourcemap", before or after the file; 413 beyond
// maxSourceMaps or maxSourceMapBytes).
func (s *Server) spoolUpload(c echo.Context) (*spooled, string, []sourceMapFile, error) {
	req := c.Request()
	max := s.cfg.MaxUpload
	mediaType, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	bodyMax := max + multipartSlack
	if mediaType == "multipart/form-data" {
		bodyMax += maxSourceMapBytes
	}
	if req.ContentLength > bodyMax {
		return nil, "", nil, tooLarge(max)
	}
	req.Body = http.MaxBytesReader(c.Response(), req.Body, bodyMax)
	if mediaType != "multipart/form-data" {
		sp, err := s.spool(req.Body, max)
		return sp, cleanName(req.URL.Query().Get("name")), nil, err
	}
	mr, err := req.MultipartReader()
	if err != nil {
		return nil, "", nil, httpError(http.StatusBadRequest, "bad multipart upload: %v", err)
	}
	var (
		sp       *spooled
		name     string
		maps     []sourceMapFile
		mapBytes int64
	)
	fail := func(err error) (*spooled, string, []sourceMapFile, error) {
		if sp != nil {
			sp.remove()
		}
		return nil, "", nil, err
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(readError(err, max))
		}
		switch part.FormName() {
		case "file":
			if sp != nil {
				part.Close()
				return fail(httpError(http.StatusBadRequest, `the multipart upload has more than one field named "file": send one profile per upload`))
			}
			sp, err = s.spool(part, max)
			part.Close()
			if err != nil {
				return fail(err)
			}
			name = cleanName(part.FileName())
		case "sourcemap":
			if len(maps) == maxSourceMaps {
				part.Close()
				return fail(httpError(http.StatusRequestEntityTooLarge, "more than %d source maps: send the maps of the scripts the profile names", maxSourceMaps))
			}
			data, err := io.ReadAll(io.LimitReader(part, maxSourceMapBytes-mapBytes+1))
			part.Close()
			if err != nil {
				return fail(readError(err, max))
			}
			if mapBytes += int64(len(data)); mapBytes > maxSourceMapBytes {
				return fail(httpError(http.StatusRequestEntityTooLarge, "the source maps are over the %s limit together: send the maps of the scripts the profile names", humanBytes(maxSourceMapBytes)))
			}
			mapName := cleanName(part.FileName())
			if mapName == "" {
				mapName = fmt.Sprintf("source map %d", len(maps)+1)
			}
			if len(data) > 0 {
				maps = append(maps, sourceMapFile{mapName, data})
			}
		default:
			part.Close()
		}
	}
	if sp == nil {
		return fail(httpError(http.StatusBadRequest, `the multipart upload has no field named "file"; send the profile as -F file=@PROFILE`))
	}
	return sp, name, maps, nil
}

// spoolPatterns name the files an upload is spooled to in the spool
// directory: its body (spool), its inflated bytes and a perf.data's
// record spool (web/ingest).
var spoolPatterns = []string{"viewer-upload-*", "viewer-inflate-*", "viewer-perf-records-*"}

// spoolGrace is the least age of a spool file sweepSpool removes: the
// spool directory ($TMPDIR by default) may be shared with other servers,
// whose uploads in progress are younger; no upload's body, parse and
// store take a day.
const spoolGrace = 24 * time.Hour

// sweepSpool removes the spool files in dir (os.TempDir() when empty)
// that a killed server left, those last written spoolGrace ago or more,
// and returns how many it removed: a server killed mid-upload left its
// body there for good.
func sweepSpool(dir string, now time.Time) int {
	if dir == "" {
		dir = os.TempDir()
	}
	return store.RemoveStale(dir, spoolPatterns, spoolGrace, now)
}

// spool copies r, up to max bytes (413 beyond), to a new file in the spool
// directory.
func (s *Server) spool(r io.Reader, max int64) (*spooled, error) {
	f, err := os.CreateTemp(s.limits.SpoolDir, "viewer-upload-*")
	if err != nil {
		return nil, fmt.Errorf("spooling the upload: %w", err)
	}
	sp := &spooled{f: f}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, max+1))
	if err != nil {
		sp.remove()
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("spooling the upload: %w", err)
		}
		return nil, readError(err, max)
	}
	if n > max {
		sp.remove()
		return nil, tooLarge(max)
	}
	if n == 0 {
		sp.remove()
		return nil, httpError(http.StatusBadRequest, "empty upload: the request carried no profile bytes")
	}
	sp.size = n
	h.Sum(sp.sum[:0])
	return sp, nil
}

func readError(err error, max int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(max)
	}
	return httpError(http.StatusBadRequest, "reading the upload failed: %v", err)
}

func tooLarge(max int64) error {
	return httpError(http.StatusRequestEntityTooLarge, "the upload is over the %s limit (restart the server with a larger --max-upload to accept it)", humanBytes(max))
}

// cleanName keeps the base name of an uploaded file, for display only.
func cleanName(n string) string {
	n = path.Base(strings.ReplaceAll(n, `\`, "/"))
	if n == "." || n == "/" {
		return ""
	}
	if len(n) > 200 {
		n = n[:200]
	}
	return n
}
