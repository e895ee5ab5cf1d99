package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/web/ingest"
	"viewer/web/profiles"
)

// httpStatusError maps the services' typed errors to the HTTP status they
// deserve: an unknown profile is 404, bad input 400 or 413, the ingest
// memory taken 503, an annotated listing of a function not found 404 and
// one that cannot be decoded 422. Other errors pass through (500, or
// storeUnavailable's 503).
func httpStatusError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, profiles.ErrNotFound):
		return httpError(http.StatusNotFound, "%v", err)
	case errors.Is(err, ingest.ErrTooLarge):
		return httpError(http.StatusRequestEntityTooLarge, "%v", err)
	case errors.Is(err, ingest.ErrBusy):
		return busy(err)
	case errors.Is(err, ingest.ErrEmpty), errors.Is(err, ingest.ErrCorrupt), errors.Is(err, ingest.ErrUnknownFormat):
		return httpError(http.StatusBadRequest, "%v", err)
	}
	var le *symbolize.ListingError
	if errors.As(err, &le) {
		if le.NotFound {
			return httpError(http.StatusNotFound, "%v", err)
		}
		return httpError(http.StatusBadRequest, "%v", err) // a bad parameter
	}
	return err
}

// Ingest parses data, and when it is a profile stores it (once: the same
// bytes give the same ID) and returns its ID. Errors from bad input are
// *echo.HTTPError with status 400 or 413; nothing is stored on any error.
func (s *Server) Ingest(ctx context.Context, data []byte, name string) (string, error) {
	id, err := s.prof.Ingest(ctx, data, name)
	return s.afterUpload(id, err)
}

func (s *Server) afterUpload(id string, err error) (string, error) {
	if err != nil {
		return "", httpStatusError(err)
	}
	s.prof.NoteUpload(context.Background(), id)
	if s.cfg.AfterUpload != nil {
		s.cfg.AfterUpload(id)
	}
	return id, nil
}

// Meta returns a profile's metadata (profiles.Service.Meta); unknown IDs
// give a 404 *echo.HTTPError.
func (s *Server) Meta(ctx context.Context, id string) (*profiles.Meta, error) {
	m, err := s.prof.Meta(ctx, id)
	return m, httpStatusError(err)
}

// Profile loads a profile (profiles.Service.Profile); unknown IDs give a
// 404 *echo.HTTPError.
func (s *Server) Profile(ctx context.Context, id string) (*profiles.Loaded, error) {
	l, err := s.prof.Profile(ctx, id)
	return l, httpStatusError(err)
}

// profileSample loads profile id and resolves si (the ?si= parameter)
// against its sample types: what every handler that reads samples starts
// with. An unknown profile is 404 (httpStatusError), an unknown sample type
// 400 (resolveSI).
func (s *Server) profileSample(ctx context.Context, id, si string) (*profiles.Loaded, int, error) {
	l, err := s.Profile(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	i, err := resolveSI(l.Meta, si)
	if err != nil {
		return nil, 0, err
	}
	return l, i, nil
}

// requestProfile is profileSample for the request's :id and ?si=.
func (s *Server) requestProfile(c echo.Context) (*profiles.Loaded, int, error) {
	return s.profileSample(c.Request().Context(), c.Param("id"), c.QueryParam("si"))
}
