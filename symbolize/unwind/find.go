package unwind

import (
	"context"
	"debug/elf"
	"fmt"
	"sync"
	"syscall"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"viewer/symbolize/buildid"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
)

// Finder finds the binaries a perf.data maps on this machine and reads
// their CFI, once per binary. A binary is used only when it is the one perf
// saw: its build ID equals the one perf recorded or, when perf recorded
// none (perf record writes build IDs only for binaries that sampled
// instructions fall in, so libraries reached only by unwinding have none),
// its inode number equals the one in perf's MMAP2 record.
type Finder struct {
	// Locator finds and holds binaries with a build ID: the symbolizer
	// (symbolize.Symbolizer), so --debug-dir, the build-ID trees and perf's
	// ~/.debug apply to unwinding as to symbolization, and their CFI is
	// kept in its store. Nil: binaries with a build ID are not looked for.
	Locator Locator
	// IgnorePaths stops the Finder from opening the paths a profile names
	// (for servers, where those paths are not this machine's).
	IgnorePaths bool

	once  sync.Once
	cache *lru.Cache[string, found] // binaries without a build ID, by path and inode
	group singleflight.Group
}

// Locator is what the Finder needs of the owner of loaded debug info: the
// CFI of the binary with build ID buildID (lowercase hex) that perf saw
// mapped at path, found by the one search and held, with the rest of what
// is loaded from that binary, under the one memory budget.
type Locator interface {
	CFI(ctx context.Context, path, buildID string) (*Object, error)
}

// A Finder outlives conversions in a server, so what it keeps of binaries
// without a build ID (those with one are the Locator's) is bounded: the CFI
// of at most finderCacheSize binaries, each for finderTTL, after which a
// binary that was missing, or has been rebuilt, is looked for again.
const (
	finderCacheSize = 256
	finderTTL       = 10 * time.Minute
)

type found struct {
	o    *Object
	err  error
	when time.Time
}

// NewFinder returns a Finder that looks for binaries with loc.
func NewFinder(loc Locator) *Finder { return &Finder{Locator: loc} }

// Object returns the CFI of the binary perf saw mapped at path with the
// given build ID ("" when perf recorded none) and inode number (0 when unknown).
func (f *Finder) Object(path, buildID string, inode uint64) (*Object, error) {
	if buildID != "" {
		// Held by the Locator's store, once for all its users.
		bid, err := buildid.Normalize(buildID)
		if err != nil {
			return nil, err
		}
		if f.Locator == nil {
			return nil, fmt.Errorf("%s (build ID %s): no locator to find it by build ID", path, bid)
		}
		o, err := f.Locator.CFI(context.Background(), path, bid)
		if err != nil {
			return nil, fmt.Errorf("%s (build ID %s) is not on this machine: %w", path, bid, err)
		}
		return o, nil
	}
	f.once.Do(func() { f.cache, _ = lru.New[string, found](finderCacheSize) })
	key := path + "\x00" + buildID + "\x00" + fmt.Sprint(inode)
	if r, ok := f.cached(key); ok {
		return r.o, r.err
	}
	// One load per binary at a time, and no lock held while reading it:
	// other binaries' lookups go on.
	v, _, _ := f.group.Do(key, func() (any, error) {
		if r, ok := f.cached(key); ok {
			return r, nil // loaded while this caller waited
		}
		o, err := f.load(path, buildID, inode)
		r := found{o, err, time.Now()}
		f.cache.Add(key, r)
		return r, nil
	})
	r := v.(found)
	return r.o, r.err
}

// cached returns what was found for key less than finderTTL ago.
func (f *Finder) cached(key string) (found, bool) {
	r, ok := f.cache.Get(key)
	if !ok || time.Since(r.when) > finderTTL {
		return found{}, false
	}
	return r, true
}

func (f *Finder) load(path, buildID string, inode uint64) (*Object, error) {
	if buildID == "" {
		if f.IgnorePaths {
			return nil, fmt.Errorf("%s: perf recorded no build ID and this server does not open the paths profiles name", path)
		}
		if inode == 0 {
			return nil, fmt.Errorf("%s: perf recorded neither a build ID nor an inode number, so the file there cannot be shown to be the one profiled", path)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			return nil, err
		}
		if st.Ino != inode {
			return nil, fmt.Errorf("%s: not the file perf saw (inode %d, perf recorded %d); it was replaced since the recording", path, st.Ino, inode)
		}
		exe, err := openELF(path, localfile.Named)
		if err != nil {
			return nil, err
		}
		defer exe.Close()
		o, err := NewObject(exe.File, nil)
		if err == nil {
			o.buildID = elfsym.BuildIDNote(exe.File)
		}
		return o, err
	}
	return nil, fmt.Errorf("%s: binaries with a build ID are read by the Locator", path)
}

// ReadObject reads the CFI of the executable at execPath and, when
// debugPath is not "", of its separate debug file, for the Object of the
// binary with build ID buildID. named says execPath is the path the profile
// named (its last symlink is not followed).
func ReadObject(execPath, debugPath, buildID string, named bool) (*Object, error) {
	trust := localfile.Configured
	if named {
		trust = localfile.Named
	}
	exe, err := openELF(execPath, trust)
	if err != nil {
		return nil, err
	}
	defer exe.Close()
	var dbg *elf.File
	if debugPath != "" {
		if e, err := openELF(debugPath, localfile.Configured); err == nil {
			defer e.Close()
			dbg = e.File
		}
	}
	o, err := NewObject(exe.File, dbg)
	if err == nil {
		o.buildID = buildID
	}
	return o, err
}

// openELF opens an ELF file: a regular file only, as trust allows
// (localfile.OpenELF).
func openELF(path string, trust localfile.Trust) (*localfile.ELF, error) {
	return localfile.OpenELF(context.Background(), path, trust)
}
