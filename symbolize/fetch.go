package symbolize

import (
	"context"

	"viewer/symbolize/debuginfod"
)

// Fetcher gets a file by build ID from debuginfod servers; the debuginfod
// client implements it. It returns the local path of the file.
type Fetcher interface {
	Fetch(ctx context.Context, buildID string, kind FetchKind, progress func(FetchProgress)) (string, error)
}

// The fetch contract's types, declared by symbolize/debuginfod and
// re-exported here so that a consumer of the engine (web/ondemand's gate)
// needs no import of the client package.
type (
	// FetchKind says which file of a build ID is asked for.
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

// ErrFetchNotFound is matched (errors.Is) by a Fetcher's error when no
// server has the file.
var ErrFetchNotFound = debuginfod.ErrNotFound
