package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"viewer/web/ingest"
	"viewer/web/store"
)

// IDLen is the length of a profile ID: 20 base32 characters, 100 bits of
// the SHA-256 of the uploaded bytes.
const IDLen = 20

// Store keys under a profile's ID.
const (
	KeyOriginal   = "original"
	KeyMeta       = "meta.json"
	KeySymbolized = "symbolized.pb.gz" // written by symbolization; preferred when present
)

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewID is the ID of a profile with these original bytes: the same bytes
// always get the same ID.
func NewID(data []byte) string { return idOfSum(sha256.Sum256(data)) }

// idOfSum is the ID of bytes whose SHA-256 is sum.
func idOfSum(sum [sha256.Size]byte) string {
	return strings.ToLower(idEncoding.EncodeToString(sum[:]))[:IDLen]
}

// ValidID reports whether id could have come from NewID; only valid IDs are
// ever used to build store keys.
func ValidID(id string) bool {
	if len(id) != IDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Key is the store key of one of a profile's objects.
func Key(id, name string) string { return id + "/" + name }

// Meta is the small description stored next to a profile (meta.json), enough
// to render its page without parsing it.
type Meta struct {
	Name              string        `json:"name,omitempty"`
	Format            string        `json:"format"`
	Size              int64         `json:"size"`
	Uploaded          time.Time     `json:"uploaded"`
	SampleTypes       []SampleType  `json:"sampleTypes"`
	DefaultSampleType string        `json:"defaultSampleType,omitempty"`
	Samples           int           `json:"samples"` // sample records (distinct stacks); samples are counted by ingest.CountIndex
	DurationNanos     int64         `json:"durationNanos,omitempty"`
	Mappings          []MappingMeta `json:"mappings,omitempty"`
}

// SampleType is a profile's sample type with the sum of its values.
type SampleType struct {
	Type  string `json:"type"`
	Unit  string `json:"unit"`
	Total int64  `json:"total"`
}

// MappingMeta is one binary of the profile.
type MappingMeta struct {
	File         string `json:"file"`
	BuildID      string `json:"buildID,omitempty"`
	HasFunctions bool   `json:"hasFunctions"`
}

// maxMetaMappings bounds the mappings listed in meta.json.
const maxMetaMappings = 1000

func newMeta(p *profile.Profile, name, format string, size int64) *Meta {
	m := &Meta{
		Name:              name,
		Format:            format,
		Size:              size,
		Uploaded:          time.Now().UTC().Truncate(time.Second),
		DefaultSampleType: p.DefaultSampleType,
		Samples:           len(p.Sample),
		DurationNanos:     p.DurationNanos,
	}
	for _, st := range p.SampleType {
		m.SampleTypes = append(m.SampleTypes, SampleType{Type: st.Type, Unit: st.Unit})
	}
	for _, s := range p.Sample {
		for i := range min(len(s.Value), len(m.SampleTypes)) {
			m.SampleTypes[i].Total += s.Value[i]
		}
	}
	for _, mp := range p.Mapping {
		if len(m.Mappings) == maxMetaMappings {
			break
		}
		m.Mappings = append(m.Mappings, MappingMeta{File: mp.File, BuildID: mp.BuildID, HasFunctions: mp.HasFunctions})
	}
	return m
}

// profileStub is a profile holding only the meta's sample types, so that
// flame.SampleIndex can resolve si without parsing the stored profile.
func (m *Meta) profileStub() *profile.Profile {
	p := &profile.Profile{DefaultSampleType: m.DefaultSampleType}
	for _, st := range m.SampleTypes {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: st.Type, Unit: st.Unit})
	}
	return p
}

// Loaded is a parsed profile with its metadata.
type Loaded struct {
	ID      string
	Meta    *Meta
	Profile *profile.Profile
	// Symbolized is true when Profile was read from symbolized.pb.gz
	// rather than the original upload.
	Symbolized bool
	// Version is a hash of the stored bytes Profile was parsed from
	// (contentVersion): each rewrite of the symbolized copy changes it.
	Version string
}

// variant names the bytes a cached result came from: which copy, and its
// content hash. Cache keys and ETags include it, so a second symbolization
// pass that rewrites the copy gets new keys and new ETags.
func (l *Loaded) variant() string {
	if l.Symbolized {
		return "symbolized-" + l.Version
	}
	return "original-" + l.Version
}

// contentVersion is the short content hash Loaded.Version holds.
func contentVersion(data []byte) string { return versionOfSum(sha256.Sum256(data)) }

// versionOfSum is the contentVersion of bytes whose SHA-256 is sum.
func versionOfSum(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:8]) }

// ingestError converts an ingest error to the HTTP status it deserves.
func ingestError(err error) error {
	switch {
	case errors.Is(err, ingest.ErrTooLarge):
		return httpError(http.StatusRequestEntityTooLarge, "%v", err)
	case errors.Is(err, ingest.ErrBusy):
		return busy(err)
	case errors.Is(err, ingest.ErrEmpty), errors.Is(err, ingest.ErrCorrupt), errors.Is(err, ingest.ErrUnknownFormat):
		return httpError(http.StatusBadRequest, "%v", err)
	}
	return err
}

// Ingest parses data, and when it is a profile stores it (once: the same
// bytes give the same ID) and returns its ID. Errors from bad input are
// *echo.HTTPError with status 400 or 413; nothing is stored on any error.
func (s *Server) Ingest(ctx context.Context, data []byte, name string) (string, error) {
	p, format, err := ingest.Parse(data, s.limits)
	if err != nil {
		return "", ingestError(err)
	}
	return s.stored(ctx, sha256.Sum256(data), p, newMeta(p, name, format, int64(len(data))), func() io.Reader { return bytes.NewReader(data) })
}

// ingestFile is Ingest for an upload spooled to f, of size bytes whose
// SHA-256 is sum: it is parsed within the ingest memory budget, and
// stored from the file.
func (s *Server) ingestFile(ctx context.Context, f *os.File, size int64, sum [sha256.Size]byte, name string) (string, error) {
	p, format, err := ingest.ParseFile(ctx, f, s.limits)
	if err != nil {
		return "", ingestError(err)
	}
	return s.stored(ctx, sum, p, newMeta(p, name, format, size), func() io.Reader { return io.NewSectionReader(f, 0, size) })
}

// stored stores a parsed upload whose bytes (of SHA-256 sum) body gives,
// unless stored before, and keeps the profile for its first view.
func (s *Server) stored(ctx context.Context, sum [sha256.Size]byte, p *profile.Profile, meta *Meta, body func() io.Reader) (string, error) {
	id := idOfSum(sum)
	// The shared store write must finish even if this client goes away.
	v, err, _ := s.flight.Do("put:"+id, func() (any, error) {
		return s.put(background(ctx), id, body(), meta)
	})
	if err != nil {
		return "", fmt.Errorf("storing profile %s: %w", id, err)
	}
	// Keep the parsed profile for the first view, unless the bytes were
	// stored before (a symbolized copy may exist and must win).
	if created := v.(bool); created {
		s.profiles.Add(id, &Loaded{ID: id, Meta: meta, Profile: p, Version: versionOfSum(sum)})
		s.metas.Add(id, meta)
	}
	if s.cfg.AfterUpload != nil {
		s.cfg.AfterUpload(id)
	}
	return id, nil
}

// put writes the original bytes, then meta.json, unless already stored,
// and reports whether it wrote the original.
func (s *Server) put(ctx context.Context, id string, data io.Reader, meta *Meta) (created bool, err error) {
	ok, err := store.Exists(ctx, s.store, Key(id, KeyOriginal))
	if err != nil {
		return false, err
	}
	if !ok {
		if err := s.store.Put(ctx, Key(id, KeyOriginal), data); err != nil {
			return false, err
		}
	}
	hasMeta, err := store.Exists(ctx, s.store, Key(id, KeyMeta))
	if err != nil || hasMeta {
		return !ok, err
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return false, err
	}
	return !ok, s.store.Put(ctx, Key(id, KeyMeta), bytes.NewReader(b))
}

// Meta returns a profile's metadata without parsing it when meta.json
// exists. Unknown IDs give a 404 *echo.HTTPError.
func (s *Server) Meta(ctx context.Context, id string) (*Meta, error) {
	if !ValidID(id) {
		return nil, notFound(id)
	}
	s.revalidate(ctx, id) // another replica may have stored a copy (replica.go)
	if m, ok := s.metas.Get(id); ok {
		return m, nil
	}
	b, err := store.ReadAll(ctx, s.store, Key(id, KeyMeta), 16<<20)
	if isNotFound(err) {
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

func notFound(id string) error {
	return httpError(http.StatusNotFound, "No profile has the ID %q. Check the link, or upload the profile again.", id)
}

// Profile loads and parses a profile, preferring its symbolized copy when
// one is stored, and caches it. Concurrent callers share one load. Unknown
// IDs give a 404 *echo.HTTPError.
func (s *Server) Profile(ctx context.Context, id string) (*Loaded, error) {
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
		return s.load(background(ctx), id, gen)
	})
	if err != nil {
		return nil, err
	}
	return v.(*Loaded), nil
}

func (s *Server) load(ctx context.Context, id string, gen uint64) (*Loaded, error) {
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
	if meta == nil {
		meta = newMeta(p, "", format, size)
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
// it parses, else the original. A damaged symbolized copy is logged and
// skipped rather than making the profile unviewable.
func (s *Server) parseStored(ctx context.Context, id string) (p *profile.Profile, format string, size int64, symbolized bool, version string, err error) {
	for _, key := range []string{KeySymbolized, KeyOriginal} {
		data, err := store.ReadAll(ctx, s.store, Key(id, key), 0)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, "", 0, false, "", err
		}
		// Stored bytes passed the limits when uploaded; don't apply a
		// limit lowered since. Unwind as the upload was (serve on loopback).
		p, format, err := ingest.Parse(data, s.storedLimits())
		if errors.Is(err, ingest.ErrBusy) {
			return nil, "", 0, false, "", busy(err) // the ingest memory is taken: 503, try again
		}
		if err != nil {
			err = fmt.Errorf("profile %s: stored %s does not parse: %w", id, key, err)
			if key == KeySymbolized {
				s.log.Error("ignoring symbolized copy", "id", id, "err", err)
				continue
			}
			return nil, "", 0, false, "", err
		}
		return p, format, int64(len(data)), key == KeySymbolized, contentVersion(data), nil
	}
	return nil, "", 0, false, "", notFound(id)
}
