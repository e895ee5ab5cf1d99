package debuginfod

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Control files in the cache directory, shared with elfutils, and their
// defaults in seconds.
const (
	cleanIntervalFile = "cache_clean_interval_s"
	maxUnusedAgeFile  = "max_unused_age_s"
	cacheMissFile     = "cache_miss_s"

	defaultCleanInterval = 86400  // one day
	defaultMaxUnusedAge  = 604800 // one week
	defaultCacheMiss     = 600    // ten minutes
)

// kindFile returns the cache file name for kind, as elfutils names it:
// "debuginfo", "executable", or "source" followed by the absolute path with
// "/" written "##" and "#" written "#_".
func kindFile(kind Kind) (string, error) {
	switch kind {
	case KindDebuginfo, KindExecutable:
		return string(kind), nil
	}
	p, ok := sourcePath(kind)
	if !ok {
		return "", &InvalidKindError{Kind: kind, Reason: "unknown kind"}
	}
	if !strings.HasPrefix(p, "/") {
		return "", &InvalidKindError{Kind: kind, Reason: "a source path must be absolute"}
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", &InvalidKindError{Kind: kind, Reason: "a source path must not contain NUL"}
	}
	if path.Clean(p) != p {
		// A server, or a proxy before it, may resolve "..": only
		// /buildid/ID/source/CLEAN/PATH is ever asked.
		return "", &InvalidKindError{Kind: kind, Reason: "a source path must be clean: no \".\" or \"..\" segments, no \"//\", no trailing \"/\""}
	}
	var b strings.Builder
	b.WriteString("source")
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '/':
			b.WriteString("##")
		case '#':
			b.WriteString("#_")
		default:
			b.WriteByte(p[i])
		}
	}
	if b.Len() > 255 {
		return "", &InvalidKindError{Kind: kind, Reason: fmt.Sprintf("the cache file name would be %d bytes, over the 255 a file system allows", b.Len())}
	}
	return b.String(), nil
}

// sourcePath returns PATH of a "sourcePATH" kind.
func sourcePath(kind Kind) (string, bool) {
	s := string(kind)
	if !strings.HasPrefix(s, "source") {
		return "", false
	}
	return s[len("source"):], true
}

// urlSuffix is the part of the request URL after /buildid/ID/: elfutils
// %-escapes the source path like curl_easy_escape but keeps "/".
func urlSuffix(kind Kind) string {
	p, ok := sourcePath(kind)
	if !ok {
		return string(kind)
	}
	var b strings.Builder
	b.WriteString("source/")
	const hexd = "0123456789ABCDEF"
	for i := 1; i < len(p); i++ { // skip the leading "/"
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hexd[c>>4])
			b.WriteByte(hexd[c&15])
		}
	}
	return b.String()
}

// cache is the on-disk cache in elfutils' layout: DIR/BUILDID/FILE.
type cache struct {
	dir string
}

func (c *cache) path(buildID, file string) string {
	return filepath.Join(c.dir, buildID, file)
}

// entry is what the cache says about one file.
type entry int

const (
	entryAbsent   entry = iota
	entryHit            // a non-empty file
	entryNegative       // a fresh 0-byte file: no server had it recently
)

// lookup checks the cache for one file. A hit's access time is set to now,
// as elfutils does, so max_unused_age_s counts from the last use. A
// negative entry is fresh for the cache_miss_s the control file says now
// (read at each lookup, as elfutils does); a stale one is removed and
// reported absent. since is when a negative entry was recorded.
func (c *cache) lookup(buildID, file string) (e entry, path string, since time.Time) {
	if c.dir == "" {
		return entryAbsent, "", time.Time{}
	}
	path = c.path(buildID, file)
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return entryAbsent, path, time.Time{}
	}
	if st.Size() > 0 {
		touch(path)
		return entryHit, path, time.Time{}
	}
	if c.missFresh(st.ModTime()) {
		return entryNegative, path, st.ModTime()
	}
	os.Remove(path)
	return entryAbsent, path, time.Time{}
}

// missUntil is when a miss recorded at since expires, by the cache_miss_s
// the control file says now.
func (c *cache) missUntil(since time.Time) time.Time {
	return since.Add(time.Duration(c.control(cacheMissFile, defaultCacheMiss, false)) * time.Second)
}

// missFresh reports whether a miss recorded at since still holds.
func (c *cache) missFresh(since time.Time) bool { return !time.Now().After(c.missUntil(since)) }

// touch sets a cache file's access time to now, leaving its mtime (the
// server's Last-Modified) alone: cleaning reads atime as the last use, and
// a relatime or noatime mount would not update it on a read.
func touch(path string) { os.Chtimes(path, time.Now(), time.Time{}) }

// control reads a control file's number of seconds; when the file is missing
// or empty it is the default, and create writes the default into it as
// elfutils does.
func (c *cache) control(name string, def int64, create bool) int64 {
	if c.dir == "" {
		return def
	}
	p := filepath.Join(c.dir, name)
	data, err := os.ReadFile(p)
	if err == nil && len(strings.TrimSpace(string(data))) > 0 {
		if n, err := strconv.ParseInt(strings.Fields(string(data))[0], 10, 64); err == nil {
			return n
		}
		return def
	}
	if create && (errors.Is(err, fs.ErrNotExist) || err == nil) {
		os.WriteFile(p, []byte(strconv.FormatInt(def, 10)), 0o644)
	}
	return def
}

// ensure creates the cache directory (0700) and its control files.
func (c *cache) ensure() error {
	if c.dir == "" {
		return errors.New("debuginfod: no cache directory configured")
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("debuginfod: creating cache directory: %w", err)
	}
	c.control(cleanIntervalFile, defaultCleanInterval, true)
	c.control(maxUnusedAgeFile, defaultMaxUnusedAge, true)
	c.control(cacheMissFile, defaultCacheMiss, true)
	return nil
}

// tempFile creates the temporary file a download is written to, beside its
// final name so the rename is atomic: BUILDID/FILE.XXXXXX, as elfutils.
func (c *cache) tempFile(buildID, file string) (*os.File, error) {
	dir := filepath.Join(c.dir, buildID)
	var err error
	// Cache cleaning may remove the directory between mkdir and create; try twice.
	for range 2 {
		if err = os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			continue
		}
		var f *os.File
		if f, err = os.CreateTemp(dir, file+".*"); err == nil {
			return f, nil
		}
	}
	return nil, fmt.Errorf("debuginfod: creating cache file: %w", err)
}

// tempPattern matches the temporary files of downloads in a build-ID
// directory: FILE.SUFFIX, with this client's decimal suffix (os.CreateTemp)
// or elfutils' six mkstemp characters.
var tempPattern = regexp.MustCompile(`^(debuginfo|executable|source.*)\.([0-9]+|[A-Za-z0-9]{6})$`)

// sweepTemps removes the temporary files downloads left behind when their
// process died (kill -9, a crash) and that nothing has written to for age,
// longer than any fetch in progress goes without writing. It reports how
// many it removed.
func (c *cache) sweepTemps(age time.Duration) int {
	if c.dir == "" {
		return 0
	}
	dirs, err := os.ReadDir(c.dir)
	if err != nil {
		return 0
	}
	now, removed := time.Now(), 0
	for _, d := range dirs {
		if !d.IsDir() || !buildIDDir.MatchString(d.Name()) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(c.dir, d.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			if !tempPattern.MatchString(f.Name()) || !f.Type().IsRegular() {
				continue
			}
			// Entries are committed read-only (0400); a download's temp
			// file is still writable, which also keeps a source entry whose
			// name ends like a suffix ("x.python") from being taken for one.
			info, err := f.Info()
			if err != nil || info.Mode().Perm()&0o200 == 0 || now.Sub(info.ModTime()) < age {
				continue
			}
			if os.Remove(filepath.Join(c.dir, d.Name(), f.Name())) == nil {
				removed++
			}
		}
	}
	return removed
}

// buildIDDir matches a build-ID directory of the cache.
var buildIDDir = regexp.MustCompile(`^[a-f0-9]+$`)

// commit makes a finished temp file the cache entry: 0400, mtime from the
// server's Last-Modified when known, renamed into place.
func (c *cache) commit(f *os.File, buildID, file string, modTime time.Time) (string, error) {
	tmp := f.Name()
	err := f.Chmod(0o400)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if !modTime.IsZero() {
		os.Chtimes(tmp, time.Now(), modTime)
	}
	final := c.path(buildID, file)
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("debuginfod: storing %s in the cache: %w", final, err)
	}
	return final, nil
}

// writeNegative records that no server has the file: a 0-byte file whose
// mtime starts the cache_miss_s period.
func (c *cache) writeNegative(buildID, file string) {
	dir := filepath.Join(c.dir, buildID)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return
	}
	p := c.path(buildID, file)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o400)
	if err == nil {
		f.Close()
	}
}

// cleanPattern is elfutils' pattern of what cleaning may delete.
var cleanPattern = regexp.MustCompile(`.*/[a-f0-9]+(/debuginfo|/executable|/source.*|)$`)

// clean deletes files unused (by atime) for max_unused_age_s and empty old
// build-ID directories, at most once per cache_clean_interval_s, as elfutils
// does, so both clients keep the shared cache in check the same way. The
// client runs it on a timer (cleaner) and before each download.
func (c *cache) clean(logf func(string, ...any)) {
	if c.dir == "" {
		return
	}
	interval := c.control(cleanIntervalFile, defaultCleanInterval, true)
	ip := filepath.Join(c.dir, cleanIntervalFile)
	st, err := os.Stat(ip)
	if err != nil || time.Since(st.ModTime()) < time.Duration(interval)*time.Second {
		return
	}
	now := time.Now()
	os.Chtimes(ip, now, now) // claim this round first, as elfutils does
	maxAge := time.Duration(c.control(maxUnusedAgeFile, defaultMaxUnusedAge, true)) * time.Second
	var removed int
	type dir struct {
		path  string
		mtime time.Time // before its files were removed, as fts reports it
	}
	var dirs []dir
	filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == c.dir || !cleanPattern.MatchString(p) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, dir{p, info.ModTime()})
			return nil
		}
		if now.Sub(atime(info)) >= maxAge {
			if os.Remove(p) == nil {
				removed++
			}
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if now.Sub(dirs[i].mtime) >= maxAge {
			os.Remove(dirs[i].path) // fails, harmlessly, unless empty
		}
	}
	if logf != nil && removed > 0 {
		logf("debuginfod: cleaned %d files unused for %v from %s", removed, maxAge, c.dir)
	}
}

func atime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return fi.ModTime()
}

// nextClean is how long until cleaning is due: cache_clean_interval_s after
// the last round (the control file's mtime), at least a second and at most
// the interval, both read again each time.
func (c *cache) nextClean() time.Duration {
	interval := time.Duration(max(c.control(cleanIntervalFile, defaultCleanInterval, false), 1)) * time.Second
	st, err := os.Stat(filepath.Join(c.dir, cleanIntervalFile))
	if err != nil {
		return interval
	}
	return min(max(time.Until(st.ModTime().Add(interval)), time.Second), interval)
}

// cleaner cleans the cache when due until stop is closed, so a server that
// downloads nothing still keeps the cache in check.
func (c cache) cleaner(stop <-chan struct{}, logf func(string, ...any)) {
	for {
		t := time.NewTimer(c.nextClean())
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
			c.clean(logf)
		}
	}
}
