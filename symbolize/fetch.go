package symbolize

import (
	"context"
	"debug/elf"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
)

// The contracts that the packages above symbolize (web, web/ondemand,
// web/debuginfo) share with its debuginfod client and ELF reader,
// re-exported so that they are declared once, below, and named through
// symbolize.

// Fetcher gets a file by build ID from debuginfod servers; the debuginfod
// client implements it. It returns the local path of the file.
type Fetcher interface {
	Fetch(ctx context.Context, buildID string, kind FetchKind, progress func(FetchProgress)) (string, error)
}

type (
	// FetchKind says which file of a build ID is asked for:
	// KindDebuginfo, KindExecutable or SourceKind(path).
	FetchKind = debuginfod.Kind
	// FetchProgress is one step of a fetch, as a Fetcher reports it.
	FetchProgress = debuginfod.Progress
	// FetchPhase is where a fetch stands.
	FetchPhase = debuginfod.Phase
)

// The kinds of file a Fetcher is asked for.
const (
	KindDebuginfo  = debuginfod.KindDebuginfo
	KindExecutable = debuginfod.KindExecutable
)

// SourceKind is the FetchKind of one source file of a build, by its
// absolute path.
func SourceKind(path string) FetchKind { return debuginfod.SourceKind(path) }

// The phases a fetch reports.
const (
	PhaseCacheHit    = debuginfod.PhaseCacheHit
	PhaseConnecting  = debuginfod.PhaseConnecting
	PhaseDownloading = debuginfod.PhaseDownloading
	PhaseVerifying   = debuginfod.PhaseVerifying
	PhaseDone        = debuginfod.PhaseDone
	PhaseNotFound    = debuginfod.PhaseNotFound
	PhaseError       = debuginfod.PhaseError
)

// ErrFetchNotFound matches (errors.Is) a fetch that no server could answer
// because none has the file; ErrNoServers one that asked nobody.
var (
	ErrFetchNotFound = debuginfod.ErrNotFound
	ErrNoServers     = debuginfod.ErrNoServers
)

// ELFBuildID is the GNU build ID note of an ELF file read with debug/elf
// (elfsym.BuildIDNote, the one build-ID reader), "" when it has none.
func ELFBuildID(ef *elf.File) string { return elfsym.BuildIDNote(ef) }

// CompileUnit is the compile unit holding an address (Handle.Unit): its
// directory and the files its line table names.
type CompileUnit = elfsym.CompileUnit

// WithFetchQuota is ctx with q asked before each fetch from a debuginfod
// server made under it (debuginfod.WithQuota); q's error refuses the fetch.
// The symbolization APIs bound what one request and one client may fetch.
func WithFetchQuota(ctx context.Context, q func() error) context.Context {
	return debuginfod.WithQuota(ctx, q)
}
