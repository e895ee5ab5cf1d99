package web

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/web/ondemand"
)

// SymbolizerTypesFinder finds the data-type page's files with the
// symbolization engine: the same debug info, search order, build-ID checks,
// --debug-dir, IgnoreMappingPaths and --max-debug-file as symbolization,
// and the same debuginfod client (through Gate) for the executable when the
// debug file has no code, and for the kernel's vmlinux. It never asks
// debuginfod for a profile whose uploader opted out (see TypesNoDebuginfod).
type SymbolizerTypesFinder struct {
	Engine *symbolize.Symbolizer
	// Gate is the engine's Fetcher; a disabled gate, or no Servers, means
	// debuginfod is off (--no-debuginfod): nothing is asked.
	Gate    *ondemand.Gate
	Servers []string
	// Timeout bounds the search and downloads for one binary
	// (--symbolize-timeout; 0: none): the page's computation outlives the
	// request that started it, so it needs its own bound.
	Timeout time.Duration
}

// FindTypesDebug implements TypesDebugFinder. The download, if any, runs on
// the caller's context with no lock held.
func (f SymbolizerTypesFinder) FindTypesDebug(ctx context.Context, m *profile.Mapping) (TypesDebug, error) {
	if f.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.Timeout)
		defer cancel()
	}
	optOut := TypesNoDebuginfod(ctx)
	off := !f.Gate.Enabled() || len(f.Servers) == 0
	cf, err := f.Engine.FindCode(ctx, m, symbolize.Options{NoDebuginfod: optOut || off})
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded) && f.Timeout > 0:
			return TypesDebug{}, fmt.Errorf("timed out after %v looking for its debug info (--symbolize-timeout); reload the page to look again: %w", f.Timeout, err)
		case optOut:
			return TypesDebug{}, notFoundError{"%v (debuginfod not asked: the upload opted out of sending its build IDs)", err}
		case off:
			return TypesDebug{}, notFoundError{"%v (debuginfod is off on this server)", err}
		}
		return TypesDebug{}, notFoundError{"%v", err}
	}
	return TypesDebug{Exec: cf.Exec, Debug: cf.Debug, Source: cf.Source}, nil
}

// notFoundError prefixes the reason with "not found: " for the DSO list.
type notFoundError struct {
	format string
	err    error
}

func (e notFoundError) Error() string {
	return "not found: " + fmt.Sprintf(e.format, e.err)
}

func (e notFoundError) Unwrap() error { return e.err }

type typesOptKey struct{}

// withTypesNoDebuginfod marks ctx as computing the data types of a profile
// whose uploader asked not to send its build IDs to debuginfod.
func withTypesNoDebuginfod(ctx context.Context, no bool) context.Context {
	return context.WithValue(ctx, typesOptKey{}, no)
}

// TypesNoDebuginfod reports whether the profile a FindTypesDebug call works
// for was uploaded with ?debuginfod=0: a finder must then not send its build
// IDs anywhere.
func TypesNoDebuginfod(ctx context.Context) bool {
	no, _ := ctx.Value(typesOptKey{}).(bool)
	return no
}

// useSymbolizerForTypes makes the data-type page find its files through the
// symbolization engine when the server has one.
func (s *Server) useSymbolizerForTypes(c *SymbolizationConfig) {
	if c == nil || c.Engine == nil {
		return
	}
	ts := s.types()
	ts.mu.Lock()
	ts.finder = SymbolizerTypesFinder{Engine: c.Engine, Gate: c.Gate, Servers: c.Servers, Timeout: c.Timeout}
	ts.mu.Unlock()
	ts.budget.Store(c.Engine.CacheBytes()) // --symbol-cache-size
}

// uploadNoDebuginfod reads the upload's stored "don't ask debuginfod" choice.
// When the record cannot be read it answers true: never send build IDs the
// uploader may have withheld.
func (s *Server) uploadNoDebuginfod(ctx context.Context, id string) bool {
	if s.sym == nil {
		return false
	}
	rec, err := s.sym.jobs.Outcome(ctx, id)
	if err != nil {
		s.log.Warn("reading the symbolization record for the data-type page", "id", id, "err", err)
		return true
	}
	return rec.NoDebuginfod
}
