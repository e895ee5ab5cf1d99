package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"viewer/web"
	"viewer/web/store"
)

// runServe serves profiles over HTTP until ctx ends (SIGINT/SIGTERM), after
// loading and linking any FILE arguments.
func runServe(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(s.err)
	addr := fs.String("addr", "127.0.0.1:8080", "`host:port` to listen on")
	data := fs.String("data", "", "`directory` to store profiles in (default $XDG_DATA_HOME/viewer, else ~/.local/share/viewer)")
	maxUpload := sizeFlag(web.DefaultMaxUpload)
	fs.Var(&maxUpload, "max-upload", "largest accepted upload, as sent and after decompression (e.g. 512MiB, 2GiB)")
	seconds := fs.Int("seconds", 0, "for a URL argument: the profile's duration, set as its seconds= as go tool pprof -seconds does (0: the URL's own)")
	otlp := fs.Bool("otlp", false, "take OpenTelemetry profiles at POST "+web.OTLPPath+" (OTLP/HTTP, protobuf or JSON), behind --auth-token when one is set")
	symFlags := registerSymbolizeFlags(fs)           // servesymbolize.go
	limFlags := registerLimitFlags(fs)               // servelimits.go
	stFlags := registerStoreFlags(fs)                // servestore.go
	dbgFlags := registerDebuginfoFlags(fs, symFlags) // servedebuginfo.go
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: viewer serve [--addr HOST:PORT] [--data DIR | --store URL] [--max-upload SIZE] [--debug-dir DIR]... [--no-debuginfod | --debuginfod-urls URLS] [--seconds N] [FILE | URL...]")
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	dir := *data
	if dir == "" {
		if dir, err = web.DefaultDataDir(); err != nil {
			return err
		}
	}
	limits, token, err := limFlags.config()
	if err != nil {
		return err
	}
	memLimit := limFlags.applyMemoryLimit() // servelimits.go
	logger := slog.New(slog.NewTextHandler(s.err, nil))
	symCfg, symDesc, err := symFlags.config(func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) })
	if err != nil {
		return err
	}
	limits.MaxDebugFile = symFlags.debugFileCap // servesymbolize.go: the data-type page's files too
	symFlags.unwinding(&limits, symCfg)         // servesymbolize.go: loopback only
	st, replica, stDesc, closeStore, err := stFlags.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	if st != nil {
		dir = stDesc
	} else {
		unlock, err := lockDataDir(dir) // servelock.go: one server per --data
		if err != nil {
			return err
		}
		defer unlock()
	}
	profStore := st
	if profStore == nil {
		if profStore, err = store.NewDir(dir); err != nil {
			return err
		}
	}
	dbgCfg, err := dbgFlags.config(profStore, symFlags, token)
	if err != nil {
		return err
	}
	dbgFlags.sweep(ctx, st != nil, limits.UploadDeadline, logger.Info) // servedebuginfo.go
	if dbgCfg != nil && dbgCfg.RefuseUploads != "" {
		logger.Warn("debug file uploads refused: " + dbgCfg.RefuseUploads)
	}
	srv, err := web.New(web.Config{
		Store:         profStore,
		Debuginfo:     dbgCfg,
		Replica:       replica,
		DataDir:       dir,
		MaxUpload:     int64(maxUpload),
		Log:           logger,
		Symbolization: symCfg,
		Source:        symFlags.sourceConfig(symCfg), // servesource.go
		Limits:        limits,
		AuthToken:     token,
		OTLP:          *otlp,
		Addr:          *addr,                // on loopback: Host must name this machine (web/hosts.go)
		BehindProxy:   limFlags.behindProxy, // X-Forwarded-For names the client; Host not checked
	})
	if err != nil {
		return err
	}
	defer srv.CloseReplica() // after CloseSymbolization: its jobs' last records get written
	defer srv.CloseSymbolization()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	base := "http://" + displayAddr(ln.Addr())
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	hs.RegisterOnShutdown(srv.CloseSymbolization) // end event streams so Shutdown need not wait for them
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	fmt.Fprintf(s.out, "viewer: serving %s/ (profiles in %s)\n", base, dir)
	fmt.Fprintf(s.out, "viewer: %s\n", symDesc)
	fmt.Fprintf(s.out, "viewer: uploads parsed within --ingest-memory %s; heap soft limit %s\n", limFlags.ingestMemory, sizeFlag(memLimit))
	if token != "" {
		fmt.Fprintln(s.out, "viewer: uploads need the token (--auth-token); links stay open to anyone who has them")
	}
	if *otlp {
		fmt.Fprintf(s.out, "viewer: OTLP profiles taken at %s%s\n", base, web.OTLPPath)
	}

	for _, f := range files {
		id, err := loadSource(ctx, srv, f, *seconds, int64(maxUpload), s.err)
		if err != nil {
			fmt.Fprintf(s.err, "viewer: %s: %v\n", f, err)
			continue
		}
		fmt.Fprintf(s.out, "%s/p/%s\t%s\n", base, id, f)
		if w, err := srv.Warnings(ctx, id); err != nil {
			fmt.Fprintf(s.err, "viewer: %s: reading its warnings: %v\n", f, web.ErrorMessage(err))
		} else {
			printWarnings(s.err, "viewer: "+f+": ", w.List, w.Omitted, base+"/p/"+id) // upload.go
		}
	}

	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(s.err, "viewer: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// loadSource stores a local profile, or one fetched from an http(s) URL
// (profileurl.go; the CLI fetches it, never the server), as if it were
// uploaded.
func loadSource(ctx context.Context, srv *web.Server, name string, seconds int, max int64, stderr io.Writer) (string, error) {
	if !isProfileURL(name) {
		return loadFile(ctx, srv, name, max)
	}
	fp, err := fetchProfile(ctx, name, seconds, max, stderr)
	if err != nil {
		return "", err
	}
	id, err := srv.Ingest(ctx, fp.data, fp.name)
	if err != nil {
		return "", fmt.Errorf("the %d bytes %s answered: %s", len(fp.data), fp.url, web.ErrorMessage(err))
	}
	if err := srv.QueueSymbolization(ctx, id, false); err != nil {
		fmt.Fprintf(stderr, "viewer: %s: symbolization not queued: %v\n", name, err)
	}
	return id, nil
}

// loadFile stores a local profile as if it were uploaded.
func loadFile(ctx context.Context, srv *web.Server, name string, max int64) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", err
	}
	if int64(len(data)) > max {
		return "", fmt.Errorf("larger than --max-upload %s", sizeFlag(max))
	}
	id, err := srv.Ingest(ctx, data, filepath.Base(name))
	if err != nil {
		return "", errors.New(web.ErrorMessage(err))
	}
	if err := srv.QueueSymbolization(ctx, id, false); err != nil {
		fmt.Fprintf(os.Stderr, "viewer: %s: symbolization not queued: %v\n", name, err)
	}
	return id, nil
}

// displayAddr turns a listener address into one a browser can open.
func displayAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ta.IP.IsUnspecified() {
		return net.JoinHostPort("localhost", strconv.Itoa(ta.Port))
	}
	return ta.String()
}

// parseInterspersed parses flags that may come before or after positional
// arguments (viewer serve FILE --addr X) and returns the positionals.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// limitSize is a sizeFlag that may also be 0 (no limit, or the default
// bound, as the flag says).
type limitSize sizeFlag

func (f limitSize) String() string {
	if f == 0 {
		return "0"
	}
	return sizeFlag(f).String()
}

func (f *limitSize) Set(s string) error {
	if strings.TrimSpace(s) == "0" {
		*f = 0
		return nil
	}
	return (*sizeFlag)(f).Set(s)
}

// sizeFlag is a byte count given as 512MiB, 2GiB, 100MB, 4096 and so on.
type sizeFlag int64

func (f sizeFlag) String() string {
	n := int64(f)
	for _, u := range []struct {
		s string
		v int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

func (f *sizeFlag) Set(s string) error {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
		"t": 1 << 40, "tb": 1e12, "tib": 1 << 40,
	}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v <= 0 {
		return fmt.Errorf("size %q: want a positive number with an optional unit, e.g. 512MiB", s)
	}
	*f = sizeFlag(v * mult)
	return nil
}
