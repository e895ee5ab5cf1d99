package symbolize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
	"viewer/symbolize/perfmap"
)

// IsPerfMap reports whether a mapping's file is a JIT's perf map,
// exactly /tmp/perf-<digits>.map (the name perf gives a process's
// anonymous executable memory): its addresses are named from that text
// file, on the machine that recorded them, when the local-files policy
// lets the server read the files profiles name (Config.IgnoreMappingPaths).
func IsPerfMap(file string) bool { return perfmap.IsPath(file) }

// PerfMapFile is the perf map perf reads a process's JIT names from, and
// the file it names that process's anonymous executable memory after.
func PerfMapFile(pid int) string { return perfmap.Path(pid) }

// PerfMapHelp is the next step for a perf map's frames left as addresses.
const PerfMapHelp = "A JIT's perf map is a file in /tmp on the machine that ran the program, read only while it is there: " +
	"run viewer serve on that machine (it reads local files on loopback, without --no-local-files), " +
	"or symbolize the profile there before uploading (viewer symbolize, or perf script with the map present); " +
	"once the map is back in /tmp, press Retry."

// perfMapMissing says why a perf map was not read: "no symbols" (it
// wraps errNotFound) with its own words, not a debug file's.
type perfMapMissing struct{ msg string }

func (e perfMapMissing) Error() string { return e.msg }
func (e perfMapMissing) Unwrap() error { return errNotFound }

func missing(format string, a ...any) error { return perfMapMissing{fmt.Sprintf(format, a...)} }

// perfMapObject is a perf map as the symbolizer's object: its addresses
// are absolute, so none is translated.
type perfMapObject struct{ m *perfmap.Map }

func (o perfMapObject) ObjAddr(addr, _, _, _ uint64) (uint64, error) { return addr, nil }

func (o perfMapObject) Lookup(addr uint64, frames []elfsym.Frame) ([]elfsym.Frame, error) {
	frames = frames[:0]
	if name, ok := o.m.Lookup(addr); ok {
		frames = append(frames, elfsym.Frame{Name: name})
	}
	return frames, nil
}

func (o perfMapObject) Size() int64  { return o.m.Size() }
func (o perfMapObject) Close() error { return nil }

// openPerfMap reads the perf map a mapping names, when the policy allows:
// the path is checked to be exactly /tmp/perf-<digits>.map and opened as
// a path a profile names (the last component not followed, a regular
// file only), from Config.PerfMapDir, under the MaxDebugFile bound. It
// is read afresh for each run, not kept in the store: a running JIT
// appends to it, and another process may later have the same PID.
func (s *Symbolizer) openPerfMap(ctx context.Context, file string) (*loaded, error) {
	if !perfmap.IsPath(file) {
		return nil, missing("%q is not a perf map's path", file)
	}
	if s.cfg.IgnoreMappingPaths {
		why := s.cfg.MappingPathsOff
		if why == "" {
			why = "it is reachable from other machines, or runs with --no-local-files"
		}
		return nil, missing("the JIT's perf map %s was not read: this server does not open the files profiles name (%s); run viewer serve on the machine that recorded the profile, without --no-local-files, or symbolize the profile there before uploading it", file, why)
	}
	p := filepath.Join(s.cfg.PerfMapDir, filepath.Base(file))
	f, err := localfile.Open(ctx, p, localfile.Named)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, missing("the JIT's perf map %s is not on this machine (the JIT writes it where it runs; it is gone once /tmp is cleaned): symbolize the profile on the machine that recorded it while the map is there (viewer symbolize, or viewer serve there)", file)
		}
		return nil, missing("the JIT's perf map was not read: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if max := s.cfg.MaxDebugFile; max > 0 && st.Size() > max {
		return nil, missing("the JIT's perf map %s is %d bytes, over --max-debug-file %d", p, st.Size(), max)
	}
	m, err := perfmap.Read(io.NewSectionReader(localfile.NewReader(p, f, 0, nil), 0, 1<<62), s.cfg.MaxDebugFile)
	if err != nil {
		return nil, missing("the JIT's perf map %s was not read: %v", p, err)
	}
	l := &loaded{obj: perfMapObject{m}, source: p + " (the JIT's perf map)", local: true}
	if m.Bad > 0 {
		l.note = fmt.Sprintf("%d of its %d lines are not START SIZE NAME as perf reads them and were skipped (the first: line %d)", m.Bad, m.Lines, m.FirstBad)
	}
	return l, nil
}
