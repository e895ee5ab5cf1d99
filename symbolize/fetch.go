package symbolize

import (
	"debug/elf"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
)

// The contracts that the packages above symbolize (web, web/debuginfo)
// share with its debuginfod client and ELF reader, re-exported so that they
// are declared once, below, and named through symbolize.

// FileKind is what a Fetcher fetches for a build ID: KindDebuginfo,
// KindExecutable or SourceKind(path).
type FileKind = debuginfod.Kind

const (
	KindDebuginfo  = debuginfod.KindDebuginfo
	KindExecutable = debuginfod.KindExecutable
)

// SourceKind is the FileKind of one source file of a build, by its absolute
// path.
func SourceKind(path string) FileKind { return debuginfod.SourceKind(path) }

// FetchProgress is one step of a fetch, reported to a Fetcher's callback.
type FetchProgress = debuginfod.Progress

// ErrFetchNotFound matches (errors.Is) a fetch that no server could answer
// because none has the file; ErrNoServers one that asked nobody.
var (
	ErrFetchNotFound = debuginfod.ErrNotFound
	ErrNoServers     = debuginfod.ErrNoServers
)

// InvalidBuildIDError says why NormalizeBuildID refused a build ID.
type InvalidBuildIDError = debuginfod.InvalidBuildIDError

// MaxBuildIDLen is the longest build ID accepted, in hex digits.
const MaxBuildIDLen = debuginfod.MaxBuildIDLen

// NormalizeBuildID is the one build-ID check (debuginfod.NormalizeBuildID):
// an even number of hex digits, at most MaxBuildIDLen, returned in lower
// case; nothing that fails it reaches a path or a URL.
func NormalizeBuildID(id string) (string, error) { return debuginfod.NormalizeBuildID(id) }

// ELFBuildID is the GNU build ID note of an ELF file read with debug/elf
// (elfsym.BuildIDNote, the one build-ID reader), "" when it has none.
func ELFBuildID(ef *elf.File) string { return elfsym.BuildIDNote(ef) }

// CompileUnit is the compile unit holding an address (Handle.Unit): its
// directory and the files its line table names.
type CompileUnit = elfsym.CompileUnit
