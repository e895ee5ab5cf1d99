// Package web is the HTTP side of viewer: Echo routes and thin handlers that
// store uploads, load profiles (preferring a symbolized copy when one
// exists) and serve the flamegraph page, its data, SVG and top table.
package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/web/flame"
	"viewer/web/ingest"
	"viewer/web/ondemand"
	"viewer/web/profiles"
	"viewer/web/store"
	"viewer/web/viewcache"
)

// DefaultMaxUpload is the default limit on an upload, counted both as sent
// and after decompression.
const DefaultMaxUpload = 512 << 20

// Config configures a Server. Later features add their fields here.
type Config struct {
	// Store keeps profiles. When nil, a local directory store at DataDir
	// is used.
	Store store.Store
	// DataDir is the local store's directory when Store is nil; empty
	// means DefaultDataDir().
	DataDir string
	// MaxUpload bounds an upload's size as sent and after decompression;
	// zero means DefaultMaxUpload.
	MaxUpload int64
	// ProfileCache and TreeCache bound how many parsed profiles and built
	// flame trees are kept in memory; zero means 8 and 32.
	ProfileCache, TreeCache int
	// AfterUpload, when set, is called after a profile is stored (also for
	// a repeated upload of the same bytes). It must not block: start
	// long work (such as symbolization) in a goroutine.
	AfterUpload func(id string)
	// Symbolization, when set, turns on on-demand symbolization of
	// uploads (symbolization.go).
	Symbolization *SymbolizationConfig
	// Log receives server errors; nil discards them.
	Log *slog.Logger
	// Limits bounds what uploads may hold and how many are handled at
	// once, and who may upload (limits.go, security.go).
	Limits Limits
	// Addr is the address the server listens on (serve's --addr), empty
	// when unknown. On a loopback address, unless BehindProxy, every
	// request must name this machine in its Host (hosts.go: DNS
	// rebinding).
	Addr string
	// BehindProxy says others reach the server through a reverse proxy on
	// its loopback Addr (serve --behind-proxy): the proxy's last
	// X-Forwarded-For entry then names the client for per-client bounds,
	// and Host is the proxy's name, not checked. Without it that header is
	// ignored.
	BehindProxy bool
	// AuthToken, when set, is required to upload (Authorization: Bearer,
	// or the cookie /login sets); viewing stays open (security.go).
	AuthToken string
	// OTLP enables the OTLP/HTTP profiles endpoint (otlp.go).
	OTLP bool
	// Source says where the source view finds source files (source.go);
	// nil: debuginfod as symbolization has it, no local paths.
	Source *SourceConfig
	// Replica, when set, makes this server one of several sharing Store
	// (replica.go).
	Replica *ReplicaConfig
	// Debuginfo, when set, serves uploaded debug files over the
	// debuginfod protocol and accepts their uploads (debuginfod.go).
	Debuginfo *DebuginfoConfig
}

// Server serves profiles over HTTP.
type Server struct {
	cfg    Config
	e      *echo.Echo
	store  store.Store
	log    *slog.Logger
	limits ingest.Limits

	prof   *profiles.Service // IDs, meta, storing and loading profiles
	trees  *viewcache.Cache[treeKey, *encoded]
	tops   *viewcache.Cache[treeKey, *topResult]
	stacks *viewcache.Cache[treeKey, *flame.Stacks]    // zoom.go
	orders *viewcache.Cache[treeKey, *flame.TimeOrder] // timeorder.go
	sym    *ondemand.Service                           // nil when symbolization is off (symbolization.go)
	types  *dataTypes                                  // the data-type page (datatypes.go)

	annotations *viewcache.Cache[annotateKey, *symbolize.Listing] // the annotate view's listings (annotate.go)
	otlp        *otlpQueue                                        // the OTLP requests' turns (otlpqueue.go)
	// The symbolization APIs' debuginfod fetches by client, and their
	// turns (fetchquota.go, symbolizeapi.go).
	apiFetches *clientFetches
	apiTurns   *places
}

// DefaultDataDir is $XDG_DATA_HOME/viewer, else ~/.local/share/viewer.
func DefaultDataDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "viewer"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: set --data, XDG_DATA_HOME or HOME: %w", err)
	}
	return filepath.Join(home, ".local", "share", "viewer"), nil
}

// New returns a Server for cfg, creating the local store's directory if
// needed.
func New(cfg Config) (*Server, error) {
	if cfg.MaxUpload <= 0 {
		cfg.MaxUpload = DefaultMaxUpload
	}
	if cfg.ProfileCache <= 0 {
		cfg.ProfileCache = 8
	}
	if cfg.TreeCache <= 0 {
		cfg.TreeCache = 32
	}
	st := cfg.Store
	if st == nil {
		dir := cfg.DataDir
		if dir == "" {
			var err error
			if dir, err = DefaultDataDir(); err != nil {
				return nil, err
			}
		}
		d, err := store.NewDir(dir)
		if err != nil {
			return nil, err
		}
		st = d
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		cfg:    cfg,
		store:  st,
		log:    log,
		limits: cfg.Limits.ingest(cfg.MaxUpload), // limits.go
		types:  &dataTypes{},                     // datatypes.go

		otlp:       newOTLPQueue(cfg.Limits), // otlpqueue.go
		apiFetches: newClientFetches(),       // fetchquota.go
		apiTurns:   newAPITurns(cfg.Limits),  // symbolizeapi.go
	}
	var recheck time.Duration
	if cfg.Replica != nil {
		recheck = cfg.Replica.Recheck
		if recheck <= 0 {
			recheck = time.Second
		}
	}
	prof, err := profiles.New(profiles.Config{Store: st, Limits: s.limits, ProfileCache: cfg.ProfileCache, Recheck: recheck, Log: log})
	if err != nil {
		return nil, err
	}
	s.prof = prof
	prof.OnInvalidate(s.dropViews)
	if s.trees, err = viewcache.New[treeKey, *encoded](cfg.TreeCache); err != nil {
		return nil, err
	}
	if s.tops, err = viewcache.New[treeKey, *topResult](cfg.TreeCache); err != nil {
		return nil, err
	}
	if s.stacks, err = viewcache.New[treeKey, *flame.Stacks](stacksCache); err != nil {
		return nil, err
	}
	if s.orders, err = viewcache.New[treeKey, *flame.TimeOrder](timeOrderCache); err != nil {
		return nil, err
	}
	if s.annotations, err = viewcache.New[annotateKey, *symbolize.Listing](annotateCache); err != nil {
		return nil, err
	}
	if s.types.results, err = viewcache.New[typesKey, *typesResult](typesCache); err != nil {
		return nil, err
	}
	if n := sweepSpool(s.limits.SpoolDir, time.Now()); n > 0 {
		log.Info("removed spool files of uploads a killed server left, a day old or more", "files", n)
	}
	s.initSymbolization()
	s.e = echo.New()
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = s.handleError
	s.routes()
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.e }

// dropViews drops the flame trees, tables, stacks, annotate listings and
// data-type results built from profile id (called on each
// profiles.Service.Invalidate): their keys name the profile's variant, so
// none would be asked for again, but each held its memory until evicted.
func (s *Server) dropViews(id string) {
	s.trees.Drop(id)
	s.tops.Drop(id)
	s.stacks.Drop(id)
	s.orders.Drop(id)
	s.annotations.Drop(id)
	s.types.results.Drop(id)
}

// background is a context for work that must outlive a request, such as a
// shared load other requests wait on.
func background(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
