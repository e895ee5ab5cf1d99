package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// journal is Dir's group commit for new folders (PutAllIndexed): the
// objects of concurrent writes are appended, as records, to one file in
// the root, and one fsync of that file makes a whole batch of them
// durable, where each write's own files, folder and index entries took
// two rounds of fsyncs of their own. On this project's benchmark machine
// (ext4 without a journal) every fsync is a write and a cache flush of
// its own, so concurrent fsyncs are not folded by the filesystem; a
// record appended by each of 8 writers is one.
//
// The objects' files are written and renamed into place as before, so
// readers find each by its key at once; they are synced later, in the
// background, by a checkpoint: once the journal holds journalLimit
// bytes, appends move to a new journal file, the old one's files and
// folders are synced (one syncfs on Linux, else an fsync each), and the
// old file is removed. A start (NewDir)
// replays the journal files a crash left: every object they hold whose
// file is missing or differs is written again, durably, and the others
// are synced, before the files are removed.
//
// A journaled key is never written again by Put or Commit before it is
// checkpointed (they checkpoint first), so replaying a record can never
// undo a later write.
type journal struct {
	root string

	mu   sync.Mutex
	cond *sync.Cond
	f    *os.File // the file appended to, nil until a write needs one
	gen  uint64   // f's generation (the last one's while f is nil), in its name and each record
	size int64
	// appended and synced count records: a writer whose record is number
	// n waits for synced ≥ n, starting a sync when none runs.
	appended, synced uint64
	syncing          bool
	// failed is the error of a sync or checkpoint that failed: the
	// journal is not used after it (Dir syncs each write as before).
	failed error
	// keys counts the records of each key not yet checkpointed; fkeys
	// are f's records' keys, and paths the files and folders they wrote.
	keys  map[string]int
	fkeys []string
	paths []string
	// checkpointing is set while a background checkpoint runs.
	checkpointing bool
	cp            sync.Mutex // one checkpoint at a time
}

// journalLimit is how many bytes a journal file holds before a
// checkpoint starts (a variable for the tests).
var journalLimit int64 = 4 << 20

// maxJournaled is the largest write (all its objects) that is journaled;
// a larger one is synced file by file as before.
const maxJournaled = 4 << 20

// journalPrefix names the journal files in the root: upper case, which
// no key has (ValidKey), so no key can name one.
const journalPrefix = "JOURNAL-"

const journalMagic = "VJR1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// openJournal replays the journal files in root (replayJournals); the
// next file is created by the first write that needs it, so that a store
// that never journals has none.
func openJournal(d *Dir) (*journal, error) {
	gen, err := replayJournals(d)
	if err != nil {
		return nil, err
	}
	j := &journal{root: d.root, gen: gen, keys: map[string]int{}}
	j.cond = sync.NewCond(&j.mu)
	return j, nil
}

// createJournal creates the journal file of generation gen, or the next
// free one, and syncs the root, so that its records survive with it.
func createJournal(root string, gen uint64) (*os.File, uint64, error) {
	for {
		f, err := os.OpenFile(filepath.Join(root, fmt.Sprintf("%s%016x", journalPrefix, gen)), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if errors.Is(err, fs.ErrExist) {
			gen++ // a Dir opened after this one on the same root (tests)
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("store: journal: %w", err)
		}
		if err := fsyncDir(root); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, 0, err
		}
		return f, gen, nil
	}
}

// journalRecord is one write's objects and empty index entries.
type journalRecord struct {
	buf  []byte   // the encoded record, its header first
	keys []string // its objects' and index entries' keys
}

// newRecord encodes objs (their bodies read into the record) and the
// empty objects index, and returns objs with bodies reading the record's
// copies. Objects other than in-memory ones (bytes.Reader,
// strings.Reader), or larger
// than maxJournaled in all, are not journaled: it returns a nil record
// and objs as they are.
func newRecord(objs []Object, index []string) (*journalRecord, []Object, error) {
	size := 0
	for _, o := range objs {
		switch br := o.Body.(type) {
		case *bytes.Reader:
			size += br.Len() + len(o.Key) + 20
		case *strings.Reader:
			size += br.Len() + len(o.Key) + 20
		default:
			return nil, objs, nil
		}
	}
	if size > maxJournaled {
		return nil, objs, nil
	}
	for _, k := range index {
		size += len(k) + 10
	}
	r := &journalRecord{buf: make([]byte, 20, 20+size+10)}
	r.buf = binary.AppendUvarint(r.buf, uint64(len(objs)))
	read := slices.Clone(objs)
	for i, o := range objs {
		br := o.Body.(interface {
			io.Reader
			Len() int
		})
		r.buf = binary.AppendUvarint(r.buf, uint64(len(o.Key)))
		r.buf = append(r.buf, o.Key...)
		r.buf = binary.AppendUvarint(r.buf, uint64(br.Len()))
		from := len(r.buf)
		r.buf = slices.Grow(r.buf, br.Len())[:from+br.Len()]
		if _, err := io.ReadFull(br, r.buf[from:]); err != nil {
			return nil, nil, fmt.Errorf("store: writing %s: %w", o.Key, err)
		}
		read[i].Body = bytes.NewReader(r.buf[from:len(r.buf):len(r.buf)])
		r.keys = append(r.keys, o.Key)
	}
	r.buf = binary.AppendUvarint(r.buf, uint64(len(index)))
	for _, k := range index {
		r.buf = binary.AppendUvarint(r.buf, uint64(len(k)))
		r.buf = append(r.buf, k...)
		r.keys = append(r.keys, k)
	}
	return r, read, nil
}

// seal writes the record's header for generation gen: magic, generation,
// payload length, CRC-32C of the generation and payload.
func (r *journalRecord) seal(gen uint64) {
	copy(r.buf, journalMagic)
	binary.LittleEndian.PutUint64(r.buf[4:], gen)
	binary.LittleEndian.PutUint32(r.buf[12:], uint32(len(r.buf)-20))
	crc := crc32.Update(crc32.Checksum(r.buf[4:12], castagnoli), castagnoli, r.buf[20:])
	binary.LittleEndian.PutUint32(r.buf[16:], crc)
}

// commit appends r, whose objects are in place at paths, and returns
// once a sync of the journal that covers it has ended. A journal that
// failed is not used (errJournalOff: the caller syncs the files itself).
func (j *journal) commit(d *Dir, r *journalRecord, paths []string) error {
	j.mu.Lock()
	if j.failed != nil {
		j.mu.Unlock()
		return errJournalOff
	}
	if j.f == nil {
		f, gen, err := createJournal(j.root, j.gen+1)
		if err != nil {
			j.mu.Unlock()
			return err
		}
		j.f, j.gen, j.size = f, gen, 0
	}
	r.seal(j.gen)
	if _, err := j.f.Write(r.buf); err != nil {
		// A short write (a full disk) is cut off again; the records
		// before it stay whole.
		if terr := j.f.Truncate(j.size); terr != nil {
			j.failed = terr
		}
		j.mu.Unlock()
		return fmt.Errorf("store: journal: %w", err)
	}
	j.size += int64(len(r.buf))
	for _, k := range r.keys {
		j.keys[k]++
	}
	j.fkeys = append(j.fkeys, r.keys...)
	j.paths = append(j.paths, paths...)
	j.appended++
	want := j.appended
	err := j.waitSynced(want)
	if err == nil && j.size >= journalLimit && !j.checkpointing {
		j.checkpointing = true
		go func() {
			d.checkpoint()
			j.mu.Lock()
			j.checkpointing = false
			j.mu.Unlock()
		}()
	}
	j.mu.Unlock()
	return err
}

// errJournalOff is commit's answer once the journal has failed.
var errJournalOff = errors.New("store: the journal is off")

// waitSynced returns, with j.mu held, once a sync of the journal that
// began after record want was appended has ended, starting one when none
// runs (writers arriving during a sync share the next one).
func (j *journal) waitSynced(want uint64) error {
	for j.synced < want {
		if j.failed != nil {
			return j.failed
		}
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.syncing = true
		f, n := j.f, j.appended
		j.mu.Unlock()
		err := f.Sync()
		j.mu.Lock()
		j.syncing = false
		if err != nil {
			j.failed = fmt.Errorf("store: syncing the journal: %w", err)
		} else {
			j.synced = n
		}
		j.cond.Broadcast()
	}
	return nil
}

// journaled reports whether key has a record not yet checkpointed.
func (j *journal) journaled(key string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.keys[key] > 0
}

// settle checkpoints until key has no record left in the journal, before
// a write that replaces it.
func (d *Dir) settle(key string) error {
	j := d.journal
	if j == nil {
		return nil
	}
	for j.journaled(key) {
		if err := d.checkpoint(); err != nil {
			return err
		}
	}
	return nil
}

// checkpoint moves the appends to a new journal file (created by the
// next write) and makes what the old one's records wrote durable on its own (each file, then each
// folder and its entry up to the root), then removes the old file.
func (d *Dir) checkpoint() error {
	j := d.journal
	j.cp.Lock()
	defer j.cp.Unlock()
	j.mu.Lock()
	if j.failed != nil {
		defer j.mu.Unlock()
		return j.failed
	}
	if j.f == nil || j.size == 0 {
		j.mu.Unlock()
		return nil
	}
	// Every record of the old file is synced before the appends move on,
	// so that the next sync (of the new file) covers only new ones; a
	// record appended while this waited is waited for too.
	for j.synced < j.appended {
		if err := j.waitSynced(j.appended); err != nil {
			j.mu.Unlock()
			return err
		}
	}
	old, paths, keys := j.f, j.paths, j.fkeys
	j.f, j.size, j.paths, j.fkeys = nil, 0, nil, nil
	j.mu.Unlock()

	err := d.syncJournaled(paths)
	if err == nil {
		old.Close()
		// Gone already when a Dir opened later on the same root replayed
		// it (tests do that). The removal is made durable before a key
		// of it is written again (a replay must never undo that write).
		if err = os.Remove(old.Name()); err == nil || errors.Is(err, fs.ErrNotExist) {
			var ok bool
			if ok, err = syncFilesystem(j.root); !ok {
				err = fsyncDir(j.root)
			}
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		// The old file is kept for the next start's replay.
		j.failed = fmt.Errorf("store: journal checkpoint: %w", err)
		return j.failed
	}
	for _, k := range keys {
		if j.keys[k]--; j.keys[k] <= 0 {
			delete(j.keys, k)
		}
	}
	return nil
}

// syncJournaled makes a checkpoint's files and folders durable: with one
// syncfs where the system has it (syncFilesystem), else each fsynced.
func (d *Dir) syncJournaled(paths []string) error {
	if ok, err := syncFilesystem(d.root); ok {
		if err == nil {
			// Every folder's entry is durable now, up to the root.
			for _, p := range paths {
				for dir, ok := strings.CutSuffix(p, string(filepath.Separator)); ok && dir != d.root && !d.durable.Contains(dir); dir = filepath.Dir(dir) {
					d.durable.Add(dir, struct{}{})
				}
			}
		}
		return err
	}
	return d.syncPaths(paths)
}

// syncPaths fsyncs the files of paths (four at a time), then the folders
// (paths ending in a separator) and their entries up to the root.
func (d *Dir) syncPaths(paths []string) error {
	var files, dirs []string
	for _, p := range paths {
		if strings.HasSuffix(p, string(filepath.Separator)) {
			if p = strings.TrimSuffix(p, string(filepath.Separator)); !slices.Contains(dirs, p) {
				dirs = append(dirs, p)
			}
		} else {
			files = append(files, p)
		}
	}
	errs := make([]error, len(files)+len(dirs))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, p := range files {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fsyncFile(p)
		})
	}
	wg.Wait()
	for i, dir := range dirs {
		errs[len(files)+i] = d.syncEntry(dir)
	}
	return errors.Join(errs...)
}

// fsyncFile syncs the file at p; an empty one (an index entry) has no
// bytes to sync, its folder's sync is what it needs.
func fsyncFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: syncing %s: %w", p, err)
	}
	return nil
}

// replayJournals makes every object that a journal file in d's root
// holds durable, writing again the ones missing or different on disk,
// removes the files, and returns the highest generation found.
func replayJournals(d *Dir) (uint64, error) {
	ents, err := os.ReadDir(d.root)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	var gens []uint64
	for _, e := range ents {
		if g, ok := strings.CutPrefix(e.Name(), journalPrefix); ok {
			if n, err := strconv.ParseUint(g, 16, 64); err == nil && e.Type().IsRegular() {
				gens = append(gens, n)
			}
		}
	}
	if len(gens) == 0 {
		return 0, nil
	}
	slices.Sort(gens)
	ctx := context.Background()
	var paths []string
	for _, g := range gens {
		name := filepath.Join(d.root, fmt.Sprintf("%s%016x", journalPrefix, g))
		b, err := os.ReadFile(name)
		if err != nil {
			return 0, fmt.Errorf("store: journal: %w", err)
		}
		for _, rec := range journalRecords(b, g) {
			for _, o := range rec {
				p, err := d.path(o.key)
				if err != nil {
					return 0, fmt.Errorf("store: journal %s: %w", name, err)
				}
				if cur, err := os.ReadFile(p); err == nil && bytes.Equal(cur, o.data) {
					paths = append(paths, p, filepath.Dir(p)+string(filepath.Separator))
					continue
				} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return 0, fmt.Errorf("store: journal: %w", err)
				}
				if err := d.Put(ctx, o.key, bytes.NewReader(o.data)); err != nil {
					return 0, fmt.Errorf("store: replaying the journal: %w", err)
				}
			}
		}
	}
	if err := d.syncPaths(paths); err != nil {
		return 0, fmt.Errorf("store: replaying the journal: %w", err)
	}
	for _, g := range gens {
		if err := os.Remove(filepath.Join(d.root, fmt.Sprintf("%s%016x", journalPrefix, g))); err != nil {
			return 0, fmt.Errorf("store: journal: %w", err)
		}
	}
	if err := fsyncDir(d.root); err != nil {
		return 0, err
	}
	return gens[len(gens)-1], nil
}

// journaledObject is one object of a record read back.
type journaledObject struct {
	key  string
	data []byte // nil for an index entry
}

// journalRecords decodes the records of journal file b, of generation
// gen, up to the first that is not whole (a write a crash cut off) or is
// another generation's (blocks of a removed file).
func journalRecords(b []byte, gen uint64) [][]journaledObject {
	var recs [][]journaledObject
	for len(b) >= 20 && string(b[:4]) == journalMagic && binary.LittleEndian.Uint64(b[4:]) == gen {
		n := int(binary.LittleEndian.Uint32(b[12:]))
		if n > len(b)-20 {
			break
		}
		payload := b[20 : 20+n]
		if crc32.Update(crc32.Checksum(b[4:12], castagnoli), castagnoli, payload) != binary.LittleEndian.Uint32(b[16:]) {
			break
		}
		rec, ok := decodeRecord(payload)
		if !ok {
			break
		}
		recs = append(recs, rec)
		b = b[20+n:]
	}
	return recs
}

func decodeRecord(p []byte) ([]journaledObject, bool) {
	next := func() ([]byte, bool) {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(len(p)-n) {
			return nil, false
		}
		v := p[n : n+int(l)]
		p = p[n+int(l):]
		return v, true
	}
	count := func() (int, bool) {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(len(p)) {
			return 0, false
		}
		p = p[n:]
		return int(l), true
	}
	var objs []journaledObject
	nobj, ok := count()
	if !ok {
		return nil, false
	}
	for range nobj {
		k, ok1 := next()
		v, ok2 := next()
		if !ok1 || !ok2 {
			return nil, false
		}
		objs = append(objs, journaledObject{string(k), v})
	}
	nidx, ok := count()
	if !ok {
		return nil, false
	}
	for range nidx {
		k, ok := next()
		if !ok {
			return nil, false
		}
		objs = append(objs, journaledObject{key: string(k), data: []byte{}})
	}
	return objs, len(p) == 0
}
