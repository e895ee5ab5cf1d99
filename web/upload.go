package web

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

// multipartSlack is what a multipart body may carry beyond the file itself
// (boundaries, headers, small fields).
const multipartSlack = 1 << 20

// uploadResponse is the JSON answer to POST /api/profiles.
type uploadResponse struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

// handleAPIUpload stores a profile sent as multipart field "file" or as the
// raw body, answering 201 {"id","url"}.
func (s *Server) handleAPIUpload(c echo.Context) error {
	id, err := s.receive(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, uploadResponse{ID: id, URL: "/p/" + id})
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
	sp, name, err := s.spoolUpload(c)
	if err != nil {
		return "", err
	}
	defer sp.remove()
	release, err := holdSlot(c) // limits.go
	if err != nil {
		return "", err
	}
	defer release()
	id, err := s.ingestFile(c.Request().Context(), sp.f, sp.size, sp.sum, name)
	if err != nil {
		return "", err
	}
	return id, s.queueUpload(c, id) // symbolization.go
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
// (413 beyond MaxUpload).
func (s *Server) spoolUpload(c echo.Context) (*spooled, string, error) {
	req := c.Request()
	max := s.cfg.MaxUpload
	if req.ContentLength > max+multipartSlack {
		return nil, "", tooLarge(max)
	}
	req.Body = http.MaxBytesReader(c.Response(), req.Body, max+multipartSlack)
	mediaType, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if mediaType != "multipart/form-data" {
		sp, err := s.spool(req.Body, max)
		return sp, cleanName(req.URL.Query().Get("name")), err
	}
	mr, err := req.MultipartReader()
	if err != nil {
		return nil, "", httpError(http.StatusBadRequest, "bad multipart upload: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, "", httpError(http.StatusBadRequest, `the multipart upload has no field named "file"; send the profile as -F file=@PROFILE`)
		}
		if err != nil {
			return nil, "", readError(err, max)
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		sp, err := s.spool(part, max)
		part.Close()
		if err != nil {
			return nil, "", err
		}
		return sp, cleanName(part.FileName()), nil
	}
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
