package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/static"
	"viewer/views"
)

// staticETags holds a content hash per embedded asset, so browsers
// revalidate with If-None-Match and get 304s.
var staticETags = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	fs.WalkDir(static.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := fs.ReadFile(static.FS, p)
		if err == nil {
			sum := sha256.Sum256(b)
			m[p] = `"` + hex.EncodeToString(sum[:8]) + `"`
		}
		return nil
	})
	return m
})

// handleStatic serves the embedded JS and CSS.
func (s *Server) handleStatic(c echo.Context) error {
	return serveStatic(c, strings.TrimPrefix(c.Param("*"), "/"))
}

// handleFavicon answers browsers' automatic /favicon.ico request with the
// SVG icon.
func (s *Server) handleFavicon(c echo.Context) error {
	return serveStatic(c, "favicon.svg")
}

func serveStatic(c echo.Context, name string) error {
	etag, ok := staticETags()[name]
	if !ok {
		return echo.ErrNotFound
	}
	b, err := fs.ReadFile(static.FS, name)
	if err != nil {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	h.Set("ETag", etag)
	// Revalidated each time (a 304 by the ETag): the URLs carry no version,
	// and an hour's max-age let a browser pair a new page with an old
	// script after an upgrade, or across replicas of two versions.
	h.Set(echo.HeaderCacheControl, "no-cache")
	http.ServeContent(c.Response(), c.Request(), name, time.Time{}, bytes.NewReader(b))
	return nil
}

func (s *Server) handleIndex(c echo.Context) error {
	return Render(c, http.StatusOK, views.Index(views.IndexPage{
		Page:      views.Page{Title: "Upload a profile"},
		MaxUpload: humanBytes(s.cfg.MaxUpload),

		DebuginfodServers: s.debuginfodServers(),
	}))
}

func (s *Server) handleHealth(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// handleProfileDownload serves the profile as gzipped pprof
// (profiles.Service.Download: the symbolized copy, the original when it
// is pprof, else the converted copy).
func (s *Server) handleProfileDownload(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	m, err := s.Meta(ctx, id)
	if err != nil {
		return err
	}
	rc, err := s.prof.Download(ctx, id)
	if err != nil {
		return httpStatusError(err)
	}
	defer rc.Close()
	h := c.Response().Header()
	name := strings.TrimSuffix(strings.TrimSuffix(displayName(m, id), ".gz"), ".pb") + ".pb.gz"
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+strings.NewReplacer(`"`, "", "\n", "", "\r", "").Replace(name)+`"`)
	return c.Stream(http.StatusOK, "application/gzip", rc)
}
