// Package profiles is the profile service: IDs, the Meta stored beside each
// profile, storing an upload once (its original bytes, the converted
// profile and meta.json) and loading it back, with the caches in front. It
// returns typed errors (ErrNotFound, web/ingest's) that the web layer maps
// to HTTP statuses.
//
// An upload is parsed once: the converted profile is stored beside the
// original, and cold loads after a restart, symbolization jobs and other
// replicas read it (a DWARF-mode perf.data is not unwound again).
package profiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"viewer/web/ingest"
	"viewer/web/store"
)

// Config configures a Service.
type Config struct {
	// Store keeps the profiles; required.
	Store store.Store
	// Limits bound what an upload may hold (web/ingest).
	Limits ingest.Limits
	// ProfileCache bounds how many parsed profiles are kept (default 8).
	ProfileCache int
	// Recheck, when set, is how long a cached profile is served before the
	// store is asked again whether another replica stored a newer
	// symbolized copy of it (several servers share Store).
	Recheck time.Duration
	// Log receives errors nobody else sees; nil discards them.
	Log *slog.Logger
}

// Service stores and loads profiles. It is safe for concurrent use.
type Service struct {
	cfg      Config
	store    store.Store
	log      *slog.Logger
	profiles *lru.Cache[string, *Loaded]
	metas    *lru.Cache[string, *Meta]
	checked  *lru.Cache[string, check] // Recheck: profile ID → last look at its symbolized copy
	flight   singleflight.Group
	recent   recentMemory // this process's uploads, when the store cannot list (recent.go)

	// conversions counts parses of uploaded bytes (ingest.Parse and
	// ParseFile of an original): one per upload.
	conversions atomic.Int64

	// gens counts each profile's Invalidate calls, so that a load begun
	// before one is neither joined nor cached after it.
	mu           sync.Mutex
	gens         map[string]uint64
	onInvalidate []func(id string)
}

// check is what the store said of a profile's symbolized copy, and when.
type check struct {
	at      time.Time
	version string
}

// New returns a Service for cfg.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("profiles: no store")
	}
	if cfg.ProfileCache <= 0 {
		cfg.ProfileCache = 8
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Service{cfg: cfg, store: cfg.Store, log: log, gens: map[string]uint64{}}
	var err error
	if s.profiles, err = lru.New[string, *Loaded](cfg.ProfileCache); err != nil {
		return nil, err
	}
	if s.metas, err = lru.New[string, *Meta](1024); err != nil {
		return nil, err
	}
	if s.checked, err = lru.New[string, check](8192); err != nil {
		return nil, err
	}
	return s, nil
}

// Store is where the profiles are kept.
func (s *Service) Store() store.Store { return s.store }

// Conversions is how many times uploaded bytes were parsed and converted
// (once per distinct upload; zero for profiles stored before this process
// started, whatever is done with them).
func (s *Service) Conversions() int64 { return s.conversions.Load() }

// OnInvalidate registers f to be called on each Invalidate, so that caches
// built from a profile (flame trees, tables) are dropped with it.
func (s *Service) OnInvalidate(f func(id string)) {
	s.mu.Lock()
	s.onInvalidate = append(s.onInvalidate, f)
	s.mu.Unlock()
}

// Invalidate drops everything cached for id, e.g. after a symbolized copy
// was stored, so the next request loads it.
func (s *Service) Invalidate(id string) {
	s.mu.Lock()
	s.gens[id]++
	fs := slices.Clone(s.onInvalidate)
	s.mu.Unlock()
	s.profiles.Remove(id)
	s.metas.Remove(id)
	for _, f := range fs {
		f(id)
	}
}

// Replace takes p, whose encoding (encoded) was just stored as the
// symbolized copy of profile id, as what this server serves of id: it drops
// what was cached (as Invalidate) and caches p, so the next page load here
// uses it without reading and parsing the stored copy, which other replicas
// and a restart still load. p must not change afterwards. Without the
// profile's meta in memory or in the store, the next load reads the copy.
func (s *Service) Replace(ctx context.Context, id string, p *profile.Profile, encoded []byte) {
	meta, ok := s.metas.Peek(id)
	s.Invalidate(id)
	gen := s.generation(id)
	if !ok {
		b, err := store.ReadAll(ctx, s.store, Key(id, KeyMeta), 16<<20)
		if err != nil {
			return
		}
		meta = new(Meta)
		if json.Unmarshal(b, meta) != nil {
			return
		}
	}
	if meta.Warnings == nil {
		m := *meta // the cached one is shared
		meta = &m
		meta.SetWarnings(p) // a meta.json from before warnings were kept
	}
	if s.cfg.Recheck > 0 {
		// What revalidate compares with: this copy is not another
		// replica's newer one.
		if v, err := s.SymbolizedVersion(ctx, id); err == nil {
			s.checked.Add(id, check{at: time.Now(), version: v})
		}
	}
	s.cacheLoaded(id, gen, &Loaded{ID: id, Meta: meta, Profile: p, Symbolized: true, Version: contentVersion(encoded)})
}

func (s *Service) generation(id string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gens[id]
}

// cacheLoaded caches l, read at generation gen, unless id was invalidated
// since: its bytes may be the ones the invalidating write replaced.
func (s *Service) cacheLoaded(id string, gen uint64, l *Loaded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gens[id] != gen {
		return
	}
	s.profiles.Add(id, l)
	s.metas.Add(id, l.Meta)
}

// storedLimits are the limits for re-reading a stored profile: its bytes
// passed the count limits when uploaded, and a limit lowered since must
// not make it unviewable; but its stacks are cut to the depth limit as
// they were, and it is parsed within the memory budget.
func (s *Service) storedLimits() ingest.Limits {
	l := s.cfg.Limits
	return ingest.Limits{MaxStackDepth: l.MaxStackDepth, Memory: l.Memory, Binaries: l.Binaries, NoUnwind: l.NoUnwind}
}

// Ingest parses data, and when it is a profile stores it (once: the same
// bytes give the same ID) and returns its ID and whether this call stored
// it. Bad input is an ingest error (ingest.ErrCorrupt, ErrTooLarge ...);
// nothing is stored on any error.
func (s *Service) Ingest(ctx context.Context, data []byte, name string) (string, error) {
	s.conversions.Add(1)
	p, format, err := ingest.Parse(data, s.cfg.Limits)
	if err != nil {
		return "", err
	}
	return s.stored(ctx, sha256.Sum256(data), p, NewMeta(p, name, format, int64(len(data))), func() io.Reader { return bytes.NewReader(data) })
}

// IngestFileAlong is Ingest for an upload spooled to f, of size bytes whose
// SHA-256 is sum: it is parsed within the ingest memory budget, and stored
// from the file. Once the upload is parsed, it also runs along (when not nil) with the parsed profile and its format on another
// goroutine while the profile is stored, and returns when both are done:
// the caller builds the first view on the second core while the converted
// copy is encoded and written.
func (s *Service) IngestFileAlong(ctx context.Context, f *os.File, size int64, sum [sha256.Size]byte, name string, along func(p *profile.Profile, format string)) (string, error) {
	s.conversions.Add(1)
	p, format, err := ingest.ParseFile(ctx, f, s.cfg.Limits)
	if err != nil {
		return "", err
	}
	if along != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			along(p, format)
		}()
		defer func() { <-done }()
	}
	return s.stored(ctx, sum, p, NewMeta(p, name, format, size), func() io.Reader { return store.NewFileBody(f, size) })
}

// IngestFileMapped is IngestFileAlong for an upload whose parsed profile
// is changed by edit before it is stored (an upload's JavaScript source
// maps): the edited profile is stored as its converted copy, its gzipped
// pprof encoding, as StoreParsed does, since the original bytes alone
// would not give it back. Its ID is that encoding's.
func (s *Service) IngestFileMapped(ctx context.Context, f *os.File, name string, edit func(p *profile.Profile) error) (string, error) {
	s.conversions.Add(1)
	p, format, err := ingest.ParseFile(ctx, f, s.cfg.Limits)
	if err != nil {
		return "", err
	}
	if err := edit(p); err != nil {
		return "", err
	}
	var gz bytes.Buffer
	if err := WriteGzipped(&gz, p); err != nil {
		return "", fmt.Errorf("encoding the profile: %w", err)
	}
	return s.StoreParsed(ctx, p, gz.Bytes(), name, format, nil)
}

// StoreParsed stores a profile that was parsed elsewhere (an OTLP request's
// profile, a merge) from gz, its gzipped pprof encoding, named name. It is
// stored once, as the converted copy (there are no other original bytes to
// keep), and never parsed again here; the same bytes give the same ID.
// index, when not nil, names the empty index objects to create for the
// profile's ID (its service's listing, ServiceEntryKey): they are written
// with it (store.PutAllIndexed), never seen before it, and durable when
// StoreParsed returns.
func (s *Service) StoreParsed(ctx context.Context, p *profile.Profile, gz []byte, name, format string, index func(id string) []string) (string, error) {
	meta := NewMeta(p, name, format, int64(len(gz)))
	sum := sha256.Sum256(gz)
	var keys []string
	if index != nil {
		keys = index(IDOfSum(sum))
	}
	var written []string
	id, err := s.storedWith(ctx, sum, p, meta, func(ctx context.Context, id string) (bool, string, error) {
		written = keys
		return s.putConverted(ctx, id, gz, meta, keys)
	})
	if err != nil || slices.Equal(written, keys) {
		return id, err
	}
	// Another store of the same bytes ran the write: this one's own
	// index entries (another time) are added after it.
	if err := store.PutIndex(ctx, s.store, keys); err != nil {
		return "", fmt.Errorf("indexing profile %s: %w", id, err)
	}
	return id, nil
}

// stored stores a parsed upload whose bytes (of SHA-256 sum) body gives,
// unless stored before, and keeps the profile for its first view.
func (s *Service) stored(ctx context.Context, sum [sha256.Size]byte, p *profile.Profile, meta *Meta, body func() io.Reader) (string, error) {
	return s.storedWith(ctx, sum, p, meta, func(ctx context.Context, id string) (bool, string, error) {
		return s.put(ctx, id, body(), p, meta)
	})
}

// storedWith runs put (which reports whether it stored the profile and
// the converted copy's version) once for concurrent stores of the same
// ID, and keeps the profile for its first view.
func (s *Service) storedWith(ctx context.Context, sum [sha256.Size]byte, p *profile.Profile, meta *Meta, put func(ctx context.Context, id string) (bool, string, error)) (string, error) {
	id := IDOfSum(sum)
	// The shared store write must finish even if this client goes away.
	type result struct {
		created bool
		version string
	}
	v, err, _ := s.flight.Do("put:"+id, func() (any, error) {
		created, version, err := put(context.WithoutCancel(ctx), id)
		return result{created, version}, err
	})
	if err != nil {
		return "", fmt.Errorf("storing profile %s: %w", id, err)
	}
	// Keep the parsed profile for the first view, unless the bytes were
	// stored before (a symbolized copy may exist and must win).
	if r := v.(result); r.created {
		s.profiles.Add(id, &Loaded{ID: id, Meta: meta, Profile: p, Version: r.version})
		s.metas.Add(id, meta)
	}
	return id, nil
}

// put writes the original bytes, meta.json, then the converted profile,
// each unless already stored, and reports whether it wrote the original
// and the converted copy's version. The converted copy is encoded from the
// start, beside the writes of the original and meta.json (encodeAhead),
// and stored after them.
func (s *Service) put(ctx context.Context, id string, data io.Reader, p *profile.Profile, meta *Meta) (created bool, version string, err error) {
	ok, err := store.Exists(ctx, s.store, Key(id, KeyOriginal))
	if err != nil {
		return false, "", err
	}
	hasMeta, err := store.Exists(ctx, s.store, Key(id, KeyMeta))
	if err != nil {
		return false, "", err
	}
	hasConv, err := store.Exists(ctx, s.store, Key(id, KeyConverted))
	if err != nil {
		return false, "", err
	}
	var conv *convertedAhead
	if !hasConv || !ok {
		conv = encodeAhead(p)
		defer conv.stop()
	}
	if !ok {
		if err := s.store.Put(ctx, Key(id, KeyOriginal), data); err != nil {
			return false, "", err
		}
	}
	// meta.json before the converted copy: a copy is only ever read with
	// the meta that names the upload's format.
	if !hasMeta {
		b, err := json.Marshal(meta)
		if err != nil {
			return false, "", err
		}
		if err := s.store.Put(ctx, Key(id, KeyMeta), bytes.NewReader(b)); err != nil {
			return false, "", err
		}
	}
	if conv != nil {
		if version, err = conv.put(ctx, s.store, Key(id, KeyConverted)); err != nil {
			return false, "", err
		}
	}
	return !ok, version, nil
}

// putConverted writes meta.json, then gz as the converted copy, unless
// the copy is stored already, and then the empty objects index; it
// reports whether it wrote the copy.
func (s *Service) putConverted(ctx context.Context, id string, gz []byte, meta *Meta, index []string) (created bool, version string, err error) {
	if ok, err := store.Exists(ctx, s.store, Key(id, KeyConverted)); err != nil || ok {
		if err == nil {
			err = store.PutIndex(ctx, s.store, index)
		}
		return false, "", err
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return false, "", err
	}
	// In that order where the store writes one object after the other;
	// a new profile's folder gets both at once (store.PutAll).
	if err := store.PutAllIndexed(ctx, s.store, []store.Object{
		{Key: Key(id, KeyMeta), Body: bytes.NewReader(b)},
		{Key: Key(id, KeyConverted), Body: bytes.NewReader(gz)},
	}, index); err != nil {
		return false, "", err
	}
	return true, contentVersion(gz), nil
}

// encode is p as gzipped pprof (WriteGzipped), in memory.
func encode(p *profile.Profile) ([]byte, error) {
	var b bytes.Buffer
	if err := WriteGzipped(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// convertedAhead is a converted copy being encoded (encodeAhead) for a
// store write that has not started yet.
type convertedAhead struct {
	buf  *aheadBuffer
	h    hash.Hash
	done chan error
}

// convertedAheadBytes is how much of a converted copy is held while its
// store write has not started, after which the encoder waits for the
// store: about what the 2M-sample profile's encoder makes while its 83 MB
// original is written and synced (0.3–0.4 s). 48 MiB raised the peak heap
// of TestHostileInputs' 1.9M-location upload past its bound (1153, 1187
// MiB in 5 runs, against 1060–1106 on main); 16 MiB: 1008–1095 in 4.
const convertedAheadBytes = 16 << 20

// encodeAhead starts encoding p as gzipped pprof, up to
// convertedAheadBytes ahead of its store write (put); stop ends it.
func encodeAhead(p *profile.Profile) *convertedAhead {
	c := &convertedAhead{buf: newAheadBuffer(convertedAheadBytes), h: sha256.New(), done: make(chan error, 1)}
	go func() {
		err := WriteGzipped(io.MultiWriter(c.buf, c.h), p)
		c.buf.CloseWithError(err)
		c.done <- err
	}()
	return c
}

// put stores the copy as key, reading it as it is encoded, and returns
// its contentVersion.
func (c *convertedAhead) put(ctx context.Context, st store.Store, key string) (string, error) {
	err := st.Put(ctx, key, c.buf)
	c.buf.CloseRead(errors.New("the store stopped reading")) // ends the encoder if Put did not read to the end
	encErr := <-c.done
	c.done = nil
	if err == nil {
		err = encErr
	}
	if err != nil {
		return "", err
	}
	return versionOfSum([sha256.Size]byte(c.h.Sum(nil))), nil
}

// stop ends the encoder, unless put waited for it, and waits for it.
func (c *convertedAhead) stop() {
	if c.done == nil {
		return
	}
	c.buf.CloseRead(errors.New("the copy was not stored"))
	<-c.done
}

// Meta returns a profile's metadata without parsing it when meta.json
// exists. An unknown ID is a *NotFoundError.
func (s *Service) Meta(ctx context.Context, id string) (*Meta, error) {
	if !ValidID(id) {
		return nil, notFound(id)
	}
	s.revalidate(ctx, id) // another replica may have stored a copy
	if m, ok := s.metas.Get(id); ok {
		return m, nil
	}
	b, err := store.ReadAll(ctx, s.store, Key(id, KeyMeta), 16<<20)
	if errors.Is(err, store.ErrNotFound) {
		// Stored before its meta.json (a crash between the two writes):
		// derive it from the profile.
		l, err := s.Profile(ctx, id)
		if err != nil {
			return nil, err
		}
		return l.Meta, nil
	}
	if err != nil {
		return nil, err
	}
	m := new(Meta)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("profile %s: bad meta.json: %w", id, err)
	}
	s.metas.Add(id, m)
	return m, nil
}

// Profile loads and parses a profile, preferring its symbolized copy when
// one is stored, and caches it. Concurrent callers share one load. An
// unknown ID is a *NotFoundError.
func (s *Service) Profile(ctx context.Context, id string) (*Loaded, error) {
	if !ValidID(id) {
		return nil, notFound(id)
	}
	s.revalidate(ctx, id)
	if l, ok := s.profiles.Get(id); ok {
		return l, nil
	}
	// A load that began before the last Invalidate may hold the bytes it
	// replaced: later callers don't join it, and it is not cached.
	gen := s.generation(id)
	v, err, _ := s.flight.Do(fmt.Sprintf("load:%s@%d", id, gen), func() (any, error) {
		return s.load(context.WithoutCancel(ctx), id, gen)
	})
	if err != nil {
		return nil, err
	}
	return v.(*Loaded), nil
}

// Cached returns the profile when it is in memory, without loading it.
func (s *Service) Cached(id string) (*Loaded, bool) { return s.profiles.Peek(id) }

func (s *Service) load(ctx context.Context, id string, gen uint64) (*Loaded, error) {
	p, format, size, symbolized, version, err := s.parseStored(ctx, id)
	if err != nil {
		return nil, err
	}
	var meta *Meta
	if b, err := store.ReadAll(ctx, s.store, Key(id, KeyMeta), 16<<20); err == nil {
		meta = new(Meta)
		if err := json.Unmarshal(b, meta); err != nil {
			meta = nil
		}
	}
	if meta != nil && meta.Warnings == nil {
		meta.SetWarnings(p) // a meta.json from before warnings were kept
	}
	if meta == nil {
		meta = NewMeta(p, "", format, size)
		if b, err := json.Marshal(meta); err == nil && !symbolized {
			if err := s.store.Put(ctx, Key(id, KeyMeta), bytes.NewReader(b)); err != nil {
				s.log.Error("rewriting meta.json", "id", id, "err", err)
			}
		}
	}
	l := &Loaded{ID: id, Meta: meta, Profile: p, Symbolized: symbolized, Version: version}
	s.cacheLoaded(id, gen, l)
	return l, nil
}

// parseStored parses the symbolized copy of a profile when there is one and
// it parses, else the converted one. A damaged symbolized copy is logged
// and skipped rather than making the profile unviewable.
func (s *Service) parseStored(ctx context.Context, id string) (p *profile.Profile, format string, size int64, symbolized bool, version string, err error) {
	data, err := store.ReadAll(ctx, s.store, Key(id, KeySymbolized), 0)
	switch {
	case err == nil:
		p, format, err := ingest.Parse(data, s.storedLimits())
		if errors.Is(err, ingest.ErrBusy) {
			return nil, "", 0, false, "", err // the ingest memory is taken: try again
		}
		if err == nil {
			return p, format, int64(len(data)), true, contentVersion(data), nil
		}
		s.log.Error("ignoring symbolized copy", "id", id, "err", fmt.Errorf("profile %s: stored %s does not parse: %w", id, KeySymbolized, err))
	case !errors.Is(err, store.ErrNotFound):
		return nil, "", 0, false, "", err
	}
	conv, err := s.converted(ctx, id)
	if err != nil {
		return nil, "", 0, false, "", err
	}
	return conv.p, conv.format, conv.size, false, conv.version, nil
}

// convertedProfile is a profile read from its converted copy.
type convertedProfile struct {
	p       *profile.Profile
	format  string // of the original upload, when it had to be converted here
	size    int64
	version string
}

// converted parses the converted copy of a profile. A profile stored before
// converted copies existed (or whose copy is damaged) has its original
// parsed, and the copy written, so that this happens once.
func (s *Service) converted(ctx context.Context, id string) (*convertedProfile, error) {
	data, err := store.ReadAll(ctx, s.store, Key(id, KeyConverted), 0)
	switch {
	case err == nil:
		p, _, err := ingest.Parse(data, s.storedLimits())
		if err == nil {
			return &convertedProfile{p: p, format: "pprof", size: int64(len(data)), version: contentVersion(data)}, nil
		}
		if errors.Is(err, ingest.ErrBusy) {
			return nil, err
		}
		s.log.Error("converting the original again", "id", id, "err", fmt.Errorf("profile %s: stored %s does not parse: %w", id, KeyConverted, err))
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	data, err = store.ReadAll(ctx, s.store, Key(id, KeyOriginal), 0)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	// Stored bytes passed the limits when uploaded; don't apply a limit
	// lowered since. Unwind as the upload was (serve on loopback).
	s.conversions.Add(1)
	p, format, err := ingest.Parse(data, s.storedLimits())
	if errors.Is(err, ingest.ErrBusy) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("profile %s: stored %s does not parse: %w", id, KeyOriginal, err)
	}
	b, err := encode(p)
	if err != nil {
		return nil, err
	}
	if err := s.store.Put(ctx, Key(id, KeyConverted), bytes.NewReader(b)); err != nil {
		s.log.Error("storing the converted profile", "id", id, "err", err)
	}
	return &convertedProfile{p: p, format: format, size: int64(len(data)), version: contentVersion(b)}, nil
}

// Converted is a copy of the profile's converted form of its own, for work
// that changes it (a symbolization job symbolizes its own copy, never one
// that requests are reading): a clone of the cached profile when that is
// the converted one (cloneProfile; an upload's, just stored), else a fresh
// parse of the converted copy. It never parses the original when the copy
// exists.
func (s *Service) Converted(ctx context.Context, id string) (*profile.Profile, error) {
	if !ValidID(id) {
		return nil, notFound(id)
	}
	if l, ok := s.profiles.Peek(id); ok && !l.Symbolized {
		return cloneProfile(l.Profile), nil
	}
	c, err := s.converted(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.p, nil
}

// Download is the profile as gzipped pprof: the symbolized copy when
// stored, else the original when it already is gzipped pprof (its exact
// bytes), else the converted copy.
func (s *Service) Download(ctx context.Context, id string) (io.ReadCloser, error) {
	m, err := s.Meta(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, key := range []string{KeySymbolized, KeyOriginal, KeyConverted} {
		rc, err := s.store.Get(ctx, Key(id, key))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if key == KeyOriginal {
			head := make([]byte, 2)
			n, _ := io.ReadFull(rc, head)
			if m.Format != "pprof" || n != 2 || head[0] != 0x1f || head[1] != 0x8b {
				rc.Close()
				continue
			}
			return readCloser{io.MultiReader(bytes.NewReader(head[:n]), rc), rc}, nil
		}
		return rc, nil
	}
	c, err := s.converted(ctx, id) // stored before converted copies: writes one
	if err != nil {
		return nil, err
	}
	b, err := encode(c.p)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// SymbolizedVersion identifies the stored symbolized copy of a profile:
// its ETag where the store has one, else its size and time; "" when there
// is none.
func (s *Service) SymbolizedVersion(ctx context.Context, id string) (string, error) {
	return SymbolizedVersion(ctx, s.store, id)
}

// SymbolizedVersion is Service.SymbolizedVersion for a store without a
// Service (a replica following another's job).
func SymbolizedVersion(ctx context.Context, st store.Store, id string) (string, error) {
	info, err := st.Stat(ctx, Key(id, KeySymbolized))
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return info.ETag + "/" + strconv.FormatInt(info.Size, 10) + "/" + info.ModTime.UTC().Format(time.RFC3339Nano), nil
}

// revalidate drops what is cached of a profile when another replica stored
// a new symbolized copy since this one loaded it (Config.Recheck). It asks
// the store at most once per Recheck per profile; a store error is left for
// the read that follows to report.
func (s *Service) revalidate(ctx context.Context, id string) {
	if s.cfg.Recheck <= 0 {
		return
	}
	now := time.Now()
	prev, seen := s.checked.Get(id)
	if seen && now.Sub(prev.at) < s.cfg.Recheck {
		return
	}
	v, err := s.SymbolizedVersion(ctx, id)
	if err != nil {
		return
	}
	s.checked.Add(id, check{at: now, version: v})
	switch {
	case seen && prev.version == v:
	case seen:
		s.Invalidate(id)
	case v != "":
		// First look: a cached original is stale once a copy exists.
		if l, ok := s.profiles.Peek(id); !ok || !l.Symbolized {
			s.Invalidate(id)
		}
	}
}
