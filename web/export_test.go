package web

// Test hooks into the Server, for this package's tests and web_test's
// (export_test.go is compiled only with the tests).

import (
	"github.com/labstack/echo/v4"

	"viewer/web/profiles"
	"viewer/web/store"
)

// Echo is the router, for tests that list or add routes.
func (s *Server) Echo() *echo.Echo { return s.e }

// Store is where the server keeps profiles.
func (s *Server) Store() store.Store { return s.store }

// Invalidate drops everything cached for id, e.g. after a symbolized copy
// was stored, so the next request loads it.
func (s *Server) Invalidate(id string) { s.prof.Invalidate(id) }

// Profiles is the profile service.
func (s *Server) Profiles() *profiles.Service { return s.prof }
