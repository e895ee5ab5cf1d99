package symbolize

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/localfile"
)

// This file reads a profile's source files from this machine for the
// source view (web/source.go): a path the profile names, only where the
// binary's debug info names it; the operator's source directories; and a
// file a debuginfod fetch left on disk. Every read goes through
// localfile's safe opens.

// SourceUnits is the part of the symbolization engine a local source path
// is checked with: the compile unit holding addr in mapping m.
type SourceUnits interface {
	Unit(ctx context.Context, m *profile.Mapping, addr uint64) (CompileUnit, bool, error)
}

// SourceSite is one sampled address of a mapping whose line names the
// source file, to find its compile unit.
type SourceSite struct {
	Mapping *profile.Mapping
	Addr    uint64
}

// ErrForeignDebugInfo: the binary's debug info was uploaded or downloaded,
// so its paths may name any file here (DW_AT_comp_dir /etc); its sources
// come from its uploaded source archive or debuginfod only.
var ErrForeignDebugInfo = errors.New("the binary's debug info was uploaded or downloaded, not found on this machine, so the paths it names are not read here (upload its sources with PUT /buildid/ID/sources)")

// ReadNamedSource reads clean, an absolute path a profile names, from this
// machine, up to max bytes, when localAllowed lets it (the debug info of
// the sampled sites names it under its compile unit's directory or one of
// roots).
func ReadNamedSource(ctx context.Context, clean string, units SourceUnits, sites []SourceSite, roots []string, timeout time.Duration, max int64) ([]byte, error) {
	if err := localAllowed(ctx, clean, units, sites, roots, timeout); err != nil {
		return nil, err
	}
	return localfile.ReadFile(ctx, clean, localfile.Named, max)
}

// ReadSourceDir reads clean from the first of dirs that holds it, as
// DIR/ABSOLUTE/PATH (a sysroot or a copy of the source tree) or
// DIR/BASENAME, up to max bytes, and returns the path it read; symlinks
// in an operator's tree may not lead out of it.
func ReadSourceDir(ctx context.Context, dirs []string, clean string, max int64) ([]byte, string, bool) {
	for _, d := range dirs {
		root := resolvedDir(d)
		for _, cand := range []string{filepath.Join(d, clean), filepath.Join(d, filepath.Base(clean))} {
			if !strings.HasPrefix(cand, filepath.Clean(d)+string(filepath.Separator)) {
				continue
			}
			// The operator's tree may hold symlinks, but only within it.
			if real, err := localfile.Resolve(cand, localfile.Configured); err != nil || !localfile.Under(real, root) {
				continue
			}
			if b, err := localfile.ReadFile(ctx, cand, localfile.Configured, max); err == nil {
				return b, cand, true
			}
		}
	}
	return nil, "", false
}

// ReadFetchedSource reads a source file a debuginfod fetch stored at path,
// up to max bytes.
func ReadFetchedSource(ctx context.Context, path string, max int64) ([]byte, error) {
	return localfile.ReadFile(ctx, path, localfile.Configured, max)
}

// ReadErrReason is the short reason of a failed source read or lookup, for
// the source view's message: localfile's reason or the OS error without
// the path it already names.
func ReadErrReason(err error) string { return shortErr(err) }

// localAllowed says why the source view may not read clean, a path the
// profile names, from this machine: the binary's debug info must name it,
// in a compile unit whose directory (or a --source-dir root) holds it once
// symlinks and ".." are resolved, and it must not be under /proc, /sys or
// /dev. nil means it may.
func localAllowed(ctx context.Context, clean string, units SourceUnits, sites []SourceSite, roots []string, timeout time.Duration) error {
	real, err := localfile.Resolve(clean, localfile.Named)
	if err != nil {
		return err
	}
	if units == nil || len(sites) == 0 {
		return errors.New("no debug info of the binary to check that it names this file (only files a binary's debug info names are read)")
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	named, dirs := false, map[string]bool{}
	var lookErr error
	for _, st := range sites {
		cu, ok, err := units.Unit(ctx, st.Mapping, st.Addr)
		if errors.Is(err, ErrForeignDebugInfo) {
			return err
		}
		if err != nil {
			lookErr = err
			continue
		}
		if !ok || !slices.ContainsFunc(cu.Files, func(f string) bool { return filepath.Clean(f) == clean }) {
			continue
		}
		named = true
		if cu.Dir == "" {
			continue
		}
		dirs[cu.Dir] = true
		if localfile.Under(real, resolvedDir(cu.Dir)) {
			return nil
		}
	}
	if !named {
		if lookErr != nil {
			return fmt.Errorf("the binary's debug info, needed to check the path, is not available: %v", shortErr(lookErr))
		}
		return errors.New("the binary's debug info does not name this file")
	}
	for _, r := range roots {
		if localfile.Under(real, resolvedDir(r)) {
			return nil
		}
	}
	where := slices.Sorted(maps.Keys(dirs))
	if len(roots) > 0 {
		where = append(where, roots...)
	}
	if len(where) == 0 {
		return errors.New("its compile unit names no directory, and no --source-dir holds it")
	}
	return fmt.Errorf("it is outside its compile unit's directory and every --source-dir (%s)", strings.Join(where, ", "))
}

// resolvedDir is d with symlinks resolved, or cleaned when it does not exist.
func resolvedDir(d string) string {
	if r, err := filepath.EvalSymlinks(d); err == nil {
		return r
	}
	return filepath.Clean(d)
}

// shortErr is ReadErrReason.
func shortErr(err error) string {
	var le *localfile.Error
	if errors.As(err, &le) {
		return le.Reason
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
