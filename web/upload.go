package web

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
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

// receive reads an upload within MaxUpload and ingests it.
func (s *Server) receive(c echo.Context) (string, error) {
	data, name, err := s.readUpload(c)
	if err != nil {
		return "", err
	}
	id, err := s.Ingest(c.Request().Context(), data, name)
	if err != nil {
		return "", err
	}
	return id, s.queueUpload(c, id) // symbolization.go
}

// readUpload returns the uploaded bytes and file name, never reading more
// than MaxUpload+1 bytes of file (413 beyond MaxUpload).
func (s *Server) readUpload(c echo.Context) ([]byte, string, error) {
	req := c.Request()
	max := s.cfg.MaxUpload
	if req.ContentLength > max+multipartSlack {
		return nil, "", tooLarge(max)
	}
	req.Body = http.MaxBytesReader(c.Response(), req.Body, max+multipartSlack)
	mediaType, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if mediaType != "multipart/form-data" {
		data, err := readLimited(req.Body, max, req.ContentLength)
		return data, cleanName(req.URL.Query().Get("name")), err
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
		data, err := readLimited(part, max, req.ContentLength)
		part.Close()
		if err != nil {
			return nil, "", err
		}
		return data, cleanName(part.FileName()), nil
	}
}

// readLimited reads r up to max bytes (413 beyond), presizing its buffer
// from hint (the request's Content-Length) to avoid regrowing it.
func readLimited(r io.Reader, max, hint int64) ([]byte, error) {
	var buf bytes.Buffer
	if hint > 0 {
		buf.Grow(int(min(hint, max) + bytes.MinRead))
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, max+1)); err != nil {
		return nil, readError(err, max)
	}
	data := buf.Bytes()
	if int64(len(data)) > max {
		return nil, tooLarge(max)
	}
	if len(data) == 0 {
		return nil, httpError(http.StatusBadRequest, "empty upload: the request carried no profile bytes")
	}
	return data, nil
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
