package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Dir stores each key as a file under a root directory. Writes go to a
// temporary file in the destination directory, which is fsynced, renamed
// into place and followed by an fsync of the directory, so an acknowledged
// Put survives a crash. Concurrent writes into one directory share its
// fsyncs (group commit: each waits for a sync begun after its rename), and
// a directory's own entry in its parent is synced once per process. The
// syncs one write needs and that do not depend on each other run at once.
// A new folder's objects held in memory (PutAll, PutAllIndexed: a new
// profile's) are not synced one by one: one record in the journal
// (journal.go), synced with the concurrent writers' records, makes them
// durable, and a background checkpoint syncs their files later. Empty
// objects are links of one empty file (empty.go).
type Dir struct {
	root string

	syncs dirSyncs
	// durable holds directories whose entry in their parent this process
	// has synced, the most recent few thousand (one forgotten is synced
	// again).
	durable *lru.Cache[string, struct{}]
	// journal is the group commit of new folders' writes (journal.go).
	journal *journal
	// empty is the file every empty object is a link of (empty.go).
	empty emptyFile
}

// tempPrefix names Put's temporary files; Dir refuses keys with a path
// element starting with it, so sweeping them never removes a stored key.
const tempPrefix = ".tmp-"

// NewDir returns a store rooted at root, creating the directory if needed.
// It replays the journal a crash left (journal.go) and removes the temporary files of writes a crash interrupted (a kill -9
// during an upload leaves one beside its destination; none was ever
// acknowledged). A directory is one process's: every temporary file found
// at start-up is an orphan. Two processes sharing a directory are not
// supported (replicas share an object store instead, see blob.go).
func NewDir(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("store: empty directory name")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	durable, err := lru.New[string, struct{}](4096)
	if err != nil {
		return nil, err
	}
	d := &Dir{root: root, syncs: dirSyncs{m: map[string]*dirSync{}}, durable: durable}
	// The journal's records are made durable again before the temporary
	// files go: a record names objects, never a temporary file.
	if d.journal, err = openJournal(d); err != nil {
		return nil, err
	}
	sweepTemps(root)
	return d, nil
}

// sweepTemps removes the regular files and directories named like Put's
// and PutAll's temporary ones under root (best effort: an unreadable
// directory is left as it is).
func sweepTemps(root string) {
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if e != nil && e.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if p == root || !strings.HasPrefix(e.Name(), tempPrefix) {
			return nil
		}
		switch {
		case e.IsDir():
			os.RemoveAll(p)
			return fs.SkipDir
		case e.Type().IsRegular():
			os.Remove(p)
		}
		return nil
	})
}

// Root is the directory the store writes to.
func (d *Dir) Root() string { return d.root }

func (d *Dir) path(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	if strings.HasPrefix(key, tempPrefix) || strings.Contains(key, "/"+tempPrefix) {
		return "", fmt.Errorf("store: invalid key %q (%s… names temporary files)", key, tempPrefix)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes r to key atomically and durably.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader) (err error) {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := d.settle(key); err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if b, ok := r.(*FileBody); ok {
		if done, err := d.putLinked(ctx, dir, p, b); done || err != nil {
			return err
		}
	}
	// An empty object (an index entry) is created under its name: it has
	// no bytes to be seen in part, so it needs no temporary file.
	var head [512]byte
	n, rerr := io.ReadFull(ctxReader{ctx, r}, head[:])
	switch {
	case n == 0 && rerr == io.EOF:
		if ok, err := d.createEmpty(p); ok || err != nil {
			return err
		}
	case rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF:
		return fmt.Errorf("store: writing %s: %w", key, rerr)
	}
	r = io.MultiReader(bytes.NewReader(head[:n]), r)
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = copyTo(ctx, f, r); err != nil {
		return fmt.Errorf("store: writing %s: %w", key, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("store: syncing %s: %w", key, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("store: closing %s: %w", key, err)
	}
	if err = os.Rename(f.Name(), p); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return d.syncEntry(dir)
}

// createEmpty creates the empty file p, unless it exists (ok false: Put
// replaces it the usual way). A new empty file has no data to sync:
// creating it changes its directory only, which syncEntry makes durable
// (the journal commits the new inode with its directory entry).
func (d *Dir) createEmpty(p string) (ok bool, err error) {
	err = d.empty.create(d.root, p)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	err = d.syncEntry(filepath.Dir(p))
	if err != nil {
		os.Remove(p)
		return false, fmt.Errorf("store: %w", err)
	}
	return true, nil
}

// syncEntry makes durable what was just renamed or created in dir: dir
// is synced (shared with concurrent writers), and so is its parent the
// first time this process writes into dir, since dir may be new.
func (d *Dir) syncEntry(dir string) error {
	if err := d.syncs.sync(dir); err != nil {
		return err
	}
	return d.syncDurable(dir)
}

// syncDurable syncs dir's parent unless this process did so before, so
// that dir's own entry survives a crash, and so on up to the root (a new
// folder's parent may be new too).
func (d *Dir) syncDurable(dir string) error {
	for dir != d.root && !d.durable.Contains(dir) {
		if err := d.syncs.sync(filepath.Dir(dir)); err != nil {
			return err
		}
		d.durable.Add(dir, struct{}{})
		if up := filepath.Dir(dir); up != dir {
			dir = up
			continue
		}
		break
	}
	return nil
}

// PutAll writes objs, whose keys are in one folder, as Put would each.
// When the folder is new (a new profile's), they are written into a
// temporary directory that is renamed into place, so they appear
// together, and made durable by a journal record (objects in memory up
// to maxJournaled) or else synced with the directory (all at once) and
// the folder's parent; otherwise they are Put one after the other.
func (d *Dir) PutAll(ctx context.Context, objs []Object) (err error) {
	return d.PutAllIndexed(ctx, objs, nil)
}

// PutAllIndexed is PutAll, then an empty file at each key of index
// (store.IndexPutter). In a new folder's case they are created once the
// folder is renamed into place, and are in the folder's journal record,
// or else their folders are synced at the same time as the folder's
// parent: one round of syncs for both, where a Put after PutAll waited
// for a second.
func (d *Dir) PutAllIndexed(ctx context.Context, objs []Object, index []string) (err error) {
	paths := make([]string, len(objs))
	for i, o := range objs {
		if paths[i], err = d.path(o.Key); err != nil {
			return err
		}
	}
	marks := make([]string, len(index))
	for i, k := range index {
		if marks[i], err = d.path(k); err != nil {
			return err
		}
	}
	each := func() error {
		if err := putEach(ctx, d, objs); err != nil {
			return err
		}
		return PutIndex(ctx, d, index)
	}
	if len(paths) < 2 || !sameDir(paths) || filepath.Dir(paths[0]) == d.root {
		return each()
	}
	dir := filepath.Dir(paths[0])
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return each()
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// A journaled write (the objects in memory, not too large) writes
	// its files unsynced, and one record synced with the other writers'
	// makes it durable (journal.go).
	var rec *journalRecord
	if d.journal != nil {
		if rec, objs, err = newRecord(objs, index); err != nil {
			return err
		}
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(parent, tempPrefix+"dir-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := writeAll(ctx, tmp, paths, objs, rec == nil); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another writer made the folder meanwhile: move the files in
		// one by one.
		if _, serr := os.Lstat(dir); serr != nil {
			return fmt.Errorf("store: %w", err)
		}
		for _, p := range paths {
			if err := os.Rename(filepath.Join(tmp, filepath.Base(p)), p); err != nil {
				return fmt.Errorf("store: %w", err)
			}
		}
		os.Remove(tmp)
		if rec == nil {
			if err := d.syncEntry(dir); err != nil {
				return err
			}
			return PutIndex(ctx, d, index)
		}
	}
	// The folder is in place: its index entries are created, and the
	// folders of both synced at once (or journaled).
	dirs := []string{parent}
	for _, m := range marks {
		if err := d.createMark(ctx, m); err != nil {
			return err
		}
		if md := filepath.Dir(m); !slices.Contains(dirs, md) {
			dirs = append(dirs, md)
		}
	}
	if rec != nil {
		// What a checkpoint syncs: the files, then the folders (a
		// trailing separator) with their entries up to the root.
		ps := slices.Concat(paths, marks, []string{dir + string(filepath.Separator)})
		for _, md := range dirs[1:] {
			ps = append(ps, md+string(filepath.Separator))
		}
		if err := d.journal.commit(d, rec, ps); !errors.Is(err, errJournalOff) {
			return err
		}
		return d.syncPaths(ps)
	}
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, sd := range dirs[1:] {
		wg.Go(func() { errs[i+1] = d.syncEntry(sd) })
	}
	errs[0] = d.syncEntry(parent)
	wg.Wait()
	if errs[0] == nil {
		d.durable.Add(dir, struct{}{})
	}
	return errors.Join(errs...)
}

// createMark creates the empty file p (an index entry) without syncing
// its folder; one holding bytes already is replaced as Put does.
func (d *Dir) createMark(ctx context.Context, p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	err := d.empty.create(d.root, p)
	if errors.Is(err, fs.ErrExist) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			return nil
		}
		key, _ := filepath.Rel(d.root, p)
		return d.Put(ctx, filepath.ToSlash(key), strings.NewReader(""))
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// sameDir reports whether every path is in the first one's directory.
func sameDir(paths []string) bool {
	for _, p := range paths[1:] {
		if filepath.Dir(p) != filepath.Dir(paths[0]) {
			return false
		}
	}
	return true
}

// writeAll creates each object's file in dir (named as in paths) with
// its bytes, then, when sync is set, syncs the files and dir at once,
// each on a goroutine of its own: their writes and the disk's cache flushes
// overlap (ext4 without a journal, as on the benchmark machine, writes
// and flushes for each fsync on its own), and where there is a journal
// they join one commit; one after the other, each waited for the last.
func writeAll(ctx context.Context, dir string, paths []string, objs []Object, sync bool) (err error) {
	files := make([]*os.File, 0, len(objs))
	defer func() {
		for _, f := range files {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("store: closing %s: %w", f.Name(), cerr)
			}
		}
	}()
	for i, o := range objs {
		f, err := os.OpenFile(filepath.Join(dir, filepath.Base(paths[i])), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		files = append(files, f)
		if _, err := copyTo(ctx, f, o.Body); err != nil {
			return fmt.Errorf("store: writing %s: %w", o.Key, err)
		}
		if err := f.Chmod(0o644); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if !sync {
		return nil
	}
	return syncAll(dir, files, objs)
}

// syncAll syncs files, objs' in dir, and dir, at once.
func syncAll(dir string, files []*os.File, objs []Object) error {
	errs := make([]error, len(files)+1)
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			if err := f.Sync(); err != nil {
				errs[i] = fmt.Errorf("store: syncing %s: %w", objs[i].Key, err)
			}
		})
	}
	errs[len(files)] = fsyncDir(dir)
	wg.Wait()
	return errors.Join(errs...)
}

func fsyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: syncing directory %s: %w", dir, err)
	}
	return nil
}

// dirSyncs runs the directory fsyncs of concurrent writers together: a
// writer that renamed a file into a directory waits for a sync of it that
// began after its rename, starting one when none is running, so writers
// arriving during a sync share the next one.
type dirSyncs struct {
	mu   sync.Mutex
	cond *sync.Cond
	m    map[string]*dirSync
}

// dirSync is one directory's syncs: how many began and ended, the last
// that failed and why, and how many writers wait on it (it is dropped
// when none does).
type dirSync struct {
	running       bool
	started, done uint64
	failed        uint64
	err           error
	users         int
}

// sync returns once a sync of dir that began after the call has ended,
// with its error, or that of any failed sync since.
func (g *dirSyncs) sync(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	s := g.m[dir]
	if s == nil {
		s = &dirSync{}
		g.m[dir] = s
	}
	s.users++
	want := s.started + 1
	for s.done < want {
		if s.running {
			g.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		n := s.started
		g.mu.Unlock()
		err := fsyncDir(dir)
		g.mu.Lock()
		s.running, s.done = false, n
		if err != nil {
			s.failed, s.err = n, err
		}
		g.cond.Broadcast()
	}
	var err error
	if s.failed >= want {
		err = s.err
	}
	if s.users--; s.users == 0 {
		delete(g.m, dir)
	}
	return err
}

// Get opens key for reading.
func (d *Dir) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return f, nil
}

// Stat returns key's size and modification time.
func (d *Dir) Stat(ctx context.Context, key string) (Info, error) {
	p, err := d.path(key)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("store: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("store: %s is not a file", key)
	}
	return Info{Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// copyBuffers are copyTo's buffers: io.Copy into an *os.File from a
// reader that is neither a file nor a socket allocates 32 KiB each time
// (two per OTLP profile stored).
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyTo writes r to f until EOF, stopping when ctx is cancelled. A
// small in-memory body (a bytes.Reader, as the profile service's
// objects are) is written at once.
func copyTo(ctx context.Context, f *os.File, r io.Reader) (int64, error) {
	if br, ok := r.(*bytes.Reader); ok && br.Len() <= 1<<20 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return br.WriteTo(f)
	}
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{f}, ctxReader{ctx, r}, *bp)
}

// ctxReader stops a long copy when the context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
