// Package debuginfod is a client for debuginfod servers: it fetches debug
// info, executables and sources by build ID into the elfutils-compatible
// cache that gdb and perf share, one download per build ID however many ask.
package debuginfod

// Kind is what is fetched for a build ID: "debuginfo", "executable" or
// "source/ABSOLUTE/PATH".
type Kind string

const (
	KindDebuginfo  Kind = "debuginfo"
	KindExecutable Kind = "executable"
)

// SourceKind is the Kind for one source file of a build.
func SourceKind(path string) Kind { return Kind("source" + path) }

// Phase is where one fetch stands. Every Fetch reports exactly one terminal
// phase last: PhaseCacheHit, PhaseDone, PhaseNotFound or PhaseError.
// Connecting comes once per server and attempt; downloading from the server
// that answered first, about once per 64 KiB and at least once a second
// while the body is read (even when no byte came: a live, stalled fetch);
// verifying once the body is in, for debuginfo and executables.
type Phase string

const (
	PhaseCacheHit    Phase = "cache hit"
	PhaseConnecting  Phase = "connecting"
	PhaseDownloading Phase = "downloading"
	PhaseVerifying   Phase = "verifying"
	PhaseDone        Phase = "done"
	PhaseNotFound    Phase = "not found"
	PhaseError       Phase = "error"
)

// Progress reports one step of a fetch to the caller's callback.
type Progress struct {
	BuildID string
	Kind    Kind
	Server  string // URL of the server being asked (or that delivered, with PhaseDone); empty for the cache
	Phase   Phase
	Bytes   int64  // received so far; the file's size with PhaseCacheHit and PhaseDone
	Total   int64  // expected size (Content-Length, else X-DEBUGINFOD-SIZE), -1 when unknown
	Path    string // local file, once done or on a cache hit
	Err     error  // set with PhaseError and PhaseNotFound
}

// ErrNotFound is returned (wrapped) when no server has the requested file, or
// a negative cache entry says so.
var ErrNotFound = errNotFound{}

type errNotFound struct{}

func (errNotFound) Error() string { return "debuginfod: not found" }
